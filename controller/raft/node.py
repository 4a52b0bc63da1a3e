"""One replica of the KRaft quorum as a deterministic state machine.

The rules are KRaft's as Apache Kafka 4.4 runs them: pull-based replication (followers
Fetch from the leader, which learns their positions from the fetches), pre-vote before
every election (KIP-996), a leader that resigns when a majority stops fetching
(check-quorum), a resigning leader naming its successors (EndQuorumEpoch), voters named
by node id and directory id and changed one at a time through the log (KIP-853).

States: *unattached* (an epoch, no leader known), *prospective* (asking for pre-votes),
*candidate* (asking for votes in a new epoch), *leader*, *follower*, *resigned* (a leader
stepping down, which never leads or votes in its epoch again). Observers (replicas not
in the voter set) are only unattached or followers.

Sans-I/O: the driver hands in messages (:meth:`RaftNode.handle`) and the time, calls
:meth:`RaftNode.poll` after each event or when :meth:`RaftNode.wakeup_at` comes, and
sends what :meth:`RaftNode.take_outbox` returns. The log and the election store are
interfaces the driver supplies; every persisted transition is written before the
message that reveals it leaves (the outbox is drained only after the call returns).
Randomness (election timeouts, the bootstrap server to ask) comes from the injected
``random.Random``. A rule a peer breaks that Kafka treats as fatal raises
:class:`RaftFatalError`.
"""

from __future__ import annotations

import enum
import random
from collections.abc import Sequence
from typing import NamedTuple

from millpond.controller.raft.config import RaftConfig
from millpond.controller.raft.keys import (
    BOOTSTRAP_SNAPSHOT,
    Endpoint,
    OffsetAndEpoch,
    ReplicaKey,
    Voter,
    VoterSet,
)
from millpond.controller.raft.log import (
    ElectionState,
    ElectionStore,
    Entry,
    LeaderChange,
    RaftLog,
    VotersChange,
)
from millpond.controller.raft.messages import (
    REQUESTS,
    AddVoterRequest,
    AddVoterResponse,
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    DescribeQuorumRequest,
    DescribeQuorumResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    Message,
    RemoveVoterRequest,
    RemoveVoterResponse,
    ReplicaDescription,
    Response,
    UpdateVoterRequest,
    UpdateVoterResponse,
    VoteRequest,
    VoteResponse,
)
from millpond.wire.errors import ErrorCode

__all__ = ["KRaftUpgradeError", "NotLeaderError", "Outgoing", "RaftFatalError", "RaftNode", "Role"]

E = ErrorCode
NEVER = 1 << 62
OBSERVER_SESSION_TIMEOUT_MS = 300_000
CAUGHT_UP_WINDOW_MS = 3_600_000


class Role(enum.Enum):
    UNATTACHED = "unattached"
    PROSPECTIVE = "prospective"
    CANDIDATE = "candidate"
    LEADER = "leader"
    FOLLOWER = "follower"
    RESIGNED = "resigned"


class RaftFatalError(RuntimeError):
    """A peer broke a rule Kafka's raft client stops on (an inconsistent leader for an
    epoch, truncation below the high watermark, a snapshot chunk out of place)."""


class KRaftUpgradeError(Exception):
    """A kraft.version upgrade the leader refuses (Kafka's InvalidUpdateVersionException)."""


class NotLeaderError(Exception):
    """Only the leader appends."""


class Outgoing(NamedTuple):
    destination: int
    correlation: int
    message: Message
    is_response: bool


class _Replica:
    """What the leader knows of a replica from its fetches."""

    __slots__ = ("end_offset", "key", "last_caught_up", "last_fetch", "last_fetch_leader_leo")

    def __init__(self, key: ReplicaKey) -> None:
        self.key = key
        self.end_offset = -1
        self.last_fetch = -1
        self.last_caught_up = -1
        self.last_fetch_leader_leo = -1

    def fetched(self, now: int, offset: int, leader_leo: int) -> None:
        if offset >= leader_leo:
            self.last_caught_up = max(self.last_caught_up, now)
        elif self.last_fetch_leader_leo > 0 and offset >= self.last_fetch_leader_leo:
            self.last_caught_up = max(self.last_caught_up, self.last_fetch)
        self.last_fetch = max(self.last_fetch, now)
        self.last_fetch_leader_leo = leader_leo
        self.end_offset = offset

    def describe(self) -> ReplicaDescription:
        return ReplicaDescription(self.key, self.end_offset, self.last_fetch, self.last_caught_up)


class _VoterChange(NamedTuple):
    """An AddRaftVoter or RemoveRaftVoter waiting for its VotersRecord to commit."""

    source: int
    correlation: int
    offset: int
    deadline: int
    is_add: bool


class _ParkedFetch(NamedTuple):
    source: int
    correlation: int
    request: FetchRequest
    deadline: int


