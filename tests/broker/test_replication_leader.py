"""The leader's view of its followers (pure): caught-up times as Kafka's Replica keeps
them, ISR additions and removals one at a time, and the high watermark over the maximal
ISR, frozen under min.insync.replicas."""

from __future__ import annotations

from millpond.broker.replication.leader import FollowerState, LeaderReplication

LAG = 30_000
EPOCHS = {2: 102, 3: 103}


def eligible(replica: int, epoch: int) -> bool:
    return epoch in (-1, EPOCHS.get(replica))


def leader(
    isr: tuple[int, ...] = (1, 2, 3), *, log_end: int = 10, now: int = 0
) -> LeaderReplication:
    state = LeaderReplication(1, LAG)
    assert state.update((1, 2, 3), isr, 5, 7, log_end=log_end, now_ms=now)
    return state


def fetch(state: LeaderReplication, replica: int, offset: int, now: int, leader_end: int) -> None:
    state.record_fetch(replica, offset, 0, now, leader_end, EPOCHS[replica])


def test_caught_up_times_follow_kafkas_rule() -> None:
    state = FollowerState()
    # Reaching the leader's end at the time of the fetch: caught up now.
    state = state.after_fetch(10, 0, 1000, 10, 102)
    assert state.last_caught_up_ms == 1000
    # Behind the leader now, but at the end the previous fetch saw: caught up then.
    state = state.after_fetch(10, 0, 2000, 15, 102)
    assert state.last_caught_up_ms == 1000
    state = state.after_fetch(15, 0, 3000, 20, 102)
    assert state.last_caught_up_ms == 2000
    # Behind what the previous fetch saw: no change.
    state = state.after_fetch(16, 0, 4000, 25, 102)
    assert state.last_caught_up_ms == 2000
    assert state.is_caught_up(25, 2000 + LAG, LAG)
    assert not state.is_caught_up(25, 2001 + LAG, LAG)
    assert state.is_caught_up(16, 10**9, LAG)  # at the leader's end: always


def test_a_new_leader_counts_its_isr_caught_up_from_now() -> None:
    state = leader((1, 2), now=500)
    assert state.followers[2].last_caught_up_ms == 500
    assert state.followers[3].last_caught_up_ms == 0
    assert state.epoch_start_offset == 10
    # An older partition epoch than the leader has is ignored.
    assert not state.update((1, 2, 3), (1,), 5, 6, log_end=10, now_ms=600)


def test_a_follower_joins_once_at_the_high_watermark_and_the_epoch_start() -> None:
    state = leader((1, 2))
    fetch(state, 3, 9, 100, 12)
    assert state.propose_expand(3, 9, eligible) is None  # below the epoch start (10)
    fetch(state, 3, 11, 200, 12)
    assert state.propose_expand(3, 12, eligible) is None  # below the high watermark
    proposal = state.propose_expand(3, 11, eligible)
    assert proposal is not None
    assert proposal.isr == ((1, -1), (2, -1), (3, 103))
    assert (proposal.leader_epoch, proposal.partition_epoch) == (5, 7)
    assert state.in_flight and state.maximal_isr == {1, 2, 3} and state.isr == {1, 2}
    assert state.propose_expand(3, 11, eligible) is None  # one change at a time
    assert state.on_committed(proposal, (1, 2, 3), 5, 8)
    assert state.isr == {1, 2, 3} and state.partition_epoch == 8 and not state.in_flight


def test_an_ineligible_follower_does_not_join() -> None:
    state = leader((1, 2))
    state.record_fetch(3, 20, 0, 100, 20, 999)  # an epoch the metadata does not know
    assert state.propose_expand(3, 10, eligible) is None


def test_followers_not_caught_up_leave_the_isr() -> None:
    state = leader(now=0)
    fetch(state, 2, 10, 100, 10)
    assert state.propose_shrink(10, LAG) is None  # 3 counts as caught up from 0
    proposal = state.propose_shrink(12, LAG + 50)
    assert proposal is not None and [m for m, _ in proposal.isr] == [1, 2]
    assert state.maximal_isr == {1, 2, 3}  # a pending removal counts nobody out
    state.on_refused(proposal, undo=False)
    assert state.in_flight  # stale: waits for the metadata
    assert state.update((1, 2, 3), (1, 2), 5, 8, log_end=12, now_ms=LAG + 200)
    assert state.proposal is None and state.isr == {1, 2}


def test_a_refusal_that_undoes_frees_the_next_change() -> None:
    state = leader((1, 2))
    fetch(state, 3, 10, 100, 10)
    proposal = state.propose_expand(3, 10, eligible)
    assert proposal is not None
    state.on_refused(proposal, undo=True)
    assert not state.in_flight and state.maximal_isr == {1, 2}
    # An answer for another leader epoch is not taken.
    again = state.propose_expand(3, 10, eligible)
    assert again is not None and not state.on_committed(again, (1, 2, 3), 6, 8)
    assert state.in_flight


def test_the_high_watermark_waits_for_the_maximal_isr_and_freezes_under_min_isr() -> None:
    state = leader((1, 2))
    fetch(state, 2, 8, 100, 10)
    assert state.high_watermark_candidate(10, 100, lambda: 1, eligible) == 8
    fetch(state, 2, 10, 200, 10)
    # 3 is out of the ISR, never fetched: it does not hold the high watermark back.
    assert state.high_watermark_candidate(10, 200, lambda: 1, eligible) == 10
    # 3, caught up and eligible, holds it back before it has joined.
    fetch(state, 3, 9, 300, 9)
    assert state.high_watermark_candidate(10, 300, lambda: 1, eligible) == 9
    # Under min.insync.replicas (2 of 2 needed, capped at the 3 replicas): frozen.
    assert state.high_watermark_candidate(10, 300, lambda: 3, eligible) is None
    single = LeaderReplication(1, LAG)
    single.update((1,), (1,), 0, 0, log_end=0, now_ms=0)
    assert single.high_watermark_candidate(4, 0, lambda: 2, eligible) == 4  # capped at one replica
