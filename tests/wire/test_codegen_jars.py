"""The generator's input: Kafka 4.4.0's jars, fetched by the install step and read in place."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from millpond.wire.codegen.__main__ import main
from millpond.wire.codegen.jars import JARS, KAFKA_VERSION, default_jar_dir, read_specs

REPO = Path(__file__).resolve().parents[2]
_POM = "{http://maven.apache.org/POM/4.0.0}"


def test_the_install_step_fetches_every_jar_the_generator_reads() -> None:
    pom = ET.parse(REPO / "compat_tests" / "kafka" / "pom.xml").getroot()
    assert pom.findtext(f"{_POM}properties/{_POM}kafka.version") == KAFKA_VERSION
    named = {
        d.findtext(f"{_POM}artifactId")
        for d in pom.iterfind(f"{_POM}dependencies/{_POM}dependency")
        if d.findtext(f"{_POM}groupId") == "org.apache.kafka"
        and d.findtext(f"{_POM}version") == "${kafka.version}"
    }
    assert {jar.artifact for jar in JARS} <= named


def test_a_missing_jar_is_named_with_the_step_that_fetches_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for jar in JARS:
        if jar.artifact != "kafka-storage":
            (tmp_path / jar.file_name).symlink_to(default_jar_dir() / jar.file_name)
    assert main(["--check", "--jars", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"kafka-storage-{KAFKA_VERSION}.jar not in {tmp_path}" in err
    assert "bash compat_tests/kafka/install.sh" in err
    assert "kafka-clients" not in err


def test_each_jar_gives_its_own_specs() -> None:
    sources = {s.file_name: s.source for s in read_specs(default_jar_dir())}
    assert sources["ProduceRequest.json"] == (
        f"kafka-clients-{KAFKA_VERSION}.jar:common/message/ProduceRequest.json"
    )
    assert sources["QuorumStateData.json"].startswith(f"kafka-raft-{KAFKA_VERSION}.jar:")
    assert sources["TopicRecord.json"] == (
        f"kafka-metadata-{KAFKA_VERSION}.jar:common/metadata/TopicRecord.json"
    )
    assert sources["ProducerSnapshot.json"] == (
        f"kafka-storage-{KAFKA_VERSION}.jar:message/ProducerSnapshot.json"
    )
    for jar in JARS:
        assert any(s.startswith(jar.file_name + ":") for s in sources.values()), jar


def test_a_truncated_jar_is_named_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for jar in JARS:
        (tmp_path / jar.file_name).symlink_to(default_jar_dir() / jar.file_name)
    broken = tmp_path / JARS[-1].file_name
    broken.unlink()
    broken.write_bytes((default_jar_dir() / broken.name).read_bytes()[:1000])
    assert main(["--check", "--jars", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"{broken} is not a readable jar" in err
    assert "bash compat_tests/kafka/install.sh" in err