class RaftNode:
    """One replica (see the module docstring)."""

    def __init__(
        self,
        key: ReplicaKey,
        config: RaftConfig,
        log: RaftLog,
        store: ElectionStore,
        rng: random.Random,
        now: int,
        *,
        bootstrap_voters: VoterSet,
        bootstrap_servers: Sequence[int] = (),
        can_become_voter: bool = True,
        local_endpoints: tuple[Endpoint, ...] = (),
        kraft_versions: tuple[int, int] = (0, 1),
    ) -> None:
        """``local_endpoints``: this node's controller listeners, the first of which
        the quorum's requests come in on; while unknown (empty) the node announces none
        (UpdateRaftVoter). ``kraft_versions``: the kraft.version range it supports."""
        self.key = key
        #: A controller may be added as a voter while it follows as an observer, and the
        #: leader then counts the offsets it fetched at: it flushes like a voter.
        self.can_become_voter = can_become_voter
        self.config = config
        self.log = log
        self._store = store
        self._rng = rng
        self._now = now
        #: Voter sets by offset, latest last; offset -1 is the bootstrap set.
        self._voter_history: list[tuple[int, VoterSet]] = [(-1, bootstrap_voters)]
        self._voter_history += log.voter_history()
        self._bootstrap = list(bootstrap_servers) or sorted(bootstrap_voters.ids - {key.id})
        self._outbox: list[Outgoing] = []
        self._next_correlation = 0
        #: destination -> (correlation, deadline) of the one request in flight to it.
        self._inflight: dict[int, tuple[int, int]] = {}
        self._backoff_until: dict[int, int] = {}
        self.high_watermark = -1
        self._role = Role.UNATTACHED
        self._election = ElectionState(0)
        self._election_deadline = NEVER
        self._fetch_deadline = NEVER
        self._votes: dict[int, bool] = {}
        self._election_voters = VoterSet()
        self._has_fetched_from_leader = False
        self._snapshot_fetch: OffsetAndEpoch | None = None
        self._snapshot_position = 0
        # leader state
        self._epoch_start_offset = -1
        self._replicas: dict[int, _Replica] = {}
        self._observers: dict[ReplicaKey, _Replica] = {}
        self._fetched_voters: set[int] = set()
        self._check_quorum_deadline = NEVER
        self._begin_quorum_deadline = NEVER
        self._parked: list[_ParkedFetch] = []
        self._voter_change: _VoterChange | None = None
        self._resign_requested = False
        #: kraft.version 0: the voters with what they announced (never in the log).
        self._volatile_voters: VoterSet | None = None
        # this voter's listeners, announced to each leader (UpdateRaftVoter)
        self._local_endpoints = local_endpoints
        self._kraft_versions = kraft_versions
        self._update_voter_deadline = NEVER
        self._has_updated_leader = False
        # resigned state
        self._unacked: set[int] = set()
        self._preferred: tuple[ReplicaKey, ...] = ()
        self._start()

    # -- what the driver and observers read -----------------------------------------

    @property
    def role(self) -> Role:
        return self._role

    @property
    def epoch(self) -> int:
        return self._election.epoch

    @property
    def leader_id(self) -> int:
        return self._election.leader_id

    @property
    def voted(self) -> ReplicaKey | None:
        return self._election.voted

    @property
    def voters(self) -> VoterSet:
        return self._voter_history[-1][1]

    @property
    def is_voter(self) -> bool:
        return self.voters.is_voter(self.key)

    @property
    def epoch_start_offset(self) -> int:
        """Where this leader's epoch began (its LeaderChange entry); -1 unless leader."""
        return self._epoch_start_offset if self._role is Role.LEADER else -1

    @property
    def local_endpoints(self) -> tuple[Endpoint, ...]:
        return self._local_endpoints

    @local_endpoints.setter
    def local_endpoints(self, endpoints: tuple[Endpoint, ...]) -> None:
        """Learned once the listeners are bound; a voter then announces them to the
        leader, and a leader records its own (call :meth:`poll` after)."""
        self._local_endpoints = endpoints

    @property
    def kraft_version(self) -> int:
        """kraft.version now: 1 from the first VotersRecord in the log (or as configured),
        so that an upgrade takes effect on its append and a truncation undoes it."""
        return self.kraft_version_at(NEVER)

    def kraft_version_at(self, offset: int) -> int:
        logged = any(0 <= at <= offset for at, _ in self._voter_history)
        return max(self.config.kraft_version, 1 if logged else 0)

    @property
    def volatile_voters(self) -> VoterSet | None:
        """A leader at kraft.version 0: the voters as they announced themselves."""
        return self._volatile_voters if self._role is Role.LEADER else None

    def voters_at(self, offset: int) -> VoterSet:
        """The voter set in force at ``offset`` (the latest change at or before it)."""
        found = self._voter_history[0][1]
        for at, voters in self._voter_history:
            if at > offset:
                break
            found = voters
        return found

    def take_outbox(self) -> list[Outgoing]:
        out, self._outbox = self._outbox, []
        return out

    def wakeup_at(self) -> int:
        """The earliest time :meth:`poll` has something to do without a new message."""
        times = [self._election_deadline, self._fetch_deadline]
        if self._role is Role.LEADER:
            times += [self._check_quorum_deadline, self._begin_quorum_deadline]
            times += [p.deadline for p in self._parked]
            if self._voter_change is not None:
                times.append(self._voter_change.deadline)
        elif self._role is Role.FOLLOWER and self.is_voter:
            times.append(self._update_voter_deadline)
        times += [deadline for _, deadline in self._inflight.values()]
        times += self._backoff_until.values()
        return min(times)

    # -- start-up --------------------------------------------------------------------

    def _start(self) -> None:
        stored = self._store.read() or ElectionState(0)
        log_epoch = self.log.last_fetched_epoch()
        now = self._now
        if stored.epoch < log_epoch:
            self._become_unattached(log_epoch, -1, None, now)
        elif stored.leader_id == self.key.id:
            # A leader that restarts never leads or votes in its epoch again.
            self._write(stored)
            self._enter_resigned(stored, (), now)
        elif stored.leader_id >= 0:
            # Known before the vote: a candidate that then followed the winner of its
            # epoch holds that epoch's entries and must not stand in it again.
            self._write(stored)
            self._enter_follower(stored, now)
        elif stored.voted is not None and stored.voted.matches(self.key):
            self._write(stored)
            self._enter_candidate_in(stored, now)
        else:
            self._write(stored)
            self._role = Role.UNATTACHED
            self._election = stored
            self._election_deadline = self._unattached_deadline(now)
        if self._is_sole_voter() and self._role is not Role.CANDIDATE:
            self._become_prospective(now)
        elif self._role is Role.CANDIDATE:
            self._maybe_win(now)

    def _is_sole_voter(self) -> bool:
        return self.is_voter and len(self.voters) == 1

    # -- persisted transitions ---------------------------------------------------------

    def _write(self, state: ElectionState) -> None:
        self._store.write(state)

    def _leave_state(self, new_role: Role) -> None:
        if self._role is Role.LEADER and new_role is not Role.LEADER:
            for parked in self._parked:
                self._respond(
                    parked.source, parked.correlation, self._fetch_error(E.NOT_LEADER_OR_FOLLOWER)
                )
            self._parked.clear()
            if self._voter_change is not None:
                change = self._voter_change
                self._voter_change = None
                self._respond_voter_change(change, E.NOT_LEADER_OR_FOLLOWER)
            self._replicas.clear()
            self._observers.clear()
            self._resign_requested = False
            self._volatile_voters = None
        self._inflight.clear()
        self._backoff_until.clear()
        self._election_deadline = NEVER
        self._fetch_deadline = NEVER
        self._check_quorum_deadline = NEVER
        self._begin_quorum_deadline = NEVER
        self._snapshot_fetch = None
        self._votes = {}
        self._has_fetched_from_leader = False
        self._unacked = set()
        self._update_voter_deadline = NEVER
        self._has_updated_leader = False

    def _random_election_timeout(self) -> int:
        t = self.config.election_timeout_ms
        return t + self._rng.randrange(t) if t > 0 else 0

    def _unattached_deadline(self, now: int) -> int:
        return now + self._random_election_timeout() if self.is_voter else NEVER

    def _become_unattached(
        self, epoch: int, leader_id: int, voted: ReplicaKey | None, now: int
    ) -> None:
        state = ElectionState(epoch, leader_id, voted)
        self._write(state)
        self._leave_state(Role.UNATTACHED)
        self._role = Role.UNATTACHED
        self._election = state
        self._election_deadline = self._unattached_deadline(now)

    def _become_follower(self, epoch: int, leader_id: int, now: int) -> None:
        voted = self._election.voted if epoch == self.epoch else None
        state = ElectionState(epoch, leader_id, voted)
        self._write(state)
        self._enter_follower(state, now)

    def _enter_follower(self, state: ElectionState, now: int) -> None:
        self._leave_state(Role.FOLLOWER)
        self._role = Role.FOLLOWER
        self._election = state
        self._fetch_deadline = now + self.config.fetch_timeout_ms
        self._update_voter_deadline = now + self.config.fetch_timeout_ms

    def _become_prospective(self, now: int) -> None:
        """Ask for pre-votes in this epoch; nothing is persisted."""
        self._leave_state(Role.PROSPECTIVE)
        self._role = Role.PROSPECTIVE
        self._election_voters = self.voters
        self._votes = {self.key.id: True}
        self._election_deadline = now + self._random_election_timeout()
        self._maybe_win(now)

    def _become_candidate(self, now: int) -> None:
        state = ElectionState(self.epoch + 1, -1, self.key)
        self._write(state)
        self._enter_candidate_in(state, now)
        self._maybe_win(now)

    def _enter_candidate_in(self, state: ElectionState, now: int) -> None:
        self._leave_state(Role.CANDIDATE)
        self._role = Role.CANDIDATE
        self._election = state
        self._election_voters = self.voters
        self._votes = {self.key.id: True}
        self._election_deadline = now + self._random_election_timeout()

    def _maybe_win(self, now: int) -> None:
        voters = self._election_voters
        granted = sum(1 for node, ok in self._votes.items() if ok and node in voters)
        if granted < voters.majority:
            return
        if self._role is Role.PROSPECTIVE:
            self._become_candidate(now)
        elif self._role is Role.CANDIDATE:
            self._become_leader(now)

    def _election_lost(self) -> bool:
        voters = self._election_voters
        granted = sum(1 for node, ok in self._votes.items() if ok and node in voters)
        unrecorded = sum(1 for v in voters if v.key.id not in self._votes)
        return granted + unrecorded < voters.majority

    def _become_leader(self, now: int) -> None:
        granting = tuple(sorted(n for n, ok in self._votes.items() if ok))
        state = ElectionState(self.epoch, self.key.id, None)
        self._write(state)
        self._leave_state(Role.LEADER)
        self._role = Role.LEADER
        self._election = state
        self.high_watermark = -1
        self._epoch_start_offset = self.log.end_offset
        for voter in self.voters:
            self._replicas[voter.key.id] = _Replica(voter.key)
        self._check_quorum_deadline = now + self.config.check_quorum_timeout_ms
        self._begin_quorum_deadline = now
        entries: list[Entry] = [LeaderChange(self.key.id, tuple(sorted(self.voters.ids)), granting)]
        if self.kraft_version >= 1:
            announced = self._announced(self.voters)
            if self._voter_history[-1][0] < 0 or announced is not None:
                # The bootstrap voter set goes into the replicated log, and this
                # leader's entry names its listeners as they are now.
                entries.append(VotersChange(announced or self.voters))
        else:
            self._volatile_voters = self._announced(self.voters) or self.voters
        self._append(entries, now)

    def _enter_resigned(
        self, state: ElectionState, preferred: tuple[ReplicaKey, ...], now: int
    ) -> None:
        """Memory only: a leader restarted, or stepping down."""
        self._leave_state(Role.RESIGNED)
        self._role = Role.RESIGNED
        self._election = state
        self._preferred = preferred
        self._unacked = set(self.voters.ids - {self.key.id})
        self._election_deadline = now + self._random_election_timeout()

    def resign(self, now: int) -> None:
        """Step down (graceful shutdown): the most caught-up voters are asked to stand."""
        self._now = now
        if self._role is Role.LEADER:
            self._resign(now)

    def _resign(self, now: int) -> None:
        others = [r for r in self._replicas.values() if r.key.id != self.key.id]
        others.sort(key=lambda r: (-r.end_offset, r.key.id))
        self._enter_resigned(self._election, tuple(r.key for r in others), now)

    # -- leader appends --------------------------------------------------------------

    def append(self, now: int, payloads: Sequence[bytes]) -> int:
        """Append the state machine's records; returns the offset of the last one."""
        self._now = now
        if self._role is not Role.LEADER or self._resign_requested:
            raise NotLeaderError(f"node {self.key.id} is not the leader")
        self._append(list(payloads), now)
        return self.log.end_offset - 1

    def _append(self, entries: Sequence[Entry], now: int) -> int:
        """Append and flush; returns the offset of the last voter set appended (-1)."""
        last = -1
        for offset, voters in self.log.append_as_leader(self.epoch, entries):
            self._set_voters(offset, voters)
            last = offset
        self.log.flush()  # the leader's own copy counts toward the majority
        self._on_leader_progress(now)
        return last

    def _set_voters(self, offset: int, voters: VoterSet) -> None:
        self._voter_history.append((offset, voters))
        if self._role is Role.LEADER:
            kept = {i: r for i, r in self._replicas.items() if i in voters}
            for voter in voters:
                if voter.key.id not in kept:
                    observer = self._observers.pop(voter.key, None)
                    kept[voter.key.id] = observer or _Replica(voter.key)
                else:
                    kept[voter.key.id].key = voter.key  # a static voter's directory, learned
            for node_id, replica in self._replicas.items():
                if node_id not in voters and node_id != self.key.id:
                    self._observers[replica.key] = replica
            self._replicas = kept

    def _on_leader_progress(self, now: int) -> None:
        """The leader's log end or a voter's position moved: maybe commit, wake fetches."""
        own = self._replicas.get(self.key.id)
        if own is not None:
            own.end_offset = self.log.end_offset
            own.last_fetch = own.last_caught_up = now
        self._maybe_advance_high_watermark(now)
        self._complete_parked(now, only_past_offset=True)

    def _maybe_advance_high_watermark(self, now: int) -> None:
        offsets = sorted((r.end_offset for r in self._replicas.values()), reverse=True)
        if not offsets:
            return
        candidate = offsets[len(self.voters) // 2] if len(offsets) > len(self.voters) // 2 else -1
        if candidate <= self._epoch_start_offset or candidate <= self.high_watermark:
            return
        self.high_watermark = candidate
        self._on_high_watermark(now)

    def _on_high_watermark(self, now: int) -> None:
        change = self._voter_change
        if change is not None and self.high_watermark > change.offset:
            self._voter_change = None
            self._respond_voter_change(change, E.NONE)
        if not self.is_voter and self._voter_history[-1][0] < self.high_watermark:
            self._resign_requested = True  # removed from the quorum: step down once committed
        self._complete_parked(now, only_past_offset=False)

    # -- the event loop's entry points -------------------------------------------------

    def handle(
        self, now: int, source: int, correlation: int, message: Message, *, is_response: bool
    ) -> None:
        self._now = now
        if is_response:
            expected = self._inflight.get(source)
            if expected is None or expected[0] != correlation:
                return  # late, or for a request we gave up on
            del self._inflight[source]
            assert not isinstance(message, REQUESTS), "a request delivered as a response"
            if not self._on_response(source, message, now):
                self._backoff_until[source] = now + self.config.retry_backoff_ms
            return
        self._on_request(source, correlation, message, now)

    def unreachable(self, now: int, destination: int, correlation: int) -> None:
        """The request ``correlation`` could not reach ``destination`` (refused, cut off):
        over now, not at its timeout, with that node backed off, as Kafka's raft takes
        BROKER_NOT_AVAILABLE. A follower then asks another voter for the leader at once."""
        self._now = now
        expected = self._inflight.get(destination)
        if expected is None or expected[0] != correlation:
            return
        del self._inflight[destination]
        self._backoff_until[destination] = now + self.config.retry_backoff_ms

    def poll(self, now: int) -> None:
        """Do what is due: timers, and the requests this state sends."""
        self._now = now
        for dest, (_, deadline) in list(self._inflight.items()):
            if deadline <= now:
                del self._inflight[dest]
        for dest, until in list(self._backoff_until.items()):
            if until <= now:
                del self._backoff_until[dest]
        # A timer that changes the state leaves the new state's sends to do now.
        for _ in range(len(Role)):
            state = (self._role, self.epoch)
            role = self._role
            if role is Role.LEADER:
                self._poll_leader(now)
            elif role is Role.FOLLOWER:
                self._poll_follower(now)
            elif role is Role.UNATTACHED:
                self._poll_unattached(now)
            elif role is Role.PROSPECTIVE or role is Role.CANDIDATE:
                self._poll_nominee(now)
            else:
                self._poll_resigned(now)
            if (self._role, self.epoch) == state:
                return

    # -- polls -------------------------------------------------------------------------

    def _ready(self, dest: int) -> bool:
        return dest not in self._inflight and dest not in self._backoff_until

    def _send(self, dest: int, message: Message, now: int) -> None:
        self._next_correlation += 1
        self._inflight[dest] = (self._next_correlation, now + self.config.request_timeout_ms)
        self._outbox.append(Outgoing(dest, self._next_correlation, message, False))

    def _respond(self, dest: int, correlation: int, message: Response) -> None:
        self._outbox.append(Outgoing(dest, correlation, message, True))

    def _poll_leader(self, now: int) -> None:
        if self._resign_requested:
            self._resign(now)
            return
        if now >= self._check_quorum_deadline:
            if self._others_needed() > 0:
                self._resign(now)
                return
            self._check_quorum_deadline = now + self.config.check_quorum_timeout_ms
        if now >= self._begin_quorum_deadline:
            half = self.config.fetch_timeout_ms // 2
            for voter in self.voters:
                node = voter.key.id
                replica = self._replicas.get(node)
                if node == self.key.id or not self._ready(node):
                    continue
                if replica is None or now - replica.last_fetch >= half:
                    self._send(
                        node,
                        BeginQuorumEpochRequest(
                            self.config.cluster_id, voter.key, self.key.id, self.epoch
                        ),
                        now,
                    )
            self._begin_quorum_deadline = now + half
        for parked in [p for p in self._parked if p.deadline <= now]:
            self._parked.remove(parked)
            self._answer_fetch(parked.source, parked.correlation, parked.request, now, park=False)
        change = self._voter_change
        if change is not None and change.deadline <= now:
            self._voter_change = None
            self._respond_voter_change(change, E.REQUEST_TIMED_OUT)
        stale = now - OBSERVER_SESSION_TIMEOUT_MS
        for key in [k for k, r in self._observers.items() if r.last_fetch < stale]:
            del self._observers[key]
        self._record_own_listeners(now)

    def _record_own_listeners(self, now: int) -> None:
        """A leader that learned its listeners after its epoch began (or whose voter
        entry lacks them) records them, as Kafka's leader does when its epoch begins."""
        if self.kraft_version < 1:
            if self._volatile_voters is not None:
                self._volatile_voters = self._announced(self._volatile_voters) or (
                    self._volatile_voters
                )
            return
        if self._voter_change is not None or self._voter_history[-1][0] >= self.high_watermark:
            return
        announced = self._announced(self.voters)
        if announced is not None:
            self._append([VotersChange(announced)], now)

    def _poll_follower(self, now: int) -> None:
        if now >= self._fetch_deadline:
            if self.is_voter:
                self._become_prospective(now)
            else:
                self._become_unattached(self.epoch, self.leader_id, self._election.voted, now)
            return
        if self._inflight:
            return  # one fetch at a time, whoever it went to
        leader = self.leader_id
        if not self._ready(leader):
            self._fetch_from_any_bootstrap(now)
        elif self.is_voter and now >= self._update_voter_deadline:
            self._update_voter_deadline = now + self.config.fetch_timeout_ms
            if self._should_announce():
                self._send(leader, self._update_voter_message(), now)
            else:
                self._send(leader, self._fetch_message(), now)
        else:
            self._send(leader, self._fetch_message(), now)

    def _should_announce(self) -> bool:
        """Kafka's rule: at kraft.version 1 while the log's entry for this voter differs
        from what it would announce; at 0 once to each leader (which keeps it in memory
        for an upgrade)."""
        if self.kraft_version >= 1:
            return self._announced(self.voters) is not None
        return not self._has_updated_leader and bool(self._local_endpoints)

    def _update_voter_message(self) -> UpdateVoterRequest:
        return UpdateVoterRequest(
            self.config.cluster_id,
            self.epoch,
            self.key,
            self._local_endpoints,
            self._kraft_versions,
        )

    def _announced(self, voters: VoterSet) -> VoterSet | None:
        """``voters`` with this node's entry as it announces itself, or None when that
        changes nothing, its listeners are not known yet, or it is no voter there."""
        if not self._local_endpoints:
            return None
        local = Voter(self.key, self._local_endpoints, self._kraft_versions)
        current = voters.get(self.key.id)
        if current is None or current.same_as(local):
            return None
        return voters.updated(local, ignore_directory_id=self.kraft_version < 1)

    def _fetch_message(self) -> FetchRequest | FetchSnapshotRequest:
        if self._snapshot_fetch is not None:
            return FetchSnapshotRequest(
                self.config.cluster_id,
                self.key,
                self.epoch,
                self._snapshot_fetch,
                self._snapshot_position,
                self.config.fetch_snapshot_max_bytes,
            )
        return self._log_fetch_message()

    def _log_fetch_message(self) -> FetchRequest:
        return FetchRequest(
            self.config.cluster_id,
            self.key,
            self.epoch,
            self.log.end_offset,
            self.log.last_fetched_epoch(),
            self.high_watermark,
            self.config.fetch_max_wait_ms,
            self.config.fetch_max_bytes,
        )

    def _fetch_from_any_bootstrap(self, now: int) -> None:
        """Ask a bootstrap server or any voter the log names: a non-leader's answer
        names the leader (the voters too, so that an observer whose bootstrap servers
        are gone still finds the quorum they became)."""
        if self._inflight:
            return
        known = dict.fromkeys([*self._bootstrap, *sorted(self.voters.ids)])
        ready = [n for n in known if n != self.key.id and self._ready(n)]
        if ready:
            self._send(self._rng.choice(ready), self._log_fetch_message(), now)

    def _poll_unattached(self, now: int) -> None:
        if self.is_voter and self._election_deadline == NEVER:
            self._election_deadline = now + self._random_election_timeout()
        if now >= self._election_deadline:
            if self.is_voter:
                self._become_prospective(now)
                return
            self._election_deadline = NEVER
        self._fetch_from_any_bootstrap(now)

    def _poll_nominee(self, now: int) -> None:
        if now >= self._election_deadline:
            if self._role is Role.CANDIDATE:
                self._become_prospective(now)
            else:
                self._prospective_lost(now)
            return
        if self._role is Role.CANDIDATE and self._election_lost():
            return  # wait out the timeout, then pre-vote again
        pre_vote = self._role is Role.PROSPECTIVE
        for voter in self._election_voters:
            node = voter.key.id
            if node == self.key.id or node in self._votes or not self._ready(node):
                continue
            self._send(
                node,
                VoteRequest(
                    self.config.cluster_id,
                    voter.key,
                    self.epoch,
                    self.key,
                    self.log.last_fetched_epoch(),
                    self.log.end_offset,
                    pre_vote,
                ),
                now,
            )

    def _prospective_lost(self, now: int) -> None:
        """Back to following in this epoch, keeping any vote cast in it."""
        election = self._election
        if election.leader_id >= 0 and election.leader_id != self.key.id:
            self._become_follower(self.epoch, election.leader_id, now)
        else:
            self._become_unattached(self.epoch, -1, election.voted, now)

    def _poll_resigned(self, now: int) -> None:
        if now >= self._election_deadline:
            self._become_unattached(self.epoch + 1, -1, None, now)
            return
        for node in sorted(self._unacked):
            if self._ready(node):
                self._send(
                    node,
                    EndQuorumEpochRequest(
                        self.config.cluster_id, self.key.id, self.epoch, self._preferred
                    ),
                    now,
                )

    # -- shared response handling ------------------------------------------------------

    def _check_consistent_leader(self, leader_id: int, epoch: int) -> None:
        if (
            epoch == self.epoch
            and leader_id >= 0
            and leader_id != self.key.id
            and self.leader_id >= 0
            and leader_id != self.leader_id
        ):
            raise RaftFatalError(
                f"epoch {epoch} has leader {self.leader_id}, but a peer named {leader_id}"
            )

    def _maybe_transition(self, leader_id: int, epoch: int, now: int) -> None:
        """A message carried ``(leader_id, epoch)``: follow it if it is news. A message
        naming this node as a leader it is not (it lost its disk since) names no one."""
        self._check_consistent_leader(leader_id, epoch)
        if leader_id == self.key.id and self._role not in (Role.LEADER, Role.RESIGNED):
            leader_id = -1
        if epoch > self.epoch:
            if leader_id >= 0 and leader_id != self.key.id:
                self._become_follower(epoch, leader_id, now)
            else:
                self._become_unattached(epoch, -1, None, now)
        elif (
            epoch == self.epoch
            and leader_id >= 0
            and (self.leader_id < 0 or self._role is Role.UNATTACHED)
            and self._role is not Role.LEADER
        ):
            # A leader newly heard of, or (an observer whose fetches timed out) heard
            # from again.
            self._become_follower(epoch, leader_id, now)

    def _common_response(
        self, error: ErrorCode, leader_id: int, epoch: int, now: int
    ) -> bool | None:
        """Kafka's shared rules for a response's (error, leader, epoch): whether the
        response was good (False: back off before asking that node again) once it is
        fully handled, None to go on with it. An answer with an error is never good:
        asked again at once, a node that cannot help would answer again at once."""
        if epoch < self.epoch or error == E.UNKNOWN_LEADER_EPOCH:
            return error == E.NONE
        if error == E.INVALID_REQUEST:
            raise RaftFatalError("a peer answered INVALID_REQUEST")
        self._maybe_transition(leader_id, epoch, now)
        if epoch > self.epoch or error != E.NONE:
            return error == E.NONE
        return None

    def _on_response(self, source: int, message: Message, now: int) -> bool:
        if isinstance(message, VoteResponse):
            return self._on_vote_response(source, message, now)
        if isinstance(message, FetchResponse):
            return self._on_fetch_response(source, message, now)
        if isinstance(message, FetchSnapshotResponse):
            return self._on_fetch_snapshot_response(source, message, now)
        if isinstance(message, UpdateVoterResponse):
            return self._on_update_voter_response(source, message, now)
        if isinstance(message, BeginQuorumEpochResponse | EndQuorumEpochResponse):
            if message.top_error != E.NONE:
                return False
            done = self._common_response(
                message.error, message.leader_id, message.leader_epoch, now
            )
            if done is not None:
                return done
            if isinstance(message, EndQuorumEpochResponse) and self._role is Role.RESIGNED:
                self._unacked.discard(source)
            return True
        return True

    # -- Vote ------------------------------------------------------------------------

    def _on_vote_response(self, source: int, response: VoteResponse, now: int) -> bool:
        if response.top_error == E.UNSUPPORTED_VERSION and self._role is Role.PROSPECTIVE:
            self._become_candidate(now)  # a voter without pre-vote
            return True
        if response.top_error != E.NONE:
            return False
        done = self._common_response(response.error, response.leader_id, response.leader_epoch, now)
        if done is not None:
            return done
        if self._role not in (Role.PROSPECTIVE, Role.CANDIDATE):
            return True
        if source not in self._election_voters:
            return True
        self._votes[source] = response.vote_granted
        if response.vote_granted:
            self._maybe_win(now)
        elif self._role is Role.PROSPECTIVE and self._election_lost():
            self._prospective_lost(now)
        return True

    def _on_vote_request(
        self, source: int, correlation: int, request: VoteRequest, now: int
    ) -> None:
        def reply(error: ErrorCode, granted: bool = False, top: ErrorCode = E.NONE) -> None:
            self._respond(
                source,
                correlation,
                VoteResponse(error, self.leader_id, self.epoch, granted, top),
            )

        if self._wrong_cluster(request.cluster_id):
            reply(E.NONE, top=E.INCONSISTENT_CLUSTER_ID)
            return
        illegal = (
            request.last_offset_epoch > request.epoch
            if request.pre_vote
            else request.last_offset_epoch >= request.epoch
        )
        if illegal or request.last_offset < 0 or request.last_offset_epoch < 0:
            reply(E.INVALID_REQUEST)
            return
        if request.epoch < self.epoch:
            reply(E.FENCED_LEADER_EPOCH)
            return
        if request.candidate.id < 0:
            reply(E.INVALID_REQUEST)
            return
        if request.epoch > self.epoch:
            self._become_unattached(request.epoch, -1, None, now)
        if not self._is_addressed_to_me(request.voter):
            reply(E.INVALID_VOTER_KEY)
            return
        up_to_date = OffsetAndEpoch(
            request.last_offset_epoch, request.last_offset
        ) >= OffsetAndEpoch(self.log.last_fetched_epoch(), self.log.end_offset)
        granted = self._can_grant(request.candidate, up_to_date, request.pre_vote)
        if granted and not request.pre_vote and self._election.voted is None:
            state = self._election._replace(voted=request.candidate)
            self._write(state)
            self._election = state
            self._election_deadline = now + self._random_election_timeout()
        reply(E.NONE, granted)

    def _can_grant(self, candidate: ReplicaKey, up_to_date: bool, pre_vote: bool) -> bool:
        role = self._role
        if role in (Role.LEADER, Role.RESIGNED):
            return False
        if role is Role.FOLLOWER:
            return pre_vote and not self._has_fetched_from_leader and up_to_date
        if role is Role.CANDIDATE:
            return pre_vote and up_to_date
        # unattached or prospective
        if pre_vote:
            return up_to_date
        voted = self._election.voted
        if voted is not None:
            return voted.id == candidate.id and (
                voted.directory_id is None or voted.directory_id == candidate.directory_id
            )
        if self._election.leader_id >= 0:
            return False
        return up_to_date

    def _is_addressed_to_me(self, voter: ReplicaKey) -> bool:
        if voter.id < 0:
            return True
        if voter.id != self.key.id:
            return False
        return voter.directory_id is None or voter.directory_id == self.key.directory_id

    def _wrong_cluster(self, cluster_id: str | None) -> bool:
        return cluster_id is not None and cluster_id != self.config.cluster_id

    # -- Begin/EndQuorumEpoch ------------------------------------------------------------

    def _leader_notice(
        self, cluster_id: str | None, leader_id: int, epoch: int, now: int
    ) -> tuple[ErrorCode, ErrorCode]:
        """(error, top-level error) for a leader's Begin/EndQuorumEpoch, after following
        the leader it names if that is news."""
        if self._wrong_cluster(cluster_id):
            return E.NONE, E.INCONSISTENT_CLUSTER_ID
        error = self._voter_only_check(leader_id, epoch)
        if error == E.NONE:
            self._maybe_transition(leader_id, epoch, now)
        return error, E.NONE

    def _on_begin_quorum_epoch(
        self, source: int, correlation: int, request: BeginQuorumEpochRequest, now: int
    ) -> None:
        error, top = self._leader_notice(
            request.cluster_id, request.leader_id, request.leader_epoch, now
        )
        if error == top == E.NONE and not self._is_addressed_to_me(request.voter):
            error = E.INVALID_VOTER_KEY
        response = BeginQuorumEpochResponse(error, self.leader_id, self.epoch, top)
        self._respond(source, correlation, response)

    def _on_end_quorum_epoch(
        self, source: int, correlation: int, request: EndQuorumEpochRequest, now: int
    ) -> None:
        error, top = self._leader_notice(
            request.cluster_id, request.leader_id, request.leader_epoch, now
        )
        if (
            error == top == E.NONE
            and self._role is Role.FOLLOWER
            and self.leader_id == request.leader_id
        ):
            # The resigning leader's first choice stands at once, the others later.
            candidates = request.preferred_candidates
            position = next((i for i, k in enumerate(candidates) if k.matches(self.key)), -1)
            backoff = self._successor_backoff(position, len(candidates))
            self._fetch_deadline = min(self._fetch_deadline, now + backoff)
        response = EndQuorumEpochResponse(error, self.leader_id, self.epoch, top)
        self._respond(source, correlation, response)

    def _successor_backoff(self, position: int, count: int) -> int:
        most = self.config.election_backoff_max_ms
        if position == 0:
            return 0
        if position < 0 or position >= count:
            return most
        return min(most, (most >> (count - 1)) << (position - 1))

    def _voter_only_check(self, leader_id: int, epoch: int) -> ErrorCode:
        if epoch < self.epoch:
            return E.FENCED_LEADER_EPOCH
        if leader_id < 0:
            return E.INVALID_REQUEST
        return E.NONE

    # -- Fetch, leader side ------------------------------------------------------------

    def _fetch_error(self, error: ErrorCode) -> FetchResponse:
        return FetchResponse(
            error, self.leader_id, self.epoch, self.high_watermark, self.log.start_offset
        )

    def _leader_only_check(self, epoch: int) -> ErrorCode:
        if epoch < self.epoch:
            return E.FENCED_LEADER_EPOCH
        if epoch > self.epoch:
            return E.UNKNOWN_LEADER_EPOCH
        if self._role is not Role.LEADER:
            return E.NOT_LEADER_OR_FOLLOWER
        return E.NONE

    def _on_fetch_request(
        self, source: int, correlation: int, request: FetchRequest, now: int
    ) -> None:
        if self._wrong_cluster(request.cluster_id):
            self._respond(
                source,
                correlation,
                self._fetch_error(E.NONE)._replace(top_error=E.INCONSISTENT_CLUSTER_ID),
            )
            return
        self._answer_fetch(source, correlation, request, now, park=True)

    def _answer_fetch(
        self, source: int, correlation: int, request: FetchRequest, now: int, *, park: bool
    ) -> None:
        if (
            request.max_wait_ms < 0
            or request.fetch_offset < 0
            or request.last_fetched_epoch < 0
            or request.last_fetched_epoch > request.current_leader_epoch
        ):
            self._respond(source, correlation, self._fetch_error(E.INVALID_REQUEST))
            return
        error = self._leader_only_check(request.current_leader_epoch)
        if error != E.NONE:
            self._respond(source, correlation, self._fetch_error(error))
            return
        diverging, snapshot = self._validate_fetch_position(
            request.fetch_offset, request.last_fetched_epoch
        )
        records = None
        if diverging is None and snapshot is None:
            records = self.log.read(request.fetch_offset, request.max_bytes)
            self._record_fetch(request.replica, request.fetch_offset, now)
        response = FetchResponse(
            E.NONE,
            self.key.id,
            self.epoch,
            self.high_watermark,
            self.log.start_offset,
            records,
            diverging,
            snapshot,
        )
        # The fetch may have moved the high watermark or ended this node's leadership.
        if self._role is not Role.LEADER:
            self._respond(source, correlation, self._fetch_error(E.NOT_LEADER_OR_FOLLOWER))
            return
        response = response._replace(high_watermark=self.high_watermark)
        answer_now = (
            not park
            or records is not None
            or diverging is not None
            or snapshot is not None
            or request.max_wait_ms == 0
            or request.high_watermark < self.high_watermark
        )
        if answer_now:
            self._respond(source, correlation, response)
        else:
            self._parked.append(
                _ParkedFetch(source, correlation, request, now + request.max_wait_ms)
            )

    def _complete_parked(self, now: int, *, only_past_offset: bool) -> None:
        if not self._parked:
            return
        end = self.log.end_offset
        ready = [p for p in self._parked if not only_past_offset or p.request.fetch_offset < end]
        for parked in ready:
            self._parked.remove(parked)
        for parked in ready:
            if self._role is not Role.LEADER:
                break
            self._answer_fetch(parked.source, parked.correlation, parked.request, now, park=False)

    def _validate_fetch_position(
        self, offset: int, last_epoch: int
    ) -> tuple[OffsetAndEpoch | None, OffsetAndEpoch | None]:
        """(diverging epoch, snapshot id) for a fetch at ``offset`` after ``last_epoch``."""
        log = self.log
        latest = log.latest_snapshot()
        if offset == 0 and latest is not None and latest != BOOTSTRAP_SNAPSHOT:
            return None, latest
        if log.start_offset == 0 and offset == 0:
            return None, None
        earliest = log.earliest_snapshot()
        if earliest is not None and (
            offset < log.start_offset
            or (offset == log.start_offset and last_epoch != earliest.epoch)
            or last_epoch < earliest.epoch
        ):
            return None, latest
        end = log.end_offset_for_epoch(last_epoch)
        if end.epoch != last_epoch or end.offset < offset:
            return end, None
        return None, None

    def _record_fetch(self, key: ReplicaKey, offset: int, now: int) -> None:
        if key.id < 0:
            return
        if key.id == self.key.id:
            raise RaftFatalError(f"leader {self.key.id} received a fetch from itself")
        replica = self._replicas.get(key.id)
        if replica is None or not replica.key.matches(key):
            replica = self._observers.get(key)
            if replica is None:
                replica = self._observers[key] = _Replica(key)
            replica.fetched(now, offset, self.log.end_offset)
            return
        replica.fetched(now, offset, self.log.end_offset)
        self._count_for_check_quorum(key.id, now)
        self._maybe_advance_high_watermark(now)

    def _others_needed(self) -> int:
        """How many other voters must fetch for the leader to know it still leads."""
        return self.voters.majority - (1 if self.is_voter else 0)

    def _count_for_check_quorum(self, node_id: int, now: int) -> None:
        self._fetched_voters.add(node_id)
        if len(self._fetched_voters) >= self._others_needed():
            self._fetched_voters.clear()
            self._check_quorum_deadline = now + self.config.check_quorum_timeout_ms

    # -- Fetch, follower side ----------------------------------------------------------

    def _on_fetch_response(self, source: int, response: FetchResponse, now: int) -> bool:
        if response.top_error != E.NONE:
            return False
        done = self._common_response(response.error, response.leader_id, response.leader_epoch, now)
        if done is not None:
            return done
        if self._role is not Role.FOLLOWER or source != self.leader_id:
            return True
        if response.diverging_epoch is not None:
            self._truncate_to_diverging(response.diverging_epoch)
        elif response.snapshot_id is not None:
            if response.snapshot_id.offset < 0 or response.snapshot_id.epoch < 0:
                return False
            self.log.begin_snapshot(response.snapshot_id)
            self._snapshot_fetch = response.snapshot_id
            self._snapshot_position = 0
        else:
            if response.records is not None:
                changes = self.log.append_as_follower(response.records, self.epoch)
                for offset, voters in changes:
                    self._voter_history.append((offset, voters))
                if self.is_voter or self.can_become_voter:
                    self.log.flush()  # a voter's next fetch offset must be durable
            if response.high_watermark >= 0:
                self._set_follower_high_watermark(min(self.log.end_offset, response.high_watermark))
        self._fetched(now)
        return True

    def _fetched(self, now: int) -> None:
        self._fetch_deadline = max(self._fetch_deadline, now + self.config.fetch_timeout_ms)
        self._has_fetched_from_leader = True

    def _set_follower_high_watermark(self, hw: int) -> None:
        if hw > self.high_watermark:
            self.high_watermark = hw

    def _truncate_to_diverging(self, diverging: OffsetAndEpoch) -> None:
        if diverging.offset < self.high_watermark:
            raise RaftFatalError(
                f"node {self.key.id}: the leader's log diverges at {diverging.offset},"
                f" below the high watermark {self.high_watermark}"
            )
        log = self.log
        if diverging.epoch == 0:
            target = min(diverging.offset, log.end_offset)
        else:
            local = log.end_offset_for_epoch(diverging.epoch)
            target = (
                min(local.offset, diverging.offset)
                if local.epoch == diverging.epoch
                else local.offset
            )
        if target < self.high_watermark:
            raise RaftFatalError(
                f"node {self.key.id}: truncation to {target} would go below the high"
                f" watermark {self.high_watermark}"
            )
        log.truncate_to(target)
        self._voter_history = [(o, v) for o, v in self._voter_history if o < target]

    def _on_fetch_snapshot_response(
        self, source: int, response: FetchSnapshotResponse, now: int
    ) -> bool:
        if response.top_error != E.NONE:
            return False
        if response.error == E.SNAPSHOT_NOT_FOUND:
            self._snapshot_fetch = None
            self._fetched(now)
            return True
        done = self._common_response(response.error, response.leader_id, response.leader_epoch, now)
        if done is not None:
            return done
        if (
            self._role is not Role.FOLLOWER
            or source != self.leader_id
            or self._snapshot_fetch is None
        ):
            return True
        if response.snapshot_id.offset < 0 or response.snapshot_id.epoch < 0:
            self._snapshot_fetch = None
            self._fetched(now)
            return True
        if (
            response.snapshot_id != self._snapshot_fetch
            or response.position != self._snapshot_position
        ):
            raise RaftFatalError(
                f"node {self.key.id}: snapshot chunk {response.snapshot_id}@{response.position}"
                f" does not follow {self._snapshot_fetch}@{self._snapshot_position}"
            )
        size = self.log.write_snapshot_chunk(self._snapshot_fetch, response.position, response.data)
        self._snapshot_position = size
        if size >= response.size:
            snapshot = self._snapshot_fetch
            self.log.install_snapshot(snapshot)
            self._snapshot_fetch = None
            self._voter_history = [self._voter_history[0], *self.log.voter_history()]
            self._set_follower_high_watermark(snapshot.offset)
        self._fetched(now)
        return True

    # -- FetchSnapshot, leader side ------------------------------------------------------

    def _on_fetch_snapshot_request(
        self, source: int, correlation: int, request: FetchSnapshotRequest, now: int
    ) -> None:
        def reply(
            error: ErrorCode,
            top: ErrorCode = E.NONE,
            *,
            size: int = -1,
            position: int = -1,
            data: bytes = b"",
        ) -> None:
            response = FetchSnapshotResponse(
                error, self.leader_id, self.epoch, request.snapshot_id, size, position, data, top
            )
            self._respond(source, correlation, response)

        if self._wrong_cluster(request.cluster_id):
            reply(E.NONE, E.INCONSISTENT_CLUSTER_ID)
            return
        error = self._leader_only_check(request.current_leader_epoch)
        if error != E.NONE:
            reply(error)
            return
        size = self.log.snapshot_size(request.snapshot_id)
        if size is None or request.snapshot_id == BOOTSTRAP_SNAPSHOT:
            reply(E.SNAPSHOT_NOT_FOUND)
            return
        if request.position < 0 or request.position >= size:
            reply(E.POSITION_OUT_OF_RANGE)
            return
        data = self.log.read_snapshot(
            request.snapshot_id, request.position, min(request.max_bytes, size)
        )
        replica = self._replicas.get(request.replica.id)
        if replica is not None and replica.key.matches(request.replica):
            self._count_for_check_quorum(request.replica.id, now)
        reply(E.NONE, size=size, position=request.position, data=data)

    # -- voter changes (KIP-853) --------------------------------------------------------

    def _voter_change_refused(
        self, cluster_id: str | None, voter: ReplicaKey
    ) -> tuple[ErrorCode, str | None] | None:
        """Why an AddRaftVoter or RemoveRaftVoter cannot go ahead now, or None."""
        if self._wrong_cluster(cluster_id):
            return E.INCONSISTENT_CLUSTER_ID, "the request is for another cluster"
        if self._role is not Role.LEADER or self._resign_requested:
            return E.NOT_LEADER_OR_FOLLOWER, None
        if voter.id < 0 or voter.directory_id is None:
            return E.INVALID_REQUEST, "the request names no voter id and directory id"
        if self.kraft_version < 1:
            return E.UNSUPPORTED_VERSION, "the quorum has static voters (kraft.version 0)"
        if (
            self._voter_change is not None
            or self.high_watermark < 0
            or self._voter_history[-1][0] >= self.high_watermark
        ):
            return (
                E.REQUEST_TIMED_OUT,
                "another voter change is in progress or not committed yet; retry",
            )
        return None

    def _begin_voter_change(
        self, source: int, correlation: int, voters: VoterSet, now: int, *, is_add: bool
    ) -> None:
        deadline = now + self.config.request_timeout_ms
        # Pending before the append: the HW may pass the record within it.
        change = _VoterChange(source, correlation, NEVER, deadline, is_add)
        self._voter_change = change
        offset = self._append([VotersChange(voters)], now)
        if self._voter_change is change:
            self._voter_change = change._replace(offset=offset)
            self._on_high_watermark(now)

    def _on_add_voter(
        self, source: int, correlation: int, request: AddVoterRequest, now: int
    ) -> None:
        refused = self._voter_change_refused(request.cluster_id, request.voter)
        if refused is None and request.voter.id in self.voters:
            refused = E.DUPLICATE_VOTER, f"node {request.voter.id} is already a voter"
        observer = self._observers.get(request.voter)
        if refused is None and (
            observer is None
            or observer.last_caught_up <= 0
            or observer.last_fetch < now - CAUGHT_UP_WINDOW_MS
        ):
            refused = (
                E.REQUEST_TIMED_OUT,
                f"replica {request.voter.id} has not caught up with the leader",
            )
        if refused is not None:
            self._respond(source, correlation, AddVoterResponse(*refused))
            return
        voters = self.voters.with_voter(Voter(request.voter, request.endpoints))
        self._begin_voter_change(source, correlation, voters, now, is_add=True)

    def _on_remove_voter(
        self, source: int, correlation: int, request: RemoveVoterRequest, now: int
    ) -> None:
        refused = self._voter_change_refused(request.cluster_id, request.voter)
        current = self.voters.get(request.voter.id)
        if refused is None and (
            current is None or current.key != request.voter or len(self.voters) <= 1
        ):
            refused = E.VOTER_NOT_FOUND, f"{request.voter} is not a voter that can be removed"
        if refused is not None:
            self._respond(source, correlation, RemoveVoterResponse(*refused))
            return
        voters = self.voters.without(request.voter)
        self._begin_voter_change(source, correlation, voters, now, is_add=False)

    def _respond_voter_change(self, change: _VoterChange, error: ErrorCode) -> None:
        message = AddVoterResponse(error) if change.is_add else RemoveVoterResponse(error)
        self._respond(change.source, change.correlation, message)

    def _on_update_voter(
        self, source: int, correlation: int, request: UpdateVoterRequest, now: int
    ) -> None:
        """A voter's listeners and kraft.version range, checked in Kafka's order and
        answered at once (the VotersRecord commits later, or at kraft.version 0 the
        leader keeps them in memory for an upgrade)."""

        def reply(error: ErrorCode) -> None:
            response = UpdateVoterResponse(error, self.leader_id, self.epoch)
            self._respond(source, correlation, response)

        low, high = request.kraft_versions
        listener = self._local_endpoints[0].listener if self._local_endpoints else None
        if self._wrong_cluster(request.cluster_id):
            reply(E.INCONSISTENT_CLUSTER_ID)
            return
        error = self._leader_only_check(request.current_leader_epoch)
        if error != E.NONE:
            reply(error)
            return
        if (
            request.voter.directory_id is None
            or (listener is not None and all(e.listener != listener for e in request.endpoints))
            or low < 0
            or high < low
        ):
            reply(E.INVALID_REQUEST)
            return
        kraft = self.kraft_version
        if (
            self._voter_change is not None
            or self.high_watermark < 0
            or (kraft >= 1 and self._voter_history[-1][0] >= self.high_watermark)
            or (kraft < 1 and self._volatile_voters is None)
        ):
            reply(E.REQUEST_TIMED_OUT)
            return
        if not low <= kraft <= high:
            reply(E.INVALID_REQUEST)
            return
        voter = Voter(request.voter, request.endpoints, request.kraft_versions)
        current = self.voters if kraft >= 1 else self._volatile_voters
        assert current is not None
        updated = current.updated(voter, ignore_directory_id=kraft < 1)
        if updated is None:
            reply(E.VOTER_NOT_FOUND)
            return
        if kraft >= 1:
            self._append([VotersChange(updated)], now)
        else:
            self._volatile_voters = updated
        reply(E.NONE)

    def _on_update_voter_response(
        self, source: int, response: UpdateVoterResponse, now: int
    ) -> bool:
        if response.error == E.INVALID_REQUEST:
            return False  # refused (a listener the leader lacks): announced again later
        if response.error != E.UNSUPPORTED_VERSION:  # else a leader that takes none
            done = self._common_response(
                response.error, response.leader_id, response.leader_epoch, now
            )
            if done is not None:
                return done
        if self._role is Role.FOLLOWER and source == self.leader_id:
            self._has_updated_leader = True
            self._fetch_deadline = max(self._fetch_deadline, now + self.config.fetch_timeout_ms)
        return True

    def upgrade_kraft_version(self, now: int, version: int, *, validate_only: bool) -> bool:
        """UpdateFeatures of kraft.version, as Kafka's leader checks it; True when the
        upgrade was appended (a VotersRecord of the voters as they announced themselves).
        Raises :class:`NotLeaderError`, or :class:`KRaftUpgradeError` saying why not."""
        self._now = now
        if self._role is not Role.LEADER or self._resign_requested:
            raise NotLeaderError(f"node {self.key.id} is not the leader")
        current = self.kraft_version
        if version == current:
            return False
        if version < current:
            raise KRaftUpgradeError(
                f"Invalid upgrade of kraft.version from version {current} to {version}"
                " because the new version is a downgrade"
            )
        voters = self._volatile_voters
        assert voters is not None  # a leader at kraft.version 0 keeps them
        behind = [
            v.key.id for v in voters if not v.kraft_versions[0] <= version <= v.kraft_versions[1]
        ]
        if behind:
            raise KRaftUpgradeError(
                f"Invalid upgrade of kraft.version to {version} because not all of the"
                f" voters support it (voters {behind} have not said they do; a voter says so"
                " within controller.quorum.fetch.timeout.ms of following this leader);"
                " retry"
            )
        unknown = sorted(v.key.id for v in voters if v.key.directory_id is None)
        if unknown:
            raise KRaftUpgradeError(
                f"Invalid upgrade of kraft.version to {version}: voters {unknown} have not"
                " told this leader their directory ids yet (each voter does within"
                " controller.quorum.fetch.timeout.ms of following it); retry"
            )
        if self._voter_change is not None:
            raise KRaftUpgradeError(
                f"Unable to upgrade version for kraft.version to {version} due to changing voters"
            )
        if validate_only:
            return False
        self._append([VotersChange(voters)], now)
        self._volatile_voters = None
        return True

    # -- DescribeQuorum ------------------------------------------------------------------

    def describe(self, now: int) -> DescribeQuorumResponse:
        if self._role is not Role.LEADER:
            return DescribeQuorumResponse(E.NOT_LEADER_OR_FOLLOWER, self.leader_id, self.epoch, -1)
        self._on_leader_progress(now)
        voters = []
        for voter in self.voters:
            replica = self._replicas.get(voter.key.id) or _Replica(voter.key)
            voters.append(replica.describe())
        observers = tuple(r.describe() for r in self._observers.values())
        return DescribeQuorumResponse(
            E.NONE, self.key.id, self.epoch, self.high_watermark, tuple(voters), observers
        )

    # -- request dispatch ----------------------------------------------------------------

    def _on_request(self, source: int, correlation: int, message: Message, now: int) -> None:
        if isinstance(message, FetchRequest):
            self._on_fetch_request(source, correlation, message, now)
        elif isinstance(message, VoteRequest):
            self._on_vote_request(source, correlation, message, now)
        elif isinstance(message, BeginQuorumEpochRequest):
            self._on_begin_quorum_epoch(source, correlation, message, now)
        elif isinstance(message, EndQuorumEpochRequest):
            self._on_end_quorum_epoch(source, correlation, message, now)
        elif isinstance(message, FetchSnapshotRequest):
            self._on_fetch_snapshot_request(source, correlation, message, now)
        elif isinstance(message, AddVoterRequest):
            self._on_add_voter(source, correlation, message, now)
        elif isinstance(message, RemoveVoterRequest):
            self._on_remove_voter(source, correlation, message, now)
        elif isinstance(message, UpdateVoterRequest):
            self._on_update_voter(source, correlation, message, now)
        elif isinstance(message, DescribeQuorumRequest):
            self._respond(source, correlation, self.describe(now))
        else:
            raise TypeError(f"not a KRaft request: {type(message).__name__}")
