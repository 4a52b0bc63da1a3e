"""kafka-python 3.x driver for tools/capture.

Runs the producer (idempotent by default in 3.x, every codec through the `lz4`, `snappy` and
`zstd` extras), a transactional producer, a group consumer and many KafkaAdminClient calls
against the bootstrap given on the command line. Each step is bounded and a failing step is only
reported: the bytes on the wire are the product, not the outcome.

    python -m tools.capture.driver_kafka_python 127.0.0.1:PORT
"""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Callable
from typing import Any

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, OffsetAndMetadata, TopicPartition
from kafka.admin import (
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    AlterConfigOp,
    ConfigResource,
    ConfigResourceType,
    NewPartitions,
    NewTopic,
    OffsetSpec,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

CODECS = "kafka-python-codecs"
TXN = "kafka-python-txn"
ADMIN = "kafka-python-admin"
GROUP = "kafka-python-group"
TIMEOUT_MS = 20_000
# Values repeat a phrase so that every codec actually shrinks them (still small).
FILLER = " millpond golden bytes" * 6


def step(name: str, body: Callable[[], object]) -> None:
    """Run one step, report it, never raise."""
    t0 = time.monotonic()
    try:
        body()
        print(f"ok   {name:28s} {(time.monotonic() - t0) * 1000:6.0f} ms", flush=True)
    except Exception as e:  # noqa: BLE001 - any failure is reported, the run goes on
        print(f"fail {name:28s} {e!r}", flush=True)


class Driver:
    """All steps, sharing one bootstrap and one admin client."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.admin: Any = KafkaAdminClient(**self.conf())

    def conf(self, **extra: Any) -> dict[str, Any]:
        return {"bootstrap_servers": self.bootstrap, "client_id": "millpond-capture-kpy"} | extra

    def produce(self, producer: Any, topic: str, values: list[str]) -> None:
        try:
            for i, v in enumerate(values):
                producer.send(topic, value=v.encode(), key=f"k{i}".encode(), partition=0)
            producer.flush(timeout=TIMEOUT_MS / 1000)
        finally:
            producer.close(timeout=5)

    def produce_codec(self, codec: str | None) -> None:
        producer = KafkaProducer(**self.conf(compression_type=codec, linger_ms=20))
        self.produce(producer, CODECS, [f"{codec}-v{i}{FILLER}" for i in range(3)])

    def consume(self, consumer: Any, want: int, seconds: float) -> int:
        got = 0
        deadline = time.monotonic() + seconds
        while got < want and time.monotonic() < deadline:
            batches = consumer.poll(timeout_ms=200)
            got += sum(len(b) for b in batches.values())
        return got

    def run(self) -> None:
        a = self.admin
        step(
            "create_topics",
            lambda: a.create_topics(
                [
                    NewTopic(CODECS, 1, 1),
                    NewTopic(TXN, 1, 1),
                    NewTopic(ADMIN, 2, 1, topic_configs={"retention.ms": "3600000"}),
                ]
            ),
        )
        step("list_topics", a.list_topics)
        step("describe_topics", lambda: a.describe_topics([CODECS]))
        step("describe_topic_partitions", lambda: a.describe_topic_partitions([CODECS, ADMIN]))
        step("describe_cluster", a.describe_cluster)
        step("describe_features", a.describe_features)
        step("describe_metadata_quorum", a.describe_metadata_quorum)
        for codec in [None, "gzip", "snappy", "lz4", "zstd"]:
            step(f"produce {codec}", functools.partial(self.produce_codec, codec))
        step(
            "produce acks=0",
            lambda: self.produce(KafkaProducer(**self.conf(acks=0)), CODECS, ["acks0"]),
        )
        step("transactions", self.transactions)
        step("classic group", self.group)
        step("assign + offsets_for_times", self.assigned)
        self.admin_ops()

    def transactions(self) -> None:
        p = KafkaProducer(
            **self.conf(transactional_id="kafka-python-txn-1", compression_type="gzip")
        )
        c = KafkaConsumer(
            CODECS,
            **self.conf(
                group_id="kafka-python-txn-group",
                auto_offset_reset="earliest",
                enable_auto_commit=False,
            ),
        )
        try:
            p.init_transactions()
            self.consume(c, 3, TIMEOUT_MS / 1000)
            p.begin_transaction()
            for i in range(3):
                p.send(TXN, value=f"committed-{i}{FILLER}".encode(), partition=0)
            offsets = {TopicPartition(CODECS, 0): OffsetAndMetadata(3, "", -1)}
            p.send_offsets_to_transaction(offsets, c.group_metadata())
            p.commit_transaction()
            p.begin_transaction()
            p.send(TXN, value=b"aborted", partition=0)
            p.flush()
            p.abort_transaction()
        finally:
            c.close()
            p.close(timeout=5)

    def group(self) -> None:
        c = KafkaConsumer(
            CODECS,
            **self.conf(
                group_id=GROUP,
                auto_offset_reset="earliest",
                enable_auto_commit=False,
                heartbeat_interval_ms=1000,
            ),
        )
        try:
            self.consume(c, 16, TIMEOUT_MS / 1000)
            c.commit()
            c.committed(TopicPartition(CODECS, 0))
            deadline = time.monotonic() + 3  # let heartbeats go out
            while time.monotonic() < deadline:
                c.poll(timeout_ms=300)
        finally:
            c.close()

    def assigned(self) -> None:
        c = KafkaConsumer(**self.conf(enable_auto_commit=False, isolation_level="read_committed"))
        try:
            tp = TopicPartition(TXN, 0)
            c.assign([tp])
            c.offsets_for_times({tp: int(time.time() * 1000) - 60_000})
            c.beginning_offsets([tp])
            c.end_offsets([tp])
            c.seek_to_beginning(tp)
            self.consume(c, 3, 10)
        finally:
            c.close()

    def admin_ops(self) -> None:
        a = self.admin
        topic = ConfigResource(ConfigResourceType.TOPIC, ADMIN)
        broker = ConfigResource(ConfigResourceType.BROKER, "1")
        step("describe_configs", lambda: a.describe_configs([topic, broker]))
        step(
            "alter_configs (legacy)",
            lambda: a.alter_configs(
                [ConfigResource(ConfigResourceType.TOPIC, ADMIN, {"retention.ms": "7200000"})],
                incremental=False,
            ),
        )
        step(
            "alter_configs (incremental)",
            lambda: a.alter_configs(
                [
                    ConfigResource(
                        ConfigResourceType.TOPIC,
                        ADMIN,
                        {"cleanup.policy": (AlterConfigOp.APPEND, "compact")},
                    )
                ],
                incremental=True,
            ),
        )
        step("list_config_resources", a.list_config_resources)
        step("create_partitions", lambda: a.create_partitions({ADMIN: NewPartitions(3)}))
        step(
            "produce admin",
            lambda: self.produce(
                KafkaProducer(**self.conf(compression_type="zstd")),
                ADMIN,
                [f"v{i}" for i in range(5)],
            ),
        )
        step(
            "list_partition_offsets",
            lambda: a.list_partition_offsets(
                {
                    TopicPartition(ADMIN, 0): OffsetSpec.LATEST,
                    TopicPartition(ADMIN, 1): OffsetSpec.EARLIEST,
                    TopicPartition(CODECS, 0): OffsetSpec.MAX_TIMESTAMP,
                }
            ),
        )
        step("delete_records", lambda: a.delete_records({TopicPartition(ADMIN, 0): 2}))
        step("describe_log_dirs", a.describe_log_dirs)
        step("describe_producers", lambda: a.describe_producers([TopicPartition(TXN, 0)]))
        step("list_transactions", a.list_transactions)
        step("describe_transactions", lambda: a.describe_transactions(["kafka-python-txn-1"]))
        step("list_partition_reassignments", a.list_partition_reassignments)
        step("list_groups", a.list_groups)
        step("describe_groups", lambda: a.describe_groups([GROUP]))
        step("list_group_offsets", lambda: a.list_group_offsets({GROUP: None}))
        step(
            "alter_group_offsets",
            lambda: a.alter_group_offsets(
                GROUP, {TopicPartition(CODECS, 0): OffsetAndMetadata(1, "", -1)}
            ),
        )
        step(
            "delete_group_offsets",
            lambda: a.delete_group_offsets(GROUP, [TopicPartition(CODECS, 0)]),
        )
        step("delete_groups", lambda: a.delete_groups([GROUP]))
        step(
            "alter_user_scram_credentials",
            lambda: a.alter_user_scram_credentials(
                [UserScramCredentialUpsertion("carol", ScramMechanism.SCRAM_SHA_256, "carol-pw")]
            ),
        )
        step("describe_user_scram_credentials", a.describe_user_scram_credentials)
        pattern = ResourcePattern(ResourceType.TOPIC, ADMIN, ACLResourcePatternType.LITERAL)
        acl = ACL("User:carol", "*", ACLOperation.READ, ACLPermissionType.ALLOW, pattern)
        any_acl = ACLFilter(
            None,
            None,
            ACLOperation.ANY,
            ACLPermissionType.ANY,
            ResourcePatternFilter(ResourceType.TOPIC, ADMIN, ACLResourcePatternType.LITERAL),
        )
        step("create_acls", lambda: a.create_acls([acl]))
        step("describe_acls", lambda: a.describe_acls(any_acl))
        step("delete_acls", lambda: a.delete_acls([any_acl]))
        step("delete_topics", lambda: a.delete_topics([ADMIN]))
        a.close()


def main() -> None:
    Driver(sys.argv[1]).run()
    print("kafka-python driver done", flush=True)


if __name__ == "__main__":
    main()
