"""``millpond dump-log``: decode segment files in Kafka's format, offline.

Prints the batches of ``.log`` files (and, with ``--print-data-log``, their records) and
the entries of ``.index`` and ``.timeindex`` files in the line format of Kafka's
kafka-dump-log, so output from millpond's data and Kafka's can be compared line for
line; ``--offsets-decoder``, ``--transaction-log-decoder`` and
``--cluster-metadata-decoder`` show the records of ``__consumer_offsets``,
``__transaction_state`` and ``__cluster_metadata`` as JSON, as that tool does. A directory
is a partition directory or a whole data directory: every ``.log`` file under it,
partition by partition. Reads files only; needs no broker.
"""

from __future__ import annotations

import argparse
import codecs
import mmap
import struct
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from millpond.cli import add_command
from millpond.cli.errors import CliError
from millpond.cli.output import emit_json
from millpond.cli.record_json import (
    decode_control,
    decode_coordinator_record,
    decode_metadata_value,
)
from millpond.storage.names import parse_partition_dir_name, parse_segment_file_name
from millpond.wire import DecodeError
from millpond.wire.records import (
    ControlRecordType,
    Record,
    RecordBatch,
    TimestampType,
    iter_batches,
    parse_control_key,
    parse_end_txn_marker,
    read_magic,
)

_OFFSET_ENTRY = struct.Struct(">ii")  # relative offset, position
_TIME_ENTRY = struct.Struct(">qi")  # timestamp, relative offset


def _files(paths: list[str]) -> Iterator[Path]:
    """The files to dump: files as given, directories expanded to their ``.log`` files."""
    for raw in (p for arg in paths for p in arg.split(",") if p):  # Kafka's tool: a,b,c
        path = Path(raw)
        if path.is_file():
            yield path
        elif path.is_dir():
            partitions = (
                [path]
                if any(path.glob("*.log"))
                else sorted(
                    (d for d in path.iterdir() if d.is_dir() and parse_partition_dir_name(d.name)),
                    key=lambda d: parse_partition_dir_name(d.name) or ("", 0),
                )
            )
            for directory in partitions:
                yield from sorted(directory.glob("*.log"))
        else:
            raise CliError(
                f"no such file or directory: {raw}", "pass a segment file or a directory"
            )


def _map(path: Path) -> memoryview:
    with path.open("rb") as f:
        if path.stat().st_size == 0:
            return memoryview(b"")
        return memoryview(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ))


def _java_replace(error: UnicodeError) -> tuple[str, int]:
    """Replace malformed UTF-8 as Java's ``new String(bytes, UTF_8)`` does (what Kafka's
    tool prints): like Python's "replace", one U+FFFD per malformed subpart, except that
    an encoded surrogate (ED A0..BF, and one more continuation byte if there is one) is
    one malformed unit, where Python replaces each of its bytes."""
    assert isinstance(error, UnicodeDecodeError)
    data, start = error.object, error.start
    if data[start] == 0xED and start + 1 < len(data) and 0xA0 <= data[start + 1] <= 0xBF:
        end = start + 2
        if end < len(data) and 0x80 <= data[end] <= 0xBF:
            end += 1
        return "\ufffd", end
    return "\ufffd", error.end


codecs.register_error("millpond-java-replace", _java_replace)


def java_text(value: bytes | None) -> str:
    """Bytes as Kafka's tool prints them: UTF-8, malformed input replaced as Java does."""
    return "" if value is None else value.decode("utf-8", "millpond-java-replace")


#: How records print: not at all, as text, or decoded as records of an internal topic.
Decoder = Literal["none", "text", "offsets", "transactions", "metadata"]


