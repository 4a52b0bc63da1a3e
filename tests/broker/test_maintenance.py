"""The broker's periodic work: retention deletes old segments by itself, and the cleaner
compacts compacted topics off the event loop."""

from __future__ import annotations

import time

from millpond.broker.config import build_config
from millpond.broker.node import Broker
from millpond.controller.replication_control import CreatableTopic
from millpond.wire.errors import ErrorCode
from millpond.wire.records import NewRecord, build_batch, iter_batches

from .harness import run_on_loop, running_broker

T0 = 1_700_000_000_000  # 2023: older than any retention.ms below


def _append(broker: Broker, topic: str, records: list[NewRecord]) -> None:
    async def append() -> None:
        image_topic = broker.image.topic(topic)
        assert image_topic is not None
        result = broker.replicas.append(image_topic, 0, memoryview(build_batch(records)))
        assert result.error == ErrorCode.NONE, result

    run_on_loop(broker, append())


def _log_start(broker: Broker, topic: str) -> int:
    async def start() -> int:
        image_topic = broker.image.topic(topic)
        assert image_topic is not None
        log = broker.replicas.log(image_topic, 0)
        assert log is not None
        return log.log_start_offset

    return run_on_loop(broker, start())


def test_retention_runs_on_its_own(tmp_path: object) -> None:
    config, _ = build_config({"log.retention.check.interval.ms": "20"})
    with running_broker(config=config) as broker:
        configs = {"segment.bytes": "2000", "retention.ms": "60000"}
        broker.controller.create_topics([CreatableTopic("old", 1, configs=configs)])
        for i in range(30):
            _append(broker, "old", [NewRecord(b"k", b"x" * 200, timestamp=T0 + i)])
        deadline = time.monotonic() + 30
        # Every record is past retention.ms: passes delete the old segments, then roll the
        # active one away and delete it too (as Kafka, retention never keeps an idle
        # expired segment).
        while _log_start(broker, "old") < 30 and time.monotonic() < deadline:
            time.sleep(0.02)  # polls a real condition, bounded
        assert _log_start(broker, "old") == 30


def test_the_cleaner_keeps_the_latest_value_per_key() -> None:
    config, _ = build_config({"log.cleaner.backoff.ms": "3600000"})  # run it by hand
    with running_broker(config=config) as broker:
        configs = {"cleanup.policy": "compact", "segment.bytes": "1000",
                   "min.cleanable.dirty.ratio": "0.01"}  # fmt: skip
        broker.controller.create_topics([CreatableTopic("c", 1, configs=configs)])
        now = int(time.time() * 1000)
        for i in range(40):
            _append(broker, "c", [NewRecord(b"k%d" % (i % 4), b"v%d" % i, timestamp=now)])
        cleaned = run_on_loop(broker, broker.maintenance.clean_once())
        assert cleaned == 1

        async def survivors() -> list[tuple[int, bytes | None, bytes | None]]:
            topic = broker.image.topic("c")
            assert topic is not None
            log = broker.replicas.log(topic, 0)
            assert log is not None
            out, offset = [], 0
            while offset < log.log_end_offset:  # a read stops at its segment's end
                batches = list(iter_batches(log.read(offset, 1 << 24).records.read()))
                out += [(r.offset, r.key, r.value) for b in batches for r in b.records()]
                offset = batches[-1].last_offset + 1
            return out

        got = run_on_loop(broker, survivors())
        latest = {key: offset for offset, key, _ in got}
        # Every key's latest record survives; older ones went wherever they were cleanable.
        assert [(o, k, v) for o, k, v in got if latest[k] == o] == [
            (i, b"k%d" % (i % 4), b"v%d" % i) for i in range(36, 40)
        ]
        assert len(got) < 40
