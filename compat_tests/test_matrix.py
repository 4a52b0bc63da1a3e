"""The matrix's API coverage section, from request traces as ``millpond serve --trace``
writes them."""

from __future__ import annotations

import json
from pathlib import Path

from compat_tests.matrix import DIFFERENTIAL_CLIENT, HARNESS_CLIENT, api_coverage


def test_api_coverage_counts_clients_and_differential_sequences_apart(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    sent = [
        ("rdkafka", 3, 12),
        ("rdkafka", 3, 12),
        ("java", 3, 9),
        ("java", 3, 10),
        ("java", 3, 11),
        (HARNESS_CLIENT, 3, 1),  # the harness's own requests count for nobody
        (DIFFERENTIAL_CLIENT, 3, 0),
        (DIFFERENTIAL_CLIENT, 3, 4),
        (None, 18, 3),  # a client without a client id is still a client
    ]
    trace.write_text(
        "".join(json.dumps({"client": c, "key": k, "version": v}) + "\n" for c, k, v in sent)
    )
    lines = api_coverage([trace, tmp_path / "never-written.jsonl"])
    rows = {line.split(" | ")[0].lstrip("| "): line for line in lines if line.startswith("| ")}
    assert rows["Metadata"].startswith("| Metadata | 3 | 0-13 |")  # Kafka 4.4's range
    assert rows["Metadata"].endswith("| 9-12 | 0, 4 |")
    assert rows["ApiVersions"].endswith("| 3 | - |")
    assert rows["Produce"].endswith("| - | - |")
