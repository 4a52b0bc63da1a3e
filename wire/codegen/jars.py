"""Kafka's JSON message specs, read in place from Apache Kafka 4.4.0's published jars.

Kafka builds its protocol classes from JSON specs and ships those specs as resources of
its jars on Maven Central: ``kafka-clients`` holds every request, response, header and
data schema (``common/message/``); ``kafka-raft`` the quorum-state file's schema; the
metadata, group-coordinator, transaction-coordinator, share-coordinator and storage jars
the records of their own logs and files. Each jar's specs go to one generated package;
``None`` sorts the clients' and Raft's specs by their ``type`` instead.

The jars are read with :mod:`zipfile`, never unpacked. The generator looks for them in
``--jars DIR``, else in ``$MILLPOND_KAFKA_CACHE/lib``, else in
``~/.cache/millpond/kafka-4.4/lib``: the directory ``compat_tests/kafka/install.sh``
fills from Maven Central for the reference broker, so one install serves both.
"""

from __future__ import annotations

import os
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

KAFKA_VERSION = "4.4.0"
INSTALL = "bash compat_tests/kafka/install.sh"


@dataclass(frozen=True)
class SpecJar:
    """One of Kafka's artifacts that ships specs, where they sit in it, and their package."""

    artifact: str
    prefix: str
    package: str | None

    @property
    def file_name(self) -> str:
        return f"{self.artifact}-{KAFKA_VERSION}.jar"


JARS = (
    SpecJar("kafka-clients", "common/message/", None),
    SpecJar("kafka-raft", "common/message/", None),
    SpecJar("kafka-metadata", "common/metadata/", "metadata"),
    SpecJar("kafka-group-coordinator", "common/message/", "group_coordinator"),
    SpecJar("kafka-transaction-coordinator", "common/message/", "transaction_coordinator"),
    SpecJar("kafka-share-coordinator", "common/message/", "share_coordinator"),
    SpecJar("kafka-storage", "message/", "storage"),
)


@dataclass(frozen=True)
class SpecFile:
    """One spec's text and where it came from."""

    jar: SpecJar
    member: str
    text: str

    @property
    def source(self) -> str:
        return f"{self.jar.file_name}:{self.member}"

    @property
    def file_name(self) -> str:
        return self.member.rsplit("/", 1)[-1]


class JarsMissing(Exception):
    """Some jar the generator reads is not in the jar directory, or is not a jar."""


def default_jar_dir() -> Path:
    """Where ``compat_tests/kafka/install.sh`` puts Kafka's jars."""
    cache = os.environ.get("MILLPOND_KAFKA_CACHE")
    root = Path(cache) if cache else Path.home() / ".cache" / "millpond" / "kafka-4.4"
    return root / "lib"


def read_specs(jar_dir: Path) -> list[SpecFile]:
    """Every spec in the jars, ordered by package and file name (so output is stable)."""
    missing = [jar.file_name for jar in JARS if not (jar_dir / jar.file_name).is_file()]
    if missing:
        raise JarsMissing(
            f"Kafka {KAFKA_VERSION}'s {', '.join(missing)} not in {jar_dir}; run `{INSTALL}` "
            "(it resolves them from Maven Central into "
            "${MILLPOND_KAFKA_CACHE:-~/.cache/millpond/kafka-4.4}/lib), or pass --jars DIR"
        )
    specs: list[SpecFile] = []
    for jar in JARS:
        member = re.compile(re.escape(jar.prefix) + r"[^/]+\.json")
        try:
            with zipfile.ZipFile(jar_dir / jar.file_name) as archive:
                found = [
                    SpecFile(jar, name, archive.read(name).decode("utf-8"))
                    for name in archive.namelist()
                    if member.fullmatch(name)
                ]
        except zipfile.BadZipFile as e:
            raise JarsMissing(
                f"{jar_dir / jar.file_name} is not a readable jar ({e}); delete it and run "
                f"`{INSTALL}`"
            ) from e
        if not found:
            raise ValueError(f"no specs under {jar.prefix} in {jar_dir / jar.file_name}")
        specs.extend(found)
    names: dict[str, str] = {}
    for spec in specs:
        if spec.file_name in names:
            raise ValueError(f"{spec.file_name} is in {names[spec.file_name]} and {spec.source}")
        names[spec.file_name] = spec.source
    return sorted(specs, key=lambda s: (s.jar.package or "", s.file_name))
