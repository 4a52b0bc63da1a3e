"""Unit tests of the differential comparer and normalizer (no broker needed): equal runs pass,
and a deliberate mismatch in a normalized field fails with a side-by-side report."""

from __future__ import annotations

from typing import Any

import pytest

from compat_tests.differential.compare import MISSING, assert_same, diff, side_by_side
from compat_tests.differential.normalize import normalize
from compat_tests.differential.runner import Step
from millpond.wire.records.builder import NewRecord, build_batch


def _metadata(topic_id: str, error_code: int, port: int, cluster: str) -> dict[str, Any]:
    return {
        "throttle_time_ms": 7,
        "brokers": [{"node_id": 1, "host": "127.0.0.1", "port": port, "rack": None}],
        "cluster_id": cluster,
        "controller_id": 1,
        "topics": [
            {
                "error_code": error_code,
                "name": "t",
                "topic_id": topic_id,
                "partitions": [{"partition_index": 0, "leader_id": 1, "leader_epoch": 0}],
            }
        ],
    }


def _run(topic_ids: list[str], error_code: int = 0, port: int = 9092) -> list[Any]:
    steps = [
        Step("metadata", "Metadata", 12, _metadata(t, error_code, port, f"cluster-{port}"))
        for t in topic_ids
    ]
    return normalize(steps)


def test_normalized_runs_compare_equal() -> None:
    kafka = _run(["idA", "idB", "idA"], port=9092)
    millpond = _run(["xx1", "yy2", "xx1"], port=19092)
    assert diff(kafka, millpond) == []
    assert_same(kafka, millpond, "equal")


def test_a_deliberate_mismatch_fails_with_a_side_by_side_report() -> None:
    kafka = _run(["idA"], error_code=0)
    millpond = _run(["xx1"], error_code=3)  # a normalized field that differs
    with pytest.raises(AssertionError) as failure:
        assert_same(kafka, millpond, "deliberate")
    report = str(failure.value)
    assert "[0].response.topics[name=t].error_code: 0 != 3" in report
    assert "kafka" in report and "millpond" in report
    lines = report.splitlines()
    marked = [line for line in lines if " | " in line and "error_code" in line]
    assert marked, report
    left, right = marked[0].split(" | ")
    assert '"error_code": 0' in left and '"error_code": 3' in right


def test_equal_ids_must_stay_equal_between_responses() -> None:
    # Kafka reuses one id in two responses, millpond answers two different ids: a mismatch,
    # although each id alone normalizes to a placeholder.
    kafka = _run(["idA", "idA"])
    millpond = _run(["xx1", "yy2"])
    diffs = diff(kafka, millpond)
    assert [d.path for d in diffs] == ["[1].response.topics[name=t].topic_id"]
    assert (diffs[0].left, diffs[0].right) == ("<topic-id-1>", "<topic-id-2>")


def test_lists_keyed_by_name_report_missing_entries_and_order() -> None:
    left = {"configs": [{"name": "a", "value": "1"}, {"name": "b", "value": "2"}]}
    right = {"configs": [{"name": "b", "value": "2"}]}
    assert [(d.path, d.right) for d in diff(left, right)] == [("configs[name=a]", MISSING)]
    swapped = {"configs": list(reversed(left["configs"]))}
    assert [d.path for d in diff(left, swapped)] == ["configs (order of name)"]


def test_types_and_lengths_count() -> None:
    assert [d.path for d in diff({"x": 0}, {"x": False})] == ["x"]
    assert [d.path for d in diff([1, 2], [1])] == [" (length)"]
    assert diff({"x": [1, {"y": None}]}, {"x": [1, {"y": None}]}) == []


def test_records_are_compared_decoded_and_log_append_time_is_normalized() -> None:
    batch = build_batch([NewRecord(key=b"k", value=b"v", timestamp=1000)], producer_id=42)
    one = normalize([Step("fetch", "Fetch", 12, {"records": batch})])
    other = normalize([Step("fetch", "Fetch", 12, {"records": batch + batch[:20]})])
    assert diff(one, other) == []  # an incomplete trailing batch is dropped
    records = one[0]["response"]["records"]
    assert records[0]["producer_id"] == "<producer-id-1>"
    assert records[0]["crc_ok"] is True
    assert records[0]["records"][0]["value"] == b"v"


def test_volatile_fields_and_error_messages() -> None:
    kafka = normalize(
        [Step("x", "ListOffsets", 9, {"timestamp": 5, "error_message": "a"}, ("timestamp",))]
    )
    millpond = normalize(
        [Step("x", "ListOffsets", 9, {"timestamp": 6, "error_message": "b"}, ("timestamp",))]
    )
    assert diff(kafka, millpond) == []
    assert diff(normalize([Step("x", "A", 0, {"error_message": None})]), kafka) != []


def test_side_by_side_marks_lines_only_one_side_has() -> None:
    text = side_by_side({"a": 1}, {"a": 1, "b": 2})
    assert any(line.rstrip().endswith('"b": 2') and " > " in line for line in text.splitlines())


def _group_run(a: str, b: str, *, b_listed_first: bool) -> list[Any]:
    """b's MEMBER_ID_REQUIRED, then leader a's JoinGroup answer listing both members (in
    either order, as a hash map would), then a LeaveGroup naming a and an unknown id."""
    listed = [b, a] if b_listed_first else [a, b]
    members = [{"member_id": m, "group_instance_id": None, "metadata": b""} for m in listed]
    steps = [
        Step("b", "JoinGroup", 9, {"error_code": 79, "leader": "", "member_id": b, "members": []}),
        Step(
            "a", "JoinGroup", 9, {"error_code": 0, "leader": a, "member_id": a, "members": members}
        ),
        Step("leave", "LeaveGroup", 5, {"members": [{"member_id": a}, {"member_id": "x"}]}),
    ]
    return normalize(steps)


def test_member_ids_are_numbered_and_member_lists_sorted() -> None:
    kafka = _group_run("c-1b2e", "c-77af", b_listed_first=True)
    millpond = _group_run("c-0001", "c-0002", b_listed_first=False)
    assert diff(kafka, millpond) == []
    leader = kafka[1]["response"]
    assert (leader["leader"], leader["member_id"]) == ("<member-id-2>", "<member-id-2>")
    assert [m["member_id"] for m in leader["members"]] == ["<member-id-1>", "<member-id-2>"]
    assert kafka[0]["response"]["leader"] == ""  # an empty id stays empty
    assert [m["member_id"] for m in kafka[2]["response"]["members"]] == [
        "<member-id-2>",
        "<member-id-3>",
    ]
