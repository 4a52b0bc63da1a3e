"""The quorum under seeded faults: R1-R9 after every event, L1-L3 after the heal.

``MILLPOND_RAFT_SEEDS`` sets how many seeds the main test runs (1,000 by default);
``python -m tests.controller.raft.simulate`` runs any number and prints the figures.
The checker is shown to bite: a broken vote rule, a follower that does not flush
before it fetches again and a voter that never announces its listeners each make seeds
fail.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from millpond.controller.raft.keys import ReplicaKey
from millpond.controller.raft.node import RaftNode
from tests.controller.raft.sim import SimConfig, run_seed
from tests.controller.raft.simulate import run_seeds, summarize

SEEDS = int(os.environ.get("MILLPOND_RAFT_SEEDS", "1000"))


def test_every_seed_keeps_the_invariants() -> None:
    results = run_seeds(range(SEEDS), jobs=min(2, os.cpu_count() or 1))
    summary = summarize(results)
    print("\n".join(summary.lines()))
    assert summary.seeds == SEEDS
    assert summary.faults > 10 * SEEDS, "the schedules must actually inject faults"
    assert summary.committed > 0
    assert not summary.failing, "\n".join(summary.lines())


def test_a_seed_replays_exactly() -> None:
    assert run_seed(7) == run_seed(7)
    assert run_seed(7) != run_seed(8)


@pytest.fixture
def broken_vote_rule(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Grant every vote request, however many votes were cast in the epoch."""

    def grant_all(self: RaftNode, candidate: ReplicaKey, up_to_date: bool, pre_vote: bool) -> bool:
        return True

    monkeypatch.setattr(RaftNode, "_can_grant", grant_all)
    yield


def test_the_checker_catches_a_broken_vote_rule(broken_vote_rule: None) -> None:
    summary = summarize(run_seeds(range(40)))
    assert summary.failing, "granting every vote must break election safety somewhere"
    assert any(code in r.violations[0] for r in summary.failing for code in ("R1", "R4", "R6"))


def test_the_checker_catches_a_follower_that_does_not_flush(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    original = RaftNode._on_fetch_response

    def no_flush(self: RaftNode, source: int, response: object, now: int) -> bool:
        flush = self.log.flush
        self.log.flush = lambda: None  # type: ignore[method-assign]
        try:
            return original(self, source, response, now)  # type: ignore[arg-type]
        finally:
            self.log.flush = flush  # type: ignore[method-assign]

    monkeypatch.setattr(RaftNode, "_on_fetch_response", no_flush)
    summary = summarize(run_seeds(range(40)))
    assert summary.failing, "acknowledging unflushed entries must lose committed data"
    assert any(
        code in r.violations[0] for r in summary.failing for code in ("R7", "R8", "R5", "R6")
    )


def test_the_checker_catches_a_voter_that_never_announces_its_listeners(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(RaftNode, "_should_announce", lambda self: False)
    summary = summarize(run_seeds(range(20)))
    assert summary.failing, "voters that move must be found where they listen"
    assert all("L4" in r.violations[0] for r in summary.failing)


def test_more_voters_and_nodes() -> None:
    config = SimConfig(nodes=7, voters=5)
    summary = summarize([run_seed(seed, config) for seed in range(20)])
    assert not summary.failing, "\n".join(summary.lines())
