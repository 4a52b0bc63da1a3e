"""The queue workload's checker bites: a good history (two producers, two partitions, info
sends both read and unread, a failed send, an offset gap, three consumers, a re-seek and
final polls) passes every check, and each anomaly, made by the smallest change to that
history that commits it, is flagged by its check and by no other that it does not imply."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable

import pytest

from .queue_checker import (
    Assign,
    History,
    Op,
    Outcome,
    Poll,
    Send,
    check,
    duplicates,
    failed_read,
    inconsistent_offsets,
    lost,
    nonmonotonic_poll,
    nonmonotonic_send,
    phantom,
    poll_skip,
    unseen,
    vanished,
    version_order,
)

Records = tuple[tuple[int, int, int], ...]
P0 = ((0, 0, 100), (0, 1, 200), (0, 2, 101), (0, 3, 102), (0, 4, 201))
P1 = ((1, 0, 110), (1, 1, 212), (1, 3, 111))


def send(
    t: float, process: int, partition: int, value: int, outcome: Outcome, offset: int | None = None
) -> Send:
    return Send(process, partition, value, outcome, offset, t, t + 0.5)


def poll(t: float, process: int, *records: tuple[int, int, int], final: bool = False) -> Poll:
    return Poll(process, records, t, t + 0.5, final)


def good() -> list[Op]:
    """Producers 1 and 2, consumers 10 and 11, and 20 reading everything at the end."""
    return [
        send(1, 1, 0, 100, "ok", 0),
        send(2, 2, 0, 200, "ok", 1),
        send(3, 1, 1, 110, "ok", 0),
        Assign(10, 0, 0),
        Assign(10, 1, 0),
        poll(4, 10, (0, 0, 100), (0, 1, 200)),
        send(5, 1, 0, 101, "ok", 2),
        send(6, 2, 1, 210, "info"),  # never written
        send(7, 2, 1, 211, "fail"),
        send(8, 2, 1, 212, "ok", 1),
        send(9, 1, 0, 102, "info"),  # written at offset 3
        Assign(11, 1, 0),
        poll(10, 11, (1, 0, 110), (1, 1, 212)),
        poll(11, 10, (0, 2, 101), (1, 0, 110), (0, 3, 102)),
        send(12, 1, 1, 111, "ok", 3),  # offset 2 holds a control record no one reads
        send(13, 2, 0, 201, "ok", 4),
        Assign(11, 1, 0),  # consumer 11 rewinds and reads partition 1 again
        poll(14, 11, *P1),
        poll(15, 10, (0, 4, 201), (1, 1, 212)),
        Assign(20, 0, 0),
        Assign(20, 1, 0),
        poll(16, 20, *P0, final=True),
        poll(17, 20, *P1, final=True),
    ]


def flagged(history: History) -> set[str]:
    """The kinds of anomaly the checker finds."""
    return {kind for kind, found in check(history).anomalies().items() if found}


def edit_polls(history: History, edit: Callable[[Poll], Records]) -> list[Op]:
    """The history with each poll's records replaced by ``edit(poll)``."""
    return [
        dataclasses.replace(op, records=edit(op)) if isinstance(op, Poll) else op for op in history
    ]


def without_reads(history: History, value: int) -> list[Op]:
    return edit_polls(history, lambda p: tuple(r for r in p.records if r[2] != value))


def append_to_final(history: History, record: tuple[int, int, int]) -> list[Op]:
    """The final consumer also reads ``record``, after the last record of its partition."""
    last = max(i for i, op in enumerate(history) if isinstance(op, Poll) and op.final)
    target = history[last - 1] if record[0] == 0 else history[last]
    return edit_polls(history, lambda p: p.records + (record,) if p is target else p.records)


def test_the_good_history_is_valid() -> None:
    report = check(good())
    assert report.valid, report
    assert (report.acked, report.sends_ok, report.sends_info, report.sends_fail) == (7, 7, 2, 1)
    assert report.polled_records == 20 and report.unseen_values == 0


