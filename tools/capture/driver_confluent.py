"""confluent-kafka (librdkafka) driver for tools/capture.

Runs the producer (idempotent, every codec), a transactional producer, group consumers (classic
and KIP-848) and the AdminClient against the bootstrap given on the command line, so the
recording proxy sees what librdkafka sends. Each step is bounded and a failing step is only
reported: the bytes on the wire are the product, not the outcome.

    python -m tools.capture.driver_confluent 127.0.0.1:PORT
"""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import (
    Consumer,
    ConsumerGroupTopicPartitions,
    ElectionType,
    Producer,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

CODECS = "confluent-codecs"
TXN = "confluent-txn"
ADMIN = "confluent-admin"
GROUP = "confluent-group"
TIMEOUT = 20.0
# librdkafka sends a batch uncompressed when compressing would not shrink it, so values repeat a
# phrase: still small, but every codec wins on them.
FILLER = " millpond golden bytes" * 6


def step(name: str, body: Callable[[], object]) -> None:
    """Run one step, report it, never raise."""
    t0 = time.monotonic()
    try:
        body()
        print(f"ok   {name:28s} {(time.monotonic() - t0) * 1000:6.0f} ms", flush=True)
    except Exception as e:  # noqa: BLE001 - any failure is reported, the run goes on
        print(f"fail {name:28s} {e!r}", flush=True)


# The stubs type AclBindingFilter's fields as str, but None is how librdkafka spells "any".
any_filter: Any = AclBindingFilter


def wait_all(futures: dict[Any, Any]) -> None:
    for f in futures.values():
        f.result(timeout=TIMEOUT)


class Driver:
    """All steps, sharing one bootstrap and one AdminClient."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.admin = AdminClient(self.conf())

    def conf(self, **extra: Any) -> dict[str, Any]:
        return {"bootstrap.servers": self.bootstrap, "client.id": "millpond-capture-rdkafka"} | {
            k.replace("_", "."): v for k, v in extra.items()
        }

    def produce(self, producer: Producer, topic: str, values: list[str]) -> None:
        for i, v in enumerate(values):
            producer.produce(topic, value=v.encode(), key=f"k{i}".encode(), partition=0)
        if producer.flush(TIMEOUT) != 0:
            raise TimeoutError("flush left messages")

    def produce_codec(self, codec: str) -> None:
        conf = self.conf(enable_idempotence=True, compression_type=codec, linger_ms=20)
        self.produce(Producer(conf), CODECS, [f"{codec}-v{i}{FILLER}" for i in range(3)])

    def consume(self, consumer: Consumer, want: int, seconds: float) -> list[Any]:
        got: list[Any] = []
        deadline = time.monotonic() + seconds
        while len(got) < want and time.monotonic() < deadline:
            m = consumer.poll(0.2)
            if m is not None and m.error() is None:
                got.append(m)
        return got

    def run(self) -> None:
        a = self.admin
        step(
            "create_topics",
            lambda: wait_all(
                a.create_topics(
                    [
                        NewTopic(CODECS, 1, 1),
                        NewTopic(TXN, 1, 1),
                        NewTopic(ADMIN, 2, 1, config={"retention.ms": "3600000"}),
                    ],
                    operation_timeout=TIMEOUT,
                )
            ),
        )
        step("list_topics", lambda: a.list_topics(timeout=TIMEOUT))
        step("describe_cluster", lambda: a.describe_cluster().result(timeout=TIMEOUT))
        step("describe_topics", lambda: wait_all(a.describe_topics(TopicCollection([CODECS]))))
        for codec in ["none", "gzip", "snappy", "lz4", "zstd"]:
            step(f"produce {codec}", functools.partial(self.produce_codec, codec))
        step(
            "produce acks=1 plain",
            lambda: self.produce(Producer(self.conf(acks=1)), CODECS, ["acks1"]),
        )
        step("transactions", self.transactions)
        step("classic group", lambda: self.group(GROUP, "classic"))
        step("consumer-protocol group", lambda: self.group("confluent-group-848", "consumer"))
        step("assign + offsets_for_times", self.assigned)
        self.admin_ops()

    def transactions(self) -> None:
        p = Producer(self.conf(transactional_id="confluent-txn-1", compression_type="snappy"))
        c = Consumer(
            self.conf(
                group_id="confluent-txn-group",
                auto_offset_reset="earliest",
                enable_auto_commit=False,
            )
        )
        try:
            p.init_transactions(TIMEOUT)
            c.subscribe([CODECS])
            msgs = self.consume(c, 3, TIMEOUT)
            p.begin_transaction()
            self.produce(p, TXN, [f"committed-{i}{FILLER}" for i in range(3)])
            if msgs:
                last = msgs[-1]
                offsets = [TopicPartition(last.topic(), last.partition(), last.offset() + 1)]
                p.send_offsets_to_transaction(offsets, c.consumer_group_metadata(), TIMEOUT)
            p.commit_transaction(TIMEOUT)
            p.begin_transaction()
            self.produce(p, TXN, ["aborted"])
            p.abort_transaction(TIMEOUT)
        finally:
            c.close()

    def group(self, group: str, protocol: str) -> None:
        conf = self.conf(group_id=group, enable_auto_commit=False, group_protocol=protocol)
        if protocol == "classic":
            conf |= {
                "auto.offset.reset": "earliest",
                "session.timeout.ms": 10000,
                "heartbeat.interval.ms": 1000,
            }
        else:
            conf["auto.offset.reset"] = "earliest"
        c = Consumer(conf)
        try:
            c.subscribe([CODECS])
            self.consume(c, 16, TIMEOUT)
            c.commit(asynchronous=False)
            c.committed([TopicPartition(CODECS, 0)], timeout=TIMEOUT)
            deadline = time.monotonic() + 3  # let heartbeats go out
            while time.monotonic() < deadline:
                c.poll(0.3)
        finally:
            c.close()

    def assigned(self) -> None:
        c = Consumer(self.conf(group_id="confluent-assign", enable_auto_commit=False))
        try:
            tp = TopicPartition(CODECS, 0, int(time.time() * 1000) - 60_000)
            c.offsets_for_times([tp], timeout=TIMEOUT)
            c.get_watermark_offsets(TopicPartition(CODECS, 0), timeout=TIMEOUT)
            c.assign([TopicPartition(CODECS, 0, 2)])
            self.consume(c, 3, 10)
        finally:
            c.close()

    def admin_ops(self) -> None:
        a = self.admin
        topic = ConfigResource(ResourceType.TOPIC, ADMIN)
        step(
            "describe_configs",
            lambda: wait_all(a.describe_configs([topic, ConfigResource(ResourceType.BROKER, "1")])),
        )
        step(
            "alter_configs",
            lambda: wait_all(
                a.alter_configs(
                    [
                        ConfigResource(
                            ResourceType.TOPIC, ADMIN, set_config={"retention.ms": "7200000"}
                        )
                    ]
                )
            ),
        )
        step(
            "incremental_alter_configs",
            lambda: wait_all(
                a.incremental_alter_configs(
                    [
                        ConfigResource(
                            ResourceType.TOPIC,
                            ADMIN,
                            incremental_configs=[
                                ConfigEntry(
                                    "max.message.bytes",
                                    "2097152",
                                    incremental_operation=AlterConfigOpType.SET,
                                )
                            ],
                        )
                    ]
                )
            ),
        )
        step("create_partitions", lambda: wait_all(a.create_partitions([NewPartitions(ADMIN, 3)])))
        step(
            "produce admin",
            lambda: self.produce(
                Producer(self.conf(compression_type="gzip")), ADMIN, [f"v{i}" for i in range(5)]
            ),
        )
        spec: Any = OffsetSpec  # its factory methods carry no annotations
        step(
            "list_offsets",
            lambda: wait_all(
                a.list_offsets(
                    {
                        TopicPartition(ADMIN, 0): spec.latest(),
                        TopicPartition(ADMIN, 1): spec.earliest(),
                        TopicPartition(CODECS, 0): spec.max_timestamp(),
                    }
                )
            ),
        )
        step("delete_records", lambda: wait_all(a.delete_records([TopicPartition(ADMIN, 0, 2)])))
        step(
            "elect_leaders",
            lambda: a.elect_leaders(ElectionType.PREFERRED, [TopicPartition(ADMIN, 0)]).result(
                timeout=TIMEOUT
            ),
        )
        step("list_consumer_groups", lambda: a.list_consumer_groups().result(timeout=TIMEOUT))
        step("describe_consumer_groups", lambda: wait_all(a.describe_consumer_groups([GROUP])))
        step(
            "list_consumer_group_offsets",
            lambda: wait_all(a.list_consumer_group_offsets([ConsumerGroupTopicPartitions(GROUP)])),
        )
        step(
            "alter_consumer_group_offsets",
            lambda: wait_all(
                a.alter_consumer_group_offsets(
                    [ConsumerGroupTopicPartitions(GROUP, [TopicPartition(CODECS, 0, 1)])]
                )
            ),
        )
        step("delete_consumer_groups", lambda: wait_all(a.delete_consumer_groups([GROUP])))
        step(
            "alter_user_scram_credentials",
            lambda: wait_all(
                a.alter_user_scram_credentials(
                    [
                        UserScramCredentialUpsertion(
                            "bob",
                            ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096),
                            b"bob-secret",
                        )
                    ]
                )
            ),
        )
        step(
            "describe_user_scram_credentials",
            lambda: wait_all({"all": a.describe_user_scram_credentials()}),
        )
        acl = AclBinding(
            ResourceType.TOPIC,
            ADMIN,
            ResourcePatternType.LITERAL,
            "User:bob",
            "*",
            AclOperation.READ,
            AclPermissionType.ALLOW,
        )
        step("create_acls", lambda: wait_all(a.create_acls([acl])))
        step(
            "describe_acls",
            lambda: a.describe_acls(
                any_filter(
                    ResourceType.ANY,
                    None,
                    ResourcePatternType.ANY,
                    None,
                    None,
                    AclOperation.ANY,
                    AclPermissionType.ANY,
                )
            ).result(timeout=TIMEOUT),
        )
        step(
            "delete_acls",
            lambda: wait_all(
                a.delete_acls(
                    [
                        any_filter(
                            ResourceType.TOPIC,
                            ADMIN,
                            ResourcePatternType.LITERAL,
                            None,
                            None,
                            AclOperation.ANY,
                            AclPermissionType.ANY,
                        )
                    ]
                )
            ),
        )
        step("delete_topics", lambda: wait_all(a.delete_topics([ADMIN], operation_timeout=TIMEOUT)))


def main() -> None:
    Driver(sys.argv[1]).run()
    print("confluent-kafka driver done", flush=True)


if __name__ == "__main__":
    main()
