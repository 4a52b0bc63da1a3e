"""Log compaction (``cleanup.policy=compact`` and ``compact,delete``), after Kafka's cleaner.

Compaction keeps, for every key, the record with the greatest offset; older records of
the key go, and so do tombstones (null values) once ``delete.retention.ms`` has passed
since the cleaning that first saw them (KIP-534's delete horizon, stored in the batch).
Offsets never change: a cleaned segment holds the surviving batches at their original
offsets, with gaps where records went.

Modules, in the order a cleaning uses them:

- :mod:`.selection`: which log needs cleaning and how far (first dirty offset, first
  uncleanable offset, dirty ratio, ``min/max.compaction.lag.ms``).
- :mod:`.offset_map`: key -> latest offset over the dirty section.
- :mod:`.txn_state`: which batches belong to aborted transactions, which markers may go.
- :mod:`.batch_filter`: what each batch keeps (Kafka's per-batch and per-record rules).
- :mod:`.clean`: the three calls a caller makes (plan, run, apply) and the writing of
  ``.cleaned`` segments.
- :mod:`.swap`: putting cleaned segments in place (``.cleaned`` -> ``.swap`` -> final) and
  settling an interrupted swap when a log is opened.
- :mod:`.checkpoint`: the log directory's ``cleaner-offset-checkpoint``.

Threads (the contract every module follows): the broker's event loop owns each
:class:`~millpond.storage.log.Log`. :func:`.clean.plan_cleaning` runs on the loop and
takes a snapshot (segment objects, their sizes, the offsets that bound the cleaning).
:func:`.clean.run_cleaning` may run in a worker thread: it reads only the snapshot's
segments, which are immutable below the first uncleanable offset, through their open
files (positional reads), never their index objects; it writes only ``.cleaned`` files
no one else touches. :func:`.clean.apply_cleaning` runs on the loop again: short (a
handful of renames per segment group) and checked, refusing a swap whose source
segments are no longer the log's. Anything that removes or shortens segments (retention,
truncation) should :meth:`~.clean.CleaningTask.cancel` an in-flight cleaning first, as
Kafka's log manager aborts cleaning before it truncates; the check in
:func:`.clean.apply_cleaning` catches what slips through.

This package's ``__init__`` imports nothing, so that the log loader can use
:mod:`.swap` without an import cycle through the log.
"""
