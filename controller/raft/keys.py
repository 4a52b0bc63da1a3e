"""The nouns of KRaft: replica keys, (offset, epoch) positions, voters and voter sets.

A replica is named by its node id and the directory id of its metadata log directory
(KIP-853): a node whose disk was wiped comes back with a new directory id, so it no longer
matches its old voter entry and cannot vote until it is added again. A voter entry or a
vote without a directory id (``kraft.version`` 0, static ``controller.quorum.voters``)
matches any directory id of that node.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import NamedTuple

__all__ = [
    "BOOTSTRAP_SNAPSHOT",
    "STATIC_KRAFT_VERSIONS",
    "Endpoint",
    "OffsetAndEpoch",
    "ReplicaKey",
    "Voter",
    "VoterSet",
]


class OffsetAndEpoch(NamedTuple):
    """A log position: an offset and the epoch of the entry before it (Kafka compares
    epoch first, then offset, which the tuple order gives)."""

    epoch: int
    offset: int


#: The checkpoint ``format`` writes (the first voters, the bootstrap records): read at
#: start, never replicated.
BOOTSTRAP_SNAPSHOT = OffsetAndEpoch(0, 0)


class ReplicaKey(NamedTuple):
    id: int
    #: 16 bytes, or None when unknown (never the all-zero Uuid: codecs map it to None).
    directory_id: bytes | None = None

    def matches(self, other: ReplicaKey) -> bool:
        """Same node, and the same directory wherever both name one."""
        if self.id != other.id:
            return False
        return (
            self.directory_id is None
            or other.directory_id is None
            or self.directory_id == other.directory_id
        )


class Endpoint(NamedTuple):
    listener: str
    host: str
    port: int


#: The kraft.version range a configured voter (``controller.quorum.voters``) is known to
#: support until it announces its own (UpdateRaftVoter), as Kafka has it.
STATIC_KRAFT_VERSIONS = (0, 0)


class Voter(NamedTuple):
    key: ReplicaKey
    endpoints: tuple[Endpoint, ...] = ()
    #: The kraft.version range the node supports (VotersRecord's KRaftVersionFeature).
    kraft_versions: tuple[int, int] = (0, 1)

    def same_as(self, other: Voter) -> bool:
        """Equal as Kafka compares voter nodes: listeners in any order."""
        return (
            self.key == other.key
            and set(self.endpoints) == set(other.endpoints)
            and self.kraft_versions == other.kraft_versions
        )


class VoterSet:
    """An immutable set of voters keyed by node id; a quorum is a strict majority."""

    __slots__ = ("_voters",)

    def __init__(self, voters: Iterable[Voter] = ()) -> None:
        self._voters: Mapping[int, Voter] = {v.key.id: v for v in voters}

    @classmethod
    def of_ids(cls, ids: Iterable[int]) -> VoterSet:
        """Static voters (``controller.quorum.voters``): ids without directory ids."""
        return cls(Voter(ReplicaKey(i), (), STATIC_KRAFT_VERSIONS) for i in ids)

    def __iter__(self) -> Iterator[Voter]:
        return iter(self._voters.values())

    def __len__(self) -> int:
        return len(self._voters)

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._voters

    def __eq__(self, other: object) -> bool:
        return isinstance(other, VoterSet) and dict(self._voters) == dict(other._voters)

    def __hash__(self) -> int:
        return hash(frozenset(self._voters.values()))

    def __repr__(self) -> str:
        return f"VoterSet({sorted(self._voters)})"

    @property
    def ids(self) -> frozenset[int]:
        return frozenset(self._voters)

    def get(self, node_id: int) -> Voter | None:
        return self._voters.get(node_id)

    def is_voter(self, key: ReplicaKey) -> bool:
        voter = self._voters.get(key.id)
        return voter is not None and voter.key.matches(key)

    @property
    def majority(self) -> int:
        return len(self._voters) // 2 + 1

    def with_voter(self, voter: Voter) -> VoterSet:
        return VoterSet([*(v for v in self if v.key.id != voter.key.id), voter])

    def updated(self, voter: Voter, *, ignore_directory_id: bool = False) -> VoterSet | None:
        """This set with ``voter`` in place of the voter it names, or None if it names no
        voter; the directory ids must agree unless ``ignore_directory_id`` (static voters,
        which a voter tells its directory id this way)."""
        current = self._voters.get(voter.key.id)
        if current is None or not (ignore_directory_id or current.key.matches(voter.key)):
            return None
        return VoterSet(voter if v.key.id == voter.key.id else v for v in self)

    def without(self, key: ReplicaKey) -> VoterSet:
        return VoterSet(v for v in self if not (v.key.id == key.id and v.key.matches(key)))
