"""The quorum's timers and limits, under Kafka's ``controller.quorum.*`` names."""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["RaftConfig"]


class RaftConfig(NamedTuple):
    cluster_id: str | None = None
    #: controller.quorum.election.timeout.ms: drawn uniformly from [t, 2t) per election.
    election_timeout_ms: int = 1000
    #: controller.quorum.fetch.timeout.ms: a follower without a good fetch for this long
    #: starts an election; the leader resigns after 1.5x without a majority fetching.
    fetch_timeout_ms: int = 2000
    #: controller.quorum.election.backoff.max.ms: how long a voter not first among a
    #: resigning leader's preferred successors waits before it stands.
    election_backoff_max_ms: int = 1000
    #: controller.quorum.request.timeout.ms
    request_timeout_ms: int = 2000
    #: controller.quorum.retry.backoff.ms
    retry_backoff_ms: int = 20
    #: controller.quorum.fetch.max.bytes / fetch.snapshot.max.bytes
    fetch_max_bytes: int = 1024 * 1024
    fetch_snapshot_max_bytes: int = 10 * 1024 * 1024
    #: How long a follower's fetch may wait at the leader for new entries (Kafka: 500).
    fetch_max_wait_ms: int = 500
    #: kraft.version: 0 static voters, 1 dynamic voters (KIP-853).
    kraft_version: int = 1

    @property
    def check_quorum_timeout_ms(self) -> int:
        return self.fetch_timeout_ms * 3 // 2
