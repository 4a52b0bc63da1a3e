"""Run the quorum simulation over many seeds and print the figures.

    python -m tests.controller.raft.simulate --seeds 1000 [--first 0] [--jobs 2]

Prints seeds, events, faults and violations (each failing seed with its first
violation; ``--seeds 1 --first N`` replays seed N exactly), and the simulated time from
the heal to a settled leader (p50/p99), over all seeds and over those that had to
elect a new one.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
from collections.abc import Iterable, Sequence

from tests.controller.raft.sim import RunResult, SimConfig, run_seed

__all__ = ["Summary", "main", "run_seeds", "summarize"]


def _one(seed: int) -> RunResult:
    return run_seed(seed, SimConfig())


def run_seeds(seeds: Iterable[int], jobs: int = 1) -> list[RunResult]:
    seeds = list(seeds)
    if jobs <= 1:
        return [_one(s) for s in seeds]
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        return pool.map(_one, seeds, chunksize=16)


def percentile(values: Sequence[int], fraction: float) -> int:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


class Summary:
    def __init__(self, results: Sequence[RunResult]) -> None:
        self.seeds = len(results)
        self.events = sum(r.events for r in results)
        self.faults = sum(r.faults for r in results)
        self.failing = [r for r in results if r.violations]
        self.violations = sum(len(r.violations) for r in results)
        settled = [
            r.election_after_heal_ms for r in results if r.election_after_heal_ms is not None
        ]
        self.settle_p50 = percentile(settled, 0.5) if settled else None
        self.settle_p99 = percentile(settled, 0.99) if settled else None
        elected = [
            r.election_after_heal_ms
            for r in results
            if r.election_after_heal_ms is not None and r.elected_after_heal
        ]
        self.elections_after_heal = len(elected)
        self.election_p50 = percentile(elected, 0.5) if elected else None
        self.election_p99 = percentile(elected, 0.99) if elected else None
        self.committed = sum(r.committed for r in results)

    def lines(self) -> list[str]:
        out = [
            f"seeds {self.seeds}, events {self.events}, faults {self.faults},"
            f" committed entries {self.committed}, violations {self.violations}",
            f"leader settled after heal: p50 {self.settle_p50} ms, p99 {self.settle_p99} ms;"
            f" in the {self.elections_after_heal} seeds that elected a new leader after it:"
            f" p50 {self.election_p50} ms, p99 {self.election_p99} ms (simulated time)",
        ]
        for result in self.failing:
            out.append(f"  seed {result.seed}: {result.violations[0]}")
        return out


def summarize(results: Sequence[RunResult]) -> Summary:
    return Summary(results)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=1000)
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args(argv)
    results = run_seeds(range(args.first, args.first + args.seeds), args.jobs)
    summary = summarize(results)
    print("\n".join(summary.lines()))
    return 1 if summary.failing else 0


if __name__ == "__main__":
    sys.exit(main())