def _batch_data(batch: RecordBatch, position: int, decoder: Decoder) -> dict[str, Any]:
    sequence = batch.base_sequence
    horizon = batch.delete_horizon_ms
    data: dict[str, Any] = {
        "baseOffset": batch.base_offset,
        "lastOffset": batch.last_offset,
        "count": batch.records_count,
        "baseSequence": sequence,
        "lastSequence": batch.last_sequence if sequence >= 0 else -1,
        "producerId": batch.producer_id,
        "producerEpoch": batch.producer_epoch,
        "partitionLeaderEpoch": batch.partition_leader_epoch,
        "isTransactional": batch.is_transactional,
        "isControl": batch.is_control,
        "deleteHorizonMs": horizon,
        "position": position,
        "timestampType": _time_name(batch.timestamp_type),
        "maxTimestamp": batch.max_timestamp,
        "size": batch.size_in_bytes,
        "magic": batch.magic,
        "compresscodec": batch.compression.name.lower(),
        "crc": batch.crc,
        "isvalid": batch.is_valid(),
    }
    if decoder != "none":
        data["records"] = [_record_data(batch, r, decoder) for r in batch.records()]
    return data


def _time_name(kind: TimestampType) -> str:
    return "LogAppendTime" if kind == TimestampType.LOG_APPEND_TIME else "CreateTime"


def _record_data(batch: RecordBatch, record: Record, decoder: Decoder) -> dict[str, Any]:
    key, value = record.key, record.value
    sequence = batch.base_sequence
    data: dict[str, Any] = {
        "offset": record.offset,
        "timestamp": record.timestamp,
        "keySize": -1 if key is None else len(key),
        "valueSize": -1 if value is None else len(value),
        "sequence": sequence + record.offset_delta if sequence >= 0 else -1,
        "headerKeys": [k for k, _ in record.headers],
    }
    if batch.is_control:
        control = parse_control_key(key)
        if control.type in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
            marker = parse_end_txn_marker(value)
            data["endTxnMarker"] = ControlRecordType(control.type).name
            data["coordinatorEpoch"] = marker.coordinator_epoch
        else:
            data["control"] = decode_control(control.type, value) or f"UNKNOWN({control.type})"
    elif decoder in ("offsets", "transactions"):
        data["key"], data["payload"] = decode_coordinator_record(decoder, key, value)
    elif decoder == "metadata" and (decoded := decode_metadata_value(value)) is not None:
        data["payload"] = decoded
    else:  # as Kafka's tool: a null key or value (a tombstone) is left out
        if key is not None:
            data["key"] = java_text(key)
        if value is not None:
            data["payload"] = java_text(value)
    return data


def dump_log(path: Path, decoder: Decoder) -> dict[str, Any]:
    name = parse_segment_file_name(path.name)
    view = _map(path)
    batches: list[dict[str, Any]] = []
    position = 0
    problem = None
    try:
        if len(view) and read_magic(view) != 2:
            raise DecodeError(f"magic {read_magic(view)} (a legacy message set)")
        for batch in iter_batches(view):
            batches.append(_batch_data(batch, position, decoder))
            position += batch.size_in_bytes
    except DecodeError as exc:
        problem = f"cannot decode at position {position}: {exc}"
    return {
        "file": str(path),
        "logStartOffset": name.base_offset if name else 0,
        "batches": batches,
        "error": problem,
    }