def test_every_check_holds_on_the_good_history() -> None:
    checks = [
        lost,
        unseen,
        vanished,
        duplicates,
        inconsistent_offsets,
        nonmonotonic_send,
        poll_skip,
        nonmonotonic_poll,
        phantom,
        failed_read,
    ]
    for found in checks:
        assert found(good()) == [], found.__name__


def test_the_version_order_is_dense_over_the_observed_offsets() -> None:
    order = version_order(good())
    assert order == {0: [(o, v) for _, o, v in P0], 1: [(0, 110), (1, 212), (3, 111)]}
    # Offset 1 of partition 1 read with a second value: the lower one stands in.
    assert version_order(append_to_final(good(), (1, 1, 99)))[1][1] == (1, 99)


def test_an_acknowledged_value_readers_went_past_is_lost() -> None:
    history = without_reads(good(), 200)
    assert lost(history) == [
        "partition 0: acknowledged value 200 at offset 1 (index 1) was never read, "
        "though value 201 at offset 4 (index 4) was"
    ]
    assert unseen(history) == ["partition 0: 1 acknowledged values never read: 200@1"]
    # The readers that went past it skipped it, too.
    assert flagged(history) == {"lost", "unseen", "vanished", "poll_skip"}


def test_an_acknowledged_value_no_one_read_is_unseen_but_not_lost() -> None:
    history = without_reads(good(), 201)  # the last of its partition: no one went past it
    assert unseen(history) == ["partition 0: 1 acknowledged values never read: 201@4"]
    assert flagged(history) == {"unseen", "vanished"}


def test_an_acknowledged_value_read_once_and_gone_at_the_end_vanished() -> None:
    # Consumer 10 read 201; the final read of the partition no longer holds it.
    history = edit_polls(
        good(), lambda p: tuple(r for r in p.records if r[2] != 201) if p.final else p.records
    )
    assert vanished(history) == [
        "partition 0: 1 values acknowledged or read are not in the final read: 201@4"
    ]
    assert flagged(history) == {"vanished"}
    # A value read during the run but never acknowledged (an info send) counts too.
    info_read = edit_polls(
        good(), lambda p: tuple(r for r in p.records if r[2] != 102) if p.final else p.records
    )
    assert "vanished" in flagged(info_read)


def test_unseen_counts_every_value_and_shows_a_few() -> None:
    history = [send(t, 1, 3, 1000 + t, "ok", t) for t in range(7)]
    assert unseen(history) == [
        "partition 3: 7 acknowledged values never read: 1000@0, 1001@1, 1002@2, 1003@3, 1004@4, ..."
    ]
    assert check(history).unseen_values == 7 and lost(history) == []


def test_a_value_at_two_offsets_is_a_duplicate() -> None:
    history = append_to_final(good(), (0, 5, 100))
    assert duplicates(history) == [
        "value 100 at 2 positions: partition 0 offset 0, partition 0 offset 5"
    ]
    assert flagged(history) == {"duplicates"}


def test_an_offset_with_two_values_is_inconsistent() -> None:
    # Consumer 11, rereading, finds the unread info send's value where 212 was acknowledged.
    history = edit_polls(
        good(),
        lambda p: ((1, 0, 110), (1, 1, 210), (1, 3, 111)) if p.records == P1 and not p.final
        else p.records,
    )  # fmt: skip
    assert inconsistent_offsets(history) == ["partition 1 offset 1: 2 values 210, 212"]
    # 210, read by the rereading consumer, is not in the final read either.
    assert flagged(history) == {"inconsistent_offsets", "vanished"}


def test_a_later_send_of_a_producer_at_a_lower_offset_is_nonmonotonic() -> None:
    # Producer 1 sends 101 before 100, yet 101 gets offset 2 and 100 offset 0.
    history = good()
    a, b = (i for i, op in enumerate(history) if isinstance(op, Send) and op.value in (100, 101))
    first, second = history[a], history[b]
    assert isinstance(first, Send) and isinstance(second, Send)
    history[a] = dataclasses.replace(second, invoked=first.invoked, completed=first.completed)
    history[b] = dataclasses.replace(first, invoked=second.invoked, completed=second.completed)
    assert nonmonotonic_send(history) == [
        "producer 1, partition 0: value 100 got offset 0, not above offset 2 of value 101 "
        "sent before it"
    ]
    assert flagged(history) == {"nonmonotonic_send"}


