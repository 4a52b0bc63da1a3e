"""Every producer's latest entry in a log, from batch headers alone.

Kafka's cleaner asks the partition's producer state for the last entry of each *active*
(unexpired) producer and keeps that batch, even emptied, so the producer's sequence and
epoch survive a restart that rebuilds producer state from the log. When the broker passes
that map (``producers`` of :func:`~millpond.storage.cleaner.clean.plan_cleaning`) it is
used as is. Without it, this module derives it from the log: every producer id seen
counts as active (nothing expires), which keeps at most one empty batch per producer id
longer than Kafka would; never less.

Reads headers only (61 bytes per batch, a window at a time); runs in the cleaning's
thread over the snapshot's segments.
"""

from __future__ import annotations

from collections.abc import Sequence

from millpond.storage.cleaner.batch_filter import LastRecord
from millpond.storage.cleaner.offset_map import Check, CleaningAbortedError, SourceSegment
from millpond.wire.records import BATCH_HEADER_SIZE, LOG_OVERHEAD
from millpond.wire.records.batch import CONTROL_BIT, HEADER, MIN_BATCH_LENGTH

WINDOW = 64 * 1024


def scan_producers(sources: Sequence[SourceSegment], check: Check) -> dict[int, LastRecord]:
    """Producer id -> its last data batch's last offset (kept across later markers) and
    its latest epoch, over ``sources`` in order."""
    out: dict[int, LastRecord] = {}
    for source in sources:
        check()
        pos, end = 0, source.size
        buf, buf_start = b"", 0
        while pos < end:
            off = pos - buf_start
            if off + BATCH_HEADER_SIZE > len(buf):
                buf = source.file.read_at(pos, min(WINDOW, end - pos))
                buf_start, off = pos, 0
                if len(buf) < BATCH_HEADER_SIZE:
                    raise CleaningAbortedError(f"{source.file.path}: short header at {pos}")
            h = HEADER.unpack_from(buf, off)
            if h[1] < MIN_BATCH_LENGTH:
                raise CleaningAbortedError(f"{source.file.path}: bad batch length at {pos}")
            producer_id, epoch = h[9], h[10]
            if producer_id >= 0:
                if h[5] & CONTROL_BIT:
                    previous = out.get(producer_id)
                    data_offset = previous.last_data_offset if previous else None
                    out[producer_id] = LastRecord(data_offset, epoch)
                else:
                    out[producer_id] = LastRecord(h[0] + h[6], epoch)
            pos += h[1] + LOG_OVERHEAD
    return out
