"""Every ``millpond`` command, run as the real executable against both session brokers: the
reference Apache Kafka 4.4 and ``millpond serve`` (tests/cli/scenarios.py has the checks).
The CLI speaks only the Kafka protocol, so it must serve Kafka's own broker as well; and
``dump-log`` must print the segments of both exactly as Kafka's kafka-dump-log does."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from compat_tests.harness import millpond_server
from compat_tests.kafka.reference import (
    RunningBroker,
    copy_when_still,
    dump_log_segments,
    free_port,
)
from tests.cli import scenarios


def test_topic_commands(broker_bootstrap: str) -> None:
    scenarios.check_topic_commands(broker_bootstrap)


def test_produce(broker_bootstrap: str, tmp_path: Path) -> None:
    scenarios.check_produce(broker_bootstrap, tmp_path)


def test_produce_creates_a_missing_topic(broker_bootstrap: str) -> None:
    scenarios.check_produce_creates_a_missing_topic(broker_bootstrap)


def test_produce_to_a_missing_topic_without_auto_create(strict_broker_bootstrap: str) -> None:
    scenarios.check_produce_to_a_missing_topic_without_auto_create(strict_broker_bootstrap)


def test_consume(broker_bootstrap: str) -> None:
    scenarios.check_consume(broker_bootstrap)


def test_group_commands(broker_bootstrap: str) -> None:
    scenarios.check_group_commands(broker_bootstrap)


def test_cluster_info_and_configs(broker_bootstrap: str) -> None:
    scenarios.check_cluster_and_configs(broker_bootstrap)


def test_errors_are_messages_with_hints(broker_bootstrap: str) -> None:
    scenarios.check_errors(broker_bootstrap, f"127.0.0.1:{free_port()}")


@pytest.fixture(scope="module")
def millpond_data(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A ``millpond serve`` of this module's own, for its data directory."""
    work = tmp_path_factory.mktemp("cli-millpond")
    with millpond_server(work) as bootstrap:
        yield bootstrap, work / "data"


def _same_as_kafkas_tool(*partition_dirs: Path, option: str = "--print-data-log") -> None:
    """Both tools, each run once on the first segments of ``partition_dirs``, print the
    same (Kafka's tool starts a JVM per run)."""
    segments = [str(d / "00000000000000000000.log") for d in partition_dirs]
    ours = scenarios.run("dump-log", "--files", *segments, option).stdout
    assert ours == dump_log_segments(segments, option)


def test_dump_log_of_millpond_data_reads_as_kafkas_tool_does(
    millpond_data: tuple[str, Path],
) -> None:
    bootstrap, data = millpond_data
    topic = scenarios.produce_for_dump(bootstrap)
    scenarios.check_dump_log(data / f"{topic}-0")
    _same_as_kafkas_tool(data / f"{topic}-0")


def test_dump_log_of_kafka_data_reads_as_kafkas_tool_does(reference_kafka: RunningBroker) -> None:
    topic = scenarios.produce_for_dump(reference_kafka.bootstrap)
    scenarios.check_dump_log(reference_kafka.partition_dir(topic, 0))
    _same_as_kafkas_tool(reference_kafka.partition_dir(topic, 0))


def test_bench(broker_bootstrap: str) -> None:
    scenarios.check_bench(broker_bootstrap)


def _internal_topics_read_as_kafkas_tool_does(data: Path, copies: Path) -> None:
    """Both decoders on copies of the internal topics' first segments (the brokers keep
    appending to them), copied under their own names as Kafka's tool needs."""
    offsets = []
    for directory in [*sorted(data.glob("__consumer_offsets-*")), data / "__cluster_metadata-0"]:
        copy = copies / directory.name
        copy.mkdir(parents=True)
        copy_when_still(directory / "00000000000000000000.log", copy)
        offsets.append(copy)
    metadata = offsets.pop()
    for option in ("--print-data-log", "--offsets-decoder"):
        _same_as_kafkas_tool(*offsets, option=option)
    for option in ("--print-data-log", "--cluster-metadata-decoder"):
        _same_as_kafkas_tool(metadata, option=option)


def test_internal_topics_of_millpond_read_as_kafkas_tool_does(
    millpond_data: tuple[str, Path], tmp_path: Path
) -> None:
    bootstrap, data = millpond_data
    topic, group, partition = scenarios.check_consume_as_a_group_member(bootstrap)
    scenarios.check_offsets_decoder(data, topic, group, partition)
    scenarios.check_cluster_metadata_decoder(data, topic)
    _internal_topics_read_as_kafkas_tool_does(data, tmp_path)


def test_internal_topics_of_kafka_read_as_kafkas_tool_does(
    reference_kafka: RunningBroker, tmp_path: Path
) -> None:
    topic, group, partition = scenarios.check_consume_as_a_group_member(reference_kafka.bootstrap)
    data = reference_kafka.log_dir
    scenarios.check_offsets_decoder(data, topic, group, partition)
    scenarios.check_cluster_metadata_decoder(data, topic)
    _internal_topics_read_as_kafkas_tool_does(data, tmp_path)


def test_follow_in_a_group_until_interrupted(broker_bootstrap: str) -> None:
    scenarios.check_follow_in_a_group_until_interrupted(broker_bootstrap)


def test_read_committed_and_transaction_markers_on_kafka(
    reference_kafka: RunningBroker, tmp_path: Path
) -> None:
    """Transactions exist on Kafka only so far (millpond's come with the roadmap's step 7):
    consume --isolation-level read_committed leaves out an aborted transaction, and
    dump-log prints the transactional batches and their markers, and the transaction log
    (--transaction-log-decoder), as Kafka's tool does."""
    topic = scenarios.produce_transactions(reference_kafka.bootstrap)
    scenarios.check_read_committed(reference_kafka.bootstrap, topic)
    copy = tmp_path / f"{topic}-0"
    copy.mkdir()
    copy_when_still(reference_kafka.partition_dir(topic, 0) / "00000000000000000000.log", copy)
    _same_as_kafkas_tool(copy)
    dumped = scenarios.run("dump-log", "--files", str(copy), "--print-data-log").stdout
    assert "endTxnMarker: ABORT" in dumped and "endTxnMarker: COMMIT" in dumped
    for directory in sorted(reference_kafka.log_dir.glob("__transaction_state-*")):
        state = tmp_path / directory.name
        state.mkdir()
        copy_when_still(directory / "00000000000000000000.log", state)
        _same_as_kafkas_tool(state, option="--transaction-log-decoder")
    log = scenarios.run(
        "dump-log", "--files", str(tmp_path), "--transaction-log-decoder"
    ).stdout  # the data directory of copies: the topic's partition and the transaction log
    for status in ("Ongoing", "PrepareCommit", "CompleteCommit", "PrepareAbort", "CompleteAbort"):
        assert f'"transactionStatus":"{status}"' in log, status