def test_a_consumer_that_passes_over_a_record_skips() -> None:
    # Consumer 10's first poll stops at 100; its next starts at 101, past 200.
    history = edit_polls(
        good(), lambda p: ((0, 0, 100),) if p.records == ((0, 0, 100), (0, 1, 200)) else p.records
    )
    assert poll_skip(history) == [
        "consumer 10, partition 0: read value 101 at offset 2 after value 100 at offset 0, "
        "skipping 1: 200@1"
    ]
    assert flagged(history) == {"poll_skip"}


def test_a_consumer_that_starts_past_its_assigned_offset_skips() -> None:
    # Consumer 11 rewinds to offset 0 of partition 1 but first reads offset 1.
    history = edit_polls(good(), lambda p: P1[1:] if p.records == P1 and not p.final else p.records)
    assert poll_skip(history) == [
        "consumer 11, partition 1: read value 212 at offset 1 first after its assignment "
        "at offset 0, skipping 1: 110@0"
    ]
    assert flagged(history) == {"poll_skip"}


def rewind(history: History) -> int:
    """Where consumer 11's rewind sits in the history."""
    return [i for i, op in enumerate(history) if op == Assign(11, 1, 0)][1]


def test_a_consumer_that_reads_back_without_a_seek_is_nonmonotonic() -> None:
    history = good()
    del history[rewind(history)]
    assert nonmonotonic_poll(history) == [
        "consumer 11, partition 1: read value 110 at offset 0 after value 212 at offset 1"
    ]
    assert flagged(history) == {"nonmonotonic_poll"}


def test_a_consumer_that_reads_before_its_assigned_offset_is_nonmonotonic() -> None:
    history = good()
    history[rewind(history)] = Assign(11, 1, 1)
    assert nonmonotonic_poll(history) == [
        "consumer 11, partition 1: read value 110 at offset 0, before offset 1 it was assigned"
    ]
    assert flagged(history) == {"nonmonotonic_poll"}


@pytest.mark.parametrize(
    ("record", "why"),
    [((1, 4, 999), "which no send produced"), ((0, 5, 210), "which was sent to partition 1")],
)
def test_a_read_no_send_explains_is_a_phantom(record: tuple[int, int, int], why: str) -> None:
    history = append_to_final(good(), record)
    p, o, v = record
    assert phantom(history) == [f"partition {p} offset {o}: consumer 20 read {v}, {why}"]
    assert flagged(history) == {"phantom"}


def test_a_read_of_a_definitely_failed_send_is_flagged() -> None:
    history = append_to_final(good(), (1, 4, 211))
    assert failed_read(history) == [
        "partition 1 offset 4: consumer 20 read 211, whose send by producer 2 failed"
    ]
    assert flagged(history) == {"failed_read"}


def test_the_summary_is_json_with_a_few_examples_of_each_kind() -> None:
    assert json.loads(json.dumps(check(good()).as_dict()))["valid"] is True
    history = [*good(), poll(20, 30, *((5, o, 5000 + o) for o in range(25)))]
    summary = json.loads(json.dumps(check(history).as_dict()))
    assert summary["valid"] is False
    assert summary["sends"] == {"ok": 7, "info": 2, "fail": 1}
    assert summary["polled_records"] == 45
    assert summary["anomalies"]["phantom"]["count"] == 25
    assert len(summary["anomalies"]["phantom"]["examples"]) == 10
    assert summary["anomalies"]["lost"] == {"count": 0, "examples": []}


def test_a_history_that_sends_a_value_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="value 100 is sent twice"):
        check([*good(), send(20, 2, 1, 100, "info")])