def dump_index(path: Path) -> dict[str, Any]:
    """Entries up to the first unused (zero) slot, as Kafka's tool reads an index: its
    files are preallocated, and only the first entry may legitimately be relative 0."""
    name = parse_segment_file_name(path.name)
    base = name.base_offset if name else 0
    view = _map(path)
    entries: list[dict[str, int]] = []
    time_index = path.suffix == ".timeindex"
    layout = _TIME_ENTRY if time_index else _OFFSET_ENTRY
    for i in range(len(view) // layout.size):
        first, second = layout.unpack_from(view, i * layout.size)
        relative = second if time_index else first
        if i > 0 and relative == 0:
            break
        if time_index:
            entries.append({"timestamp": first, "offset": base + relative})
        else:
            entries.append({"offset": base + relative, "position": second})
    return {"file": str(path), "entries": entries}


def _print_log(dump: dict[str, Any], out: Any) -> None:
    out.write(f"Log starting offset: {dump['logStartOffset']}\n")
    for b in dump["batches"]:
        horizon = b["deleteHorizonMs"]
        out.write(
            f"baseOffset: {b['baseOffset']} lastOffset: {b['lastOffset']} count: {b['count']} "
            f"baseSequence: {b['baseSequence']} lastSequence: {b['lastSequence']} "
            f"producerId: {b['producerId']} producerEpoch: {b['producerEpoch']} "
            f"partitionLeaderEpoch: {b['partitionLeaderEpoch']} "
            f"isTransactional: {str(b['isTransactional']).lower()} "
            f"isControl: {str(b['isControl']).lower()} deleteHorizonMs: "
            f"{'OptionalLong.empty' if horizon is None else f'OptionalLong[{horizon}]'} "
            f"position: {b['position']} {b['timestampType']}: {b['maxTimestamp']} "
            f"size: {b['size']} magic: {b['magic']} compresscodec: {b['compresscodec']} "
            f"crc: {b['crc']} isvalid: {str(b['isvalid']).lower()}\n"
        )
        for r in b.get("records", []):
            line = (
                f"| offset: {r['offset']} {b['timestampType']}: {r['timestamp']} "
                f"keySize: {r['keySize']} valueSize: {r['valueSize']} "
                f"sequence: {r['sequence']} headerKeys: [{','.join(r['headerKeys'])}]"
            )
            if "endTxnMarker" in r:
                line += f" endTxnMarker: {r['endTxnMarker']} coordinatorEpoch: "
                line += str(r["coordinatorEpoch"])
            elif "control" in r:
                line += f" {r['control']}"
            else:
                if "key" in r:
                    line += f" key: {r['key']}"
                if "payload" in r:
                    line += f" payload: {r['payload']}"
            out.write(line + "\n")
    if dump["error"]:
        sys.stderr.write(f"{dump['file']}: {dump['error']}\n")


def _dump(args: argparse.Namespace) -> int:
    dumps: list[dict[str, Any]] = []
    out = sys.stdout
    for path in _files(args.files):
        kind = path.suffix
        if kind == ".log":
            decoder: Decoder = "none"
            if args.offsets_decoder:
                decoder = "offsets"
            elif args.transaction_log_decoder:
                decoder = "transactions"
            elif args.cluster_metadata_decoder:
                decoder = "metadata"
            elif args.print_data_log:
                decoder = "text"
            dump = dump_log(path, decoder)
        elif kind in (".index", ".timeindex"):
            dump = dump_index(path)
        else:
            sys.stderr.write(f"Ignoring unknown file {path}\n")
            continue
        dumps.append(dump)
        if args.format == "json":
            continue
        out.write(f"Dumping {path}\n")
        if kind == ".log":
            _print_log(dump, out)
        else:
            for e in dump["entries"]:
                out.write(" ".join(f"{k}: {v}" for k, v in e.items()) + "\n")
    if args.format == "json":
        emit_json(dumps)
    return 1 if any(d.get("error") for d in dumps) else 0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = add_command(
        commands,
        "dump-log",
        "decode segment files (.log, .index, .timeindex) or a data directory",
        __doc__,
    )
    parser.add_argument(
        "--files",
        nargs="+",
        required=True,
        metavar="PATH",
        help="segment files, partition directories or data directories",
    )
    parser.add_argument(
        "--print-data-log",
        action="store_true",
        help="also print every record (keys, values, header keys)",
    )
    parser.add_argument(
        "--format",
        choices=["text", "json"],
        default="text",
        help="kafka-dump-log's lines (default), or JSON",
    )
    parser.add_argument(
        "--offsets-decoder",
        action="store_true",
        help="decode __consumer_offsets records (offset commits, group metadata) as JSON",
    )
    parser.add_argument(
        "--transaction-log-decoder",
        action="store_true",
        help="decode __transaction_state records (transactions and their states) as JSON",
    )
    parser.add_argument(
        "--cluster-metadata-decoder",
        action="store_true",
        help="decode __cluster_metadata records (topics, partitions, brokers...) as JSON",
    )
    parser.set_defaults(run=_dump)
