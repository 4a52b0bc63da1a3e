"""Seeded simulation of the classic group coordinator: random interleavings of consumers
joining (dynamic with JoinGroup v0/v3, added at once, and v4+, after MEMBER_ID_REQUIRED;
static with a group.instance.id), syncing, heartbeating, committing, rejoining, leaving,
pausing, processing long batches, dying silently and restarting under the same instance
id, of admins (simple commits, member removal, OffsetDelete, DeleteGroups), of clock
jumps, storage failures and replays of ``__consumer_offsets``. The invariants are checked
after every step; then the random events stop, the live consumers go on polling, and
every group must settle; then they all stop, and every parked reply must have been sent.

Why a simulation: the coordinator is a sans-I/O state machine (DESIGN.md section 2), so
a hundred thousand steps cost seconds, and the bugs that matter (two owners of a
partition in one generation, offsets going back, a reply never sent, a group that never
settles) only show in interleavings that step-by-step tests do not think of.

The consumers behave as Apache Kafka's Java consumer does (AbstractCoordinator and
ConsumerCoordinator, eager protocol): one JoinGroup or SyncGroup in flight at a time and
nothing else from that consumer meanwhile (a broker reads a connection's requests one at
a time); MEMBER_ID_REQUIRED and REBALANCE_IN_PROGRESS mean rejoin, UNKNOWN_MEMBER_ID
means forget the member id and rejoin, ILLEGAL_GENERATION means forget the generation and
rejoin. A failure names its seed and lists the steps; ``World(seed).run()`` replays it.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from millpond.broker.groups import records
from millpond.broker.groups.classic import ClassicGroup, GroupState
from millpond.broker.groups.coordinator import Caller, OffsetToCommit
from millpond.broker.groups.shard_state import join_key, session_key, sync_key
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.heartbeat_request import HeartbeatRequest
from millpond.wire.generated.api.join_group_request import (
    JoinGroupRequest,
    JoinGroupRequestProtocol,
)
from millpond.wire.generated.api.join_group_response import (
    JoinGroupResponse,
    JoinGroupResponseMember,
)
from millpond.wire.generated.api.leave_group_request import MemberIdentity
from millpond.wire.generated.api.sync_group_request import (
    SyncGroupRequest,
    SyncGroupRequestAssignment,
)
from millpond.wire.generated.api.sync_group_response import SyncGroupResponse

from .helpers import GROUP, Client, Harness, subscription

SEEDS = range(80)
STEPS = 1500
TOPIC = "t"
PARTITIONS = 6
GROUPS = ("g0", "g1")
#: Only ever gets simple commits (an admin, or a consumer that assigns itself partitions).
SIMPLE_GROUP = "simple"
MAX_LIVE_PER_GROUP = 7
SESSION_MS = (6_000, 10_000)
#: Static members get longer sessions, as they are meant to (to survive a restart): a
#: group then often completes a rebalance without one, and keeps it.
STATIC_SESSION_MS = (6_000, 30_000)
REBALANCE_MS = (5_000, 15_000)
LONGEST_MS = max(SESSION_MS[1], STATIC_SESSION_MS[1], REBALANCE_MS[1])
#: Every consumer can use "range", so all can share a group; which protocol the group
#: picks depends on the members' preferences, and may change with a new member.
PREFERENCES = (("range",), ("range", "roundrobin"), ("roundrobin", "range"))
#: Partitions are assigned only for TOPIC; the other subscription changes the metadata.
SUBSCRIPTIONS = ((TOPIC,), (TOPIC, "u"))

# A client's states (Kafka's MemberState, split by what is in flight).
UNJOINED = "unjoined"  # must send a JoinGroup
JOINING = "joining"  # JoinGroup in flight
JOINED = "joined"  # JoinGroup answered: must send its SyncGroup
SYNCING = "syncing"  # SyncGroup in flight
STABLE = "stable"
# Terminal: the process stopped talking (possibly with a request in flight), left the
# group, was fenced by a newer process with its group.instance.id, or found the group
# full (GROUP_MAX_SIZE_REACHED is fatal to Kafka's consumer).
DEAD, LEFT, FENCED, REFUSED = "dead", "left", "fenced", "refused"
TERMINAL = frozenset({DEAD, LEFT, FENCED, REFUSED})


#: (group, incarnation, generation): a deleted group starts again at generation 1.
GenerationKey = tuple[str, int, int]


def encode(partitions: tuple[int, ...]) -> bytes:
    return bytes(partitions)


def decode(assignment: bytes) -> tuple[int, ...]:
    return tuple(assignment)


def owner_key(member_id: str, instance_id: str | None) -> str:
    """Who holds an assignment: the processes of one static member share its instance
    id, and the coordinator hands a restarted one the assignment of the old on purpose."""
    return f"instance:{instance_id}" if instance_id is not None else f"member:{member_id}"


def short(member_id: str | None) -> str:
    """``c3-0000…000a`` as ``c3-10``: the logs stay readable."""
    if not member_id:
        return "-"
    prefix, _, number = member_id.rpartition("-")
    try:
        return f"{prefix}-{int(number, 16)}"
    except ValueError:
        return member_id


def code_name(code: int) -> str:
    return ErrorCode(code).name


@dataclass
class SimClient:
    """One consumer process, reacting to the coordinator's answers as Kafka's does."""

    world: World
    name: str
    group: str
    instance_id: str | None
    version: int
    session_ms: int
    rebalance_ms: int
    protocols: tuple[str, ...] = ("range",)
    topics: tuple[str, ...] = (TOPIC,)
    state: str = UNJOINED
    member_id: str = ""
    generation: int = -1
    protocol: str | None = None
    join_members: list[JoinGroupResponseMember] = field(default_factory=list)
    is_leader: bool = False
    skip_assignment: bool = False
    #: The generation of the last JoinGroup answer, and of the SyncGroup in flight.
    joined_key: GenerationKey = ("", 0, -1)
    sync_key: GenerationKey = ("", 0, -1)
    partitions: tuple[int, ...] = ()
    positions: dict[int, int] = field(default_factory=dict)
    #: An older process of a restarted static member: it may be fenced.
    superseded: bool = False
    #: A superseded process still running: it stops at its first error.
    zombie: bool = False
    #: Silent until then (a long GC pause), whatever it must send.
    paused_until: int = 0
    #: Busy with records until then: its heartbeat thread goes on, and so do its
    #: commits, but it rejoins only when its poll loop is back (KIP-62).
    processing_until: int = 0
    #: A rebalance was announced (by a heartbeat or a commit): rejoin at the next poll.
    rejoin_needed: bool = False

    @property
    def alive(self) -> bool:
        return self.state not in TERMINAL

    @property
    def busy(self) -> bool:
        return self.state in (JOINING, SYNCING)

    @property
    def processing(self) -> bool:
        return self.world.h.now < self.processing_until

    @property
    def ready(self) -> bool:
        """Running, nothing in flight, not paused: able to send."""
        return self.alive and not self.busy and self.world.h.now >= self.paused_until

    def __str__(self) -> str:
        return f"{self.name}[{short(self.member_id)} gen {self.generation} {self.state}]"

    # -- requests ------------------------------------------------------------------------

    def act(self) -> None:
        """The next thing a polling consumer does. A zombie, shutting down, never joins
        again: two processes joining with one instance id would fence each other."""
        if self.state == STABLE and self.rejoin_needed and not self.processing:
            self.rejoin_or_stop()
        if self.state == UNJOINED and self.zombie:
            self.world.say(f"{self} stops")
            self.state = DEAD
        elif self.state == UNJOINED:
            self.join()
        elif self.state == JOINED:
            self.sync()
        elif self.state == STABLE:
            self.heartbeat()

    def join(self) -> None:
        w = self.world
        w.say(f"{self} JoinGroup v{self.version}")
        self.forget_partitions()
        self.state = JOINING
        self.rejoin_needed = False
        request = JoinGroupRequest(
            group_id=self.group,
            session_timeout_ms=self.session_ms,
            # JoinGroup v0 has no rebalance timeout: the session timeout stands in.
            rebalance_timeout_ms=self.rebalance_ms if self.version > 0 else -1,
            member_id=self.member_id,
            group_instance_id=self.instance_id,
            protocol_type="consumer",
            protocols=[
                JoinGroupRequestProtocol(name=name, metadata=subscription(*self.topics))
                for name in self.protocols
            ],
        )
        reply = w.tracked(f"JoinGroup of {self.name}", self.on_join)
        w.h.coordinator.join(Caller(self.name, "/10.0.0.1"), request, self.version, w.h.now, reply)

    def sync(self) -> None:
        w = self.world
        assignments: list[SyncGroupRequestAssignment] = []
        line = f"{self} SyncGroup"
        if self.is_leader and not self.skip_assignment:
            plan = w.assign(self)
            assignments = [SyncGroupRequestAssignment(member_id=m, assignment=a) for m, a in plan]
            line += " as leader: " + ", ".join(f"{short(m)}={list(a)}" for m, a in plan)
        w.say(line)
        self.state = SYNCING
        self.sync_key = self.joined_key
        request = SyncGroupRequest(
            group_id=self.group,
            generation_id=self.generation,
            member_id=self.member_id,
            group_instance_id=self.instance_id,
            protocol_type="consumer",
            protocol_name=self.protocol,
            assignments=assignments,
        )
        w.h.coordinator.sync(request, w.h.now, w.tracked(f"SyncGroup of {self.name}", self.on_sync))

    def heartbeat(self) -> None:
        w = self.world
        line = f"{self} Heartbeat"
        request = HeartbeatRequest(
            group_id=self.group,
            generation_id=self.generation,
            member_id=self.member_id,
            group_instance_id=self.instance_id,
        )
        code = w.h.coordinator.heartbeat(request, w.h.now)
        w.say(f"{line} -> {code_name(code)}")
        if code == ErrorCode.NONE:
            w.check_current(self, "Heartbeat", (GroupState.COMPLETING_REBALANCE, GroupState.STABLE))
        if code == ErrorCode.REBALANCE_IN_PROGRESS:
            # Kafka's consumer ignores it between the JoinGroup and SyncGroup answers.
            if self.state == STABLE:
                self.rejoin_needed = True
        else:
            self.on_error("Heartbeat", code)

    def commit(self) -> None:
        """Commit what was consumed since the last commit: never below the partition's
        committed offset, which the consumer started from."""
        w = self.world
        rng = w.rng
        chosen = sorted(rng.sample(self.partitions, rng.randint(1, len(self.partitions))))
        offsets = []
        for p in chosen:
            self.positions[p] += rng.randint(0, 20)
            offsets.append(OffsetToCommit(TOPIC, p, self.positions[p], -1, self.name))
        line = f"{self} OffsetCommit {[(o.partition, o.offset) for o in offsets]}"
        error, codes = w.h.coordinator.commit_offsets(
            self.group, self.generation, self.member_id, self.instance_id, -1, offsets, 9, w.h.now
        )
        w.say(f"{line} -> {code_name(error)}")
        if error == ErrorCode.NONE:
            w.check_current(
                self, "OffsetCommit", (GroupState.PREPARING_REBALANCE, GroupState.STABLE)
            )
            if any(codes):
                w.fail(f"{self.name}: partition errors {codes} in a successful commit")
            for o in offsets:
                w.member_committed(self, o.partition, o.offset)
        elif error == ErrorCode.REBALANCE_IN_PROGRESS:
            self.rejoin_needed = True
        elif error != ErrorCode.GROUP_ID_NOT_FOUND:  # the group was deleted: the
            self.on_error("OffsetCommit", error)  # next heartbeat tells the consumer

    def leave(self) -> None:
        w = self.world
        line = f"{self} LeaveGroup"
        identity = MemberIdentity(member_id=self.member_id, group_instance_id=self.instance_id)
        error, answers = w.h.coordinator.leave(self.group, [identity], w.h.now)
        w.say(f"{line} -> {code_name(error or answers[0].error_code)}")
        self.forget_partitions()
        self.state = LEFT

    # -- answers -------------------------------------------------------------------------

    def on_join(self, response: JoinGroupResponse) -> None:
        w = self.world
        code = response.error_code
        line = f"{self.name} <- JoinGroup {code_name(code)}"
        if code == ErrorCode.NONE:
            line += f" gen {response.generation_id} leader {short(response.leader)}"
        w.say(line, answer=True)
        if code == ErrorCode.NONE:
            w.check_join_answer(self, response)
        if self.state != JOINING:  # the process is gone; only a fence needs checking
            if code == ErrorCode.FENCED_INSTANCE_ID:
                self.fenced("JoinGroup")
            return
        if code == ErrorCode.NONE:
            self.member_id = response.member_id
            self.generation = response.generation_id
            self.joined_key = w.generation_key(self.group, response.generation_id)
            self.protocol = response.protocol_name
            self.is_leader = response.leader == response.member_id
            self.join_members = list(response.members)
            self.skip_assignment = response.skip_assignment
            self.state = JOINED
        elif code == ErrorCode.MEMBER_ID_REQUIRED:
            self.member_id = response.member_id
            self.rejoin_or_stop()
        elif code == ErrorCode.REBALANCE_IN_PROGRESS:
            self.rejoin_or_stop()
        elif code == ErrorCode.GROUP_MAX_SIZE_REACHED:
            self.state = REFUSED
        else:
            self.on_error("JoinGroup", code)

    def on_sync(self, response: SyncGroupResponse) -> None:
        w = self.world
        code = response.error_code
        w.say(f"{self.name} <- SyncGroup {code_name(code)} {list(response.assignment)}", True)
        if code == ErrorCode.NONE:
            w.check_sync_answer(self, response)
        if self.state != SYNCING:
            if code == ErrorCode.FENCED_INSTANCE_ID:
                self.fenced("SyncGroup")
            return
        if code == ErrorCode.NONE:
            self.state = STABLE
            self.partitions = decode(response.assignment)
            self.positions = w.fetch_positions(self.group, self.partitions)
        elif code == ErrorCode.REBALANCE_IN_PROGRESS:
            self.rejoin_or_stop()
        else:
            self.on_error("SyncGroup", code)

    def on_error(self, api: str, code: int) -> None:
        """Kafka's consumer on the errors every group API shares."""
        if code == ErrorCode.NONE:
            return
        if code == ErrorCode.UNKNOWN_MEMBER_ID:
            self.reset(forget_member_id=True)
        elif code == ErrorCode.ILLEGAL_GENERATION:
            self.reset(forget_member_id=False)  # the member id may still be good
        elif code == ErrorCode.FENCED_INSTANCE_ID:
            self.fenced(api)
        elif code == ErrorCode.COORDINATOR_NOT_AVAILABLE:
            # Find the coordinator again; a failed join or sync is retried with a join.
            if self.state in (JOINING, SYNCING):
                self.rejoin_or_stop()
        else:
            self.world.fail(f"{self.name}: unexpected {api} error {code_name(code)}")

    # -- reactions -----------------------------------------------------------------------

    def forget_partitions(self) -> None:
        """The eager protocol revokes everything before rejoining."""
        self.partitions = ()
        self.positions = {}

    def rejoin_or_stop(self) -> None:
        self.forget_partitions()
        self.state = DEAD if self.zombie else UNJOINED

    def reset(self, *, forget_member_id: bool) -> None:
        if forget_member_id:
            self.member_id = ""
        self.generation = -1
        self.rejoin_or_stop()

    def fenced(self, api: str) -> None:
        """Fatal to Kafka's consumer; only an older process of an instance deserves it."""
        if not self.superseded:
            self.world.fail(f"{self.name} is the newest process of its instance, fenced by {api}")
        self.forget_partitions()
        if self.alive:
            self.state = FENCED


class World:
    """A coordinator, its clients, and what the clients were told, for one seed."""

    def __init__(self, seed: int, steps: int = STEPS) -> None:
        self.seed = seed
        self.steps = steps
        self.rng = rng = random.Random(seed)
        self.config: dict[str, Any] = {
            "initial_rebalance_delay_ms": rng.choice([0, 100, 3000]),
            "new_member_join_timeout_ms": rng.choice([12_000, 300_000]),
            "max_size": rng.choice([4, 2**31 - 1, 2**31 - 1]),
        }
        self.h = Harness(**self.config)
        self.start_ms = self.h.now
        self.fail_rate = rng.choice([0.0, 0.03, 0.1])
        self.clients: list[SimClient] = []
        self.names = 0
        self.history: list[str] = []
        self.pending: dict[int, str] = {}  # reply id -> what it answers
        self.answered: set[int] = set()
        self.replies = 0
        #: group -> partition -> committed offset, as the clients were told.
        self.committed: dict[str, dict[int, int]] = {}
        #: (group, generation) -> owner -> partitions its leader gave it.
        self.planned: dict[GenerationKey, dict[str, tuple[int, ...]]] = {}
        #: (group, generation) -> owner -> partitions a SyncGroup answer delivered.
        self.delivered: dict[GenerationKey, dict[str, tuple[int, ...]]] = {}
        #: (group, member id) -> the generation of its last JoinGroup answer.
        self.joined: dict[tuple[str, str], GenerationKey] = {}
        #: How many times each group was deleted.
        self.deletions: dict[str, int] = {}

    def generation_key(self, group_id: str, generation: int) -> GenerationKey:
        return (group_id, self.deletions.get(group_id, 0), generation)

    # -- reporting -----------------------------------------------------------------------

    def say(self, text: str, answer: bool = False) -> None:
        self.history.append(("          " if answer else "      ") + text)

    def fail(self, message: str) -> None:
        raise AssertionError(
            f"seed {self.seed}: {message}\n(config {self.config}, storage failure rate "
            f"{self.fail_rate}; World({self.seed}).run() replays these steps)\n"
            + "\n".join(self.history)
            + f"\nseed {self.seed}: {message}"
        )

    def tracked(self, what: str, handler: Callable[[Any], None]) -> Callable[[Any], None]:
        """A reply callback that must be called exactly once."""
        self.replies += 1
        reply_id = self.replies
        self.pending[reply_id] = what

        def reply(response: Any) -> None:
            if reply_id in self.answered:
                self.fail(f"{what} (reply {reply_id}) answered twice")
            self.answered.add(reply_id)
            del self.pending[reply_id]
            handler(response)

        return reply

    # -- the run ---------------------------------------------------------------------------

    def run(self) -> None:
        for i in range(self.steps):
            self.step(i)
        self.settle()
        self.shut_down()

    def step(self, i: int) -> None:
        events: list[tuple[int, Callable[[], None]]] = [
            (8, self.new_client),
            (40, self.client_acts),
            (6, self.poll_round),
            (8, self.client_commits),
            (3, self.client_rejoins),
            (2, self.client_leaves),
            (2, self.client_dies),
            (3, self.client_pauses),
            (4, self.client_processes),
            (2, self.static_member_restarts),
            (1, self.admin_removes_static_member),
            (2, self.simple_commit),
            (1, self.admin_deletes_offsets),
            (1, self.admin_deletes_group),
            (16, self.small_tick),
            (1, self.large_tick),
            (1, self.replay),
        ]
        action = self.rng.choices([e for _, e in events], [w for w, _ in events])[0]
        failing = self.rng.random() < self.fail_rate
        line = f"{i:4d} t={self.h.now - self.start_ms:<7} {action.__name__}"
        self.history.append(line + ("  [storage fails]" if failing else ""))
        self.h.log.fail = failing
        try:
            action()
        finally:
            self.h.log.fail = False
        self.check()

    # -- events ----------------------------------------------------------------------------

    def live(self, group: str | None = None) -> list[SimClient]:
        return [c for c in self.clients if c.alive and (group is None or c.group == group)]

    def pick(self, states: tuple[str, ...]) -> SimClient | None:
        candidates = [c for c in self.clients if c.state in states and c.ready]
        return self.rng.choice(candidates) if candidates else None

    def new_client(self, group: str | None = None, instance_id: str | None = None) -> None:
        """A consumer starts and joins: about a third static, the others dynamic."""
        rng = self.rng
        if group is None:
            room = [g for g in GROUPS if len(self.live(g)) < MAX_LIVE_PER_GROUP]
            if not room:
                return
            group = rng.choice(room)
        self.names += 1
        name = f"c{self.names}"
        if instance_id is None and rng.random() < 0.35:
            instance_id = f"{group}-{name}"
        # group.instance.id needs JoinGroup v5+.
        version = rng.choice([5, 7, 9]) if instance_id is not None else rng.choice([0, 3, 4, 6, 9])
        session_ms = rng.randint(*(STATIC_SESSION_MS if instance_id else SESSION_MS))
        client = SimClient(
            self, name, group, instance_id, version,
            session_ms=session_ms, rebalance_ms=rng.randint(*REBALANCE_MS),
            protocols=rng.choice(PREFERENCES), topics=rng.choice(SUBSCRIPTIONS),
        )  # fmt: skip
        self.clients.append(client)
        self.say(f"{name} starts in {group}" + (f" as {instance_id}" if instance_id else ""))
        client.join()

    def client_acts(self) -> None:
        c = self.pick((UNJOINED, JOINED, STABLE))
        if c is not None and c.state == JOINED and self.rng.random() < 0.25:
            c.heartbeat()  # the heartbeat thread runs once JoinGroup is answered
        elif c is not None:
            c.act()

    def poll_round(self) -> None:
        """Every running consumer does its next thing."""
        for c in self.rng.sample(self.live(), len(self.live())):
            if c.ready:
                c.act()

    def client_commits(self) -> None:
        c = self.pick((STABLE,))
        if c is not None and c.partitions:
            c.commit()

    def client_rejoins(self) -> None:
        """A consumer rejoining on its own: a leader seeing new topic metadata, or a
        consumer whose subscription changed."""
        c = self.pick((STABLE,))
        if c is not None and not c.zombie:
            if self.rng.random() < 0.3:
                c.topics = self.rng.choice(SUBSCRIPTIONS)
                self.say(f"{c} subscribes to {list(c.topics)}")
            c.join()

    def client_leaves(self) -> None:
        candidates = [c for c in self.live() if c.ready and c.member_id]
        if candidates:
            self.rng.choice(candidates).leave()

    def client_processes(self) -> None:
        """A consumer spends a while on its records: it heartbeats and commits, and
        does not rejoin before it is done, so a group may complete a rebalance without
        it (and keep it, when it is static)."""
        c = self.pick((STABLE,))
        if c is not None:
            c.processing_until = self.h.now + self.rng.randint(1_000, LONGEST_MS)
            self.say(f"{c} processes records until t={c.processing_until - self.start_ms}")

    def client_pauses(self) -> None:
        """A consumer goes quiet for a while: long enough, often, for its group to move
        to a new generation without it, so what it sends next is stale."""
        candidates = [c for c in self.live() if c.ready]
        if candidates:
            c = self.rng.choice(candidates)
            c.paused_until = self.h.now + self.rng.randint(1_000, LONGEST_MS)
            self.say(f"{c} pauses until t={c.paused_until - self.start_ms}")

    def client_dies(self) -> None:
        candidates = self.live()
        if candidates:
            c = self.rng.choice(candidates)
            self.say(f"{c} dies silently")
            c.state = DEAD

    def static_member_restarts(self) -> None:
        """A new process with a running or crashed static member's instance id; the old
        one, if it was still running, may linger a while as a zombie."""
        candidates = [
            c for c in self.clients if c.instance_id and not c.superseded and c.state != LEFT
        ]
        if not candidates:
            return
        old = self.rng.choice(candidates)
        old.superseded = True
        if old.alive and self.rng.random() < 0.3:
            old.zombie = True
            self.say(f"{old} lingers as a zombie")
        elif old.alive:
            self.say(f"{old} is killed")
            old.state = DEAD
        self.new_client(old.group, old.instance_id)

    def admin_removes_static_member(self) -> None:
        """LeaveGroup by group.instance.id alone, as the admin's member removal sends it."""
        group_id = self.rng.choice(GROUPS)
        group = self.h.coordinator.groups.get(group_id)
        if group is None or not group.static_members:
            return
        instance_id = self.rng.choice(sorted(group.static_members))
        self.say(f"the admin removes {instance_id}")
        identity = MemberIdentity(member_id="", group_instance_id=instance_id)
        error, answers = self.h.coordinator.leave(group_id, [identity], self.h.now)
        code = error or answers[0].error_code
        if code != ErrorCode.NONE:
            self.fail(f"removing static member {instance_id} of {group_id}: {code_name(code)}")

    def simple_commit(self) -> None:
        """A commit outside group management (generation -1, no member id): allowed only
        while the group has no members, and then it sets the offsets as given."""
        rng = self.rng
        group_id = rng.choice((*GROUPS, SIMPLE_GROUP))
        group = self.group_now(group_id)
        empty = group is None or group.state is GroupState.EMPTY
        chosen = sorted(rng.sample(range(PARTITIONS), rng.randint(1, 3)))
        offsets = [OffsetToCommit(TOPIC, p, rng.randint(0, 400), -1, "admin") for p in chosen]
        error, _ = self.h.coordinator.commit_offsets(
            group_id, -1, "", None, -1, offsets, 9, self.h.now
        )
        self.say(
            f"simple commit to {group_id} {[(o.partition, o.offset) for o in offsets]}"
            f" -> {code_name(error)}"
        )
        expected = ErrorCode.UNKNOWN_MEMBER_ID
        if empty:
            expected = ErrorCode.COORDINATOR_NOT_AVAILABLE if self.h.log.fail else ErrorCode.NONE
        if error != expected:
            self.fail(f"simple commit to {group_id}: {code_name(error)}, expected {expected.name}")
        if error == ErrorCode.NONE:
            stored = self.committed.setdefault(group_id, {})
            for o in offsets:
                stored[o.partition] = o.offset

    def admin_deletes_offsets(self) -> None:
        """OffsetDelete of some partitions: refused while a generation of consumers of
        the topic holds them."""
        rng = self.rng
        group_id = rng.choice((*GROUPS, SIMPLE_GROUP))
        group = self.group_now(group_id)
        state = group.state if group else None
        chosen = sorted(rng.sample(range(PARTITIONS), rng.randint(1, 3)))
        error, answers = self.h.coordinator.delete_offsets(group_id, [(TOPIC, chosen)], self.h.now)
        codes = [code for _, partitions in answers for _, code in partitions]
        self.say(f"OffsetDelete {group_id} {chosen} -> {code_name(error)} {codes}")
        if error != ErrorCode.NONE or any(codes):
            return
        if state in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE):
            self.fail(f"offsets of {group_id} deleted while it is {state.value}")
        stored = self.committed.get(group_id, {})
        for p in chosen:
            stored.pop(p, None)

    def admin_deletes_group(self) -> None:
        """DeleteGroups: only an Empty group goes, with its offsets."""
        group_id = self.rng.choice((*GROUPS, SIMPLE_GROUP))
        group = self.group_now(group_id)
        state = group.state if group else None
        error = self.h.coordinator.delete_group(group_id, self.h.now)
        self.say(f"DeleteGroups {group_id} -> {code_name(error)}")
        if error == ErrorCode.NONE:
            if state is not GroupState.EMPTY:
                self.fail(f"{group_id} deleted while it is {state}")
            self.committed.pop(group_id, None)
            self.deletions[group_id] = self.deletions.get(group_id, 0) + 1
        elif state is GroupState.EMPTY and not self.h.log.fail:
            self.fail(f"deleting the empty {group_id}: {code_name(error)}")

    def group_now(self, group_id: str) -> ClassicGroup | None:
        """The group as a request now finds it: deadlines due now fire first."""
        self.h.coordinator.advance(self.h.now)
        return self.h.coordinator.groups.get(group_id)

    def small_tick(self) -> None:
        ms = self.rng.randint(1, 1_000)
        self.say(f"+{ms} ms")
        self.h.tick(ms)

    def large_tick(self) -> None:
        """Past every dynamic member's session timeout, often past every timeout."""
        ms = self.rng.randint(SESSION_MS[1] + 1, 2 * LONGEST_MS)
        self.say(f"+{ms} ms")
        self.h.tick(ms)

    def replay(self) -> None:
        """A fresh coordinator loading what was appended must know the same offsets."""
        fresh = Harness(**self.config).coordinator
        for _, key, value in self.h.log.records:
            record = records.decode(key, value)
            if record is not None:
                fresh.replay(record)
        live = self.h.coordinator
        for group_id in {*live.groups, *live.offsets, *fresh.groups, *fresh.offsets}:
            want = {k: (v.offset, v.metadata) for k, v in live.committed(group_id).items()}
            got = {k: (v.offset, v.metadata) for k, v in fresh.committed(group_id).items()}
            if got != want:
                self.fail(f"replayed offsets of {group_id}: {got}, live {want}")
        self.say(f"{len(self.h.log.records)} records replayed")

    # -- what a leader and a syncing member do ----------------------------------------------

    def assign(self, leader: SimClient) -> list[tuple[str, bytes]]:
        """The leader's round-robin of the topic's partitions over the members it was
        given, remembered as the plan of its generation."""
        members = leader.join_members
        owned: dict[str, list[int]] = {m.member_id: [] for m in members}
        for p in range(PARTITIONS):
            owned[members[p % len(members)].member_id].append(p)
        plan = {
            owner_key(m.member_id, m.group_instance_id): tuple(owned[m.member_id]) for m in members
        }
        key = leader.joined_key
        previous = self.planned.setdefault(key, plan)
        if previous != plan:
            self.fail(f"two leader plans for generation {key}: {previous} then {plan}")
        return [(m, encode(tuple(ps))) for m, ps in owned.items()]

    def fetch_positions(self, group_id: str, partitions: tuple[int, ...]) -> dict[int, int]:
        """Where a consumer starts on a partition it was given: the committed offset."""
        [(_, answers)] = self.h.coordinator.fetch_offsets(group_id, [(TOPIC, list(partitions))])
        return {p: committed.offset if committed else 0 for p, committed in answers}

    def member_committed(self, client: SimClient, partition: int, offset: int) -> None:
        stored = self.committed.setdefault(client.group, {})
        previous = stored.get(partition)
        if previous is not None and offset < previous:
            self.fail(
                f"{client} committed {offset} on partition {partition} below {previous}: "
                "a consumer of another generation or a fenced process got through"
            )
        stored[partition] = offset

    # -- invariants ------------------------------------------------------------------------

    def check_join_answer(self, client: SimClient, response: JoinGroupResponse) -> None:
        group = self.h.coordinator.groups.get(client.group)
        if group is None:
            self.fail(f"{client.name}: JoinGroup answered NONE for a missing group")
            return
        if response.generation_id != group.generation_id:
            self.fail(
                f"{client.name}: JoinGroup answered generation {response.generation_id}, "
                f"the group is at {group.generation_id}"
            )
        if response.member_id not in group.members:
            self.fail(f"{client.name}: JoinGroup answered {response.member_id}, not a member")
        for member in group.members.values():
            if response.protocol_name not in member.protocol_names():
                self.fail(f"protocol {response.protocol_name} chosen, {member} lacks it")
        key = self.generation_key(client.group, response.generation_id)
        self.joined[(client.group, response.member_id)] = key
        leader = response.leader == response.member_id
        if leader != bool(response.members):
            self.fail(
                f"{client.name}: leader {response.leader}, member {response.member_id}, "
                f"got {len(response.members)} members"
            )
        if response.members:
            given = sorted((m.member_id, m.group_instance_id) for m in response.members)
            actual = sorted((m.member_id, m.group_instance_id) for m in group.members.values())
            if given != actual:
                self.fail(f"{client.name}: the leader got members {given}, the group has {actual}")

    def check_sync_answer(self, client: SimClient, response: SyncGroupResponse) -> None:
        """A delivered assignment is the one its generation's leader planned, and no
        two owners of one generation share a partition."""
        key = client.sync_key
        group = self.h.coordinator.groups.get(client.group)
        if group is None or self.generation_key(client.group, group.generation_id) != key:
            self.fail(f"{client.name}: SyncGroup of generation {key} answered NONE late")
        plan = self.planned.get(key)
        if plan is None:
            self.fail(f"{client.name}: an assignment in {key}, whose leader never sent one")
            return
        if response.protocol_name != client.protocol:
            self.fail(
                f"{client.name}: SyncGroup names {response.protocol_name}, not {client.protocol}"
            )
        owner = owner_key(client.member_id, client.instance_id)
        got = decode(response.assignment)
        if got != plan.get(owner, ()):
            self.fail(f"{client.name}: assignment {got}, the leader planned {plan.get(owner)}")
        delivered = self.delivered.setdefault(key, {})
        for other, partitions in delivered.items():
            if other == owner:
                if partitions != got:
                    self.fail(f"{owner} got {partitions} then {got} in generation {key}")
            elif set(partitions) & set(got):
                self.fail(f"{owner} and {other} both hold {set(partitions) & set(got)} in {key}")
        delivered[owner] = got

    def check_current(self, client: SimClient, api: str, states: tuple[GroupState, ...]) -> None:
        """An answer of NONE to a Heartbeat or a commit of the group's generation is for
        a member of that generation, while the group is in one of ``states``."""
        group = self.h.coordinator.groups.get(client.group)
        if (
            group is None
            or client.member_id not in group.members
            or group.generation_id != client.generation
            or group.state not in states
        ):
            now = "gone" if group is None else f"{group.state.value} at {group.generation_id}"
            self.fail(f"{client} got NONE to its {api}, the group is {now}")

    def check(self) -> None:
        """After every step: offsets as the clients were told, and every group able to
        make progress (each member has a session timer or a parked request, each
        rebalance phase its deadline)."""
        coordinator = self.h.coordinator
        for group_id in {*coordinator.groups, *self.committed}:
            stored = {
                p: c.offset for (t, p), c in coordinator.committed(group_id).items() if t == TOPIC
            }
            if stored != self.committed.get(group_id, {}):
                self.fail(f"{group_id}: committed {stored}, clients were told {self.committed}")
        timers = coordinator.timers
        for group_id, group in coordinator.groups.items():
            rebalanced = group.state in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE)
            if rebalanced and not group.members:
                self.fail(f"{group_id} is {group.state.value} without members")
            if group.members and group.leader_id not in group.members:
                self.fail(f"{group_id}: leader {group.leader_id} is not a member")
            for member_id, member in group.members.items():
                if (
                    rebalanced
                    and member.group_instance_id is None
                    and self.joined.get((group_id, member_id))
                    != self.generation_key(group_id, group.generation_id)
                ):
                    self.fail(
                        f"{group_id}: {member_id} is in generation "
                        f"{group.generation_id} without having joined it"
                    )
                parked = member.awaiting_join is not None or member.awaiting_sync is not None
                if not parked and not timers.is_scheduled(session_key(group_id, member_id)):
                    self.fail(f"{group_id}: member {member_id} has no session timer")
            for member_id in group.pending_join_members:
                if not timers.is_scheduled(session_key(group_id, member_id)):
                    self.fail(f"{group_id}: pending member {member_id} has no session timer")
            phase_key = {
                GroupState.PREPARING_REBALANCE: join_key(group_id),
                GroupState.COMPLETING_REBALANCE: sync_key(group_id),
            }.get(group.state)
            if phase_key is not None and not timers.is_scheduled(phase_key):
                self.fail(f"{group_id} is {group.state.value} without a deadline")

    # -- the end ---------------------------------------------------------------------------

    def settle(self) -> None:
        """No more random events: the live consumers go on polling (join, sync,
        heartbeat) every second or so, and every group must end Stable with exactly
        its live consumers, each holding its share of the partitions."""
        self.history.append("---- the random events stop; live consumers keep polling")
        for c in self.clients:
            if c.zombie and c.alive:
                c.state = DEAD
        horizon = self.h.now + 4 * LONGEST_MS  # about three times what the worst seed needs
        while self.h.now < horizon:
            self.history.append(f"     t={self.h.now - self.start_ms}")
            self.poll_round()
            self.h.tick(self.rng.randint(500, 1_500))
            self.check()
        coordinator = self.h.coordinator
        for group_id in (*GROUPS, SIMPLE_GROUP):
            group = coordinator.groups.get(group_id)
            live = {c.member_id: c for c in self.live(group_id)}
            if group is None:
                if live:
                    self.fail(f"{group_id} is gone, its consumers are not")
                continue
            if not live:
                if group.state is not GroupState.EMPTY:
                    self.fail(f"{group_id} has no live consumers and is {group.state.value}")
                continue
            if group.state is not GroupState.STABLE:
                self.fail(f"{group_id} with live consumers is stuck {group.state.value}")
            if set(group.members) != set(live):
                self.fail(f"{group_id}: members {sorted(group.members)}, live {sorted(live)}")
            partitions: list[int] = []
            for c in live.values():
                if c.state != STABLE or c.generation != group.generation_id:
                    self.fail(f"{c} has not settled in generation {group.generation_id}")
                partitions += c.partitions
            if sorted(partitions) != list(range(PARTITIONS)):
                self.fail(f"{group_id}: the live consumers hold {sorted(partitions)}")

    def shut_down(self) -> None:
        """Every consumer stops; once every deadline has passed, every parked reply has
        been sent and every group is Empty."""
        self.history.append("---- every consumer stops")
        for c in self.live():
            c.state = DEAD
        coordinator = self.h.coordinator
        for _ in range(10_000):
            deadline = coordinator.next_deadline()
            if deadline is None:
                break
            self.h.tick(max(deadline - self.h.now, 0))
            self.check()
        else:
            self.fail("deadlines keep coming with every consumer gone")
        for group_id, group in coordinator.groups.items():
            if group.state is not GroupState.EMPTY or group.members:
                self.fail(f"{group_id} is {group.state.value} with every consumer gone")
        if self.pending:
            self.fail(f"replies never sent: {sorted(self.pending.values())}")


@pytest.mark.parametrize("seed", SEEDS)
def test_random_schedules_keep_the_group_invariants(seed: int) -> None:
    World(seed).run()


# -- what the simulation found, step by step -------------------------------------------------


def test_removing_a_static_member_by_instance_id_answers_its_parked_sync() -> None:
    """The admin's member removal used to drop a SyncGroup answer awaited by the member
    it removed: the consumer waited for its request timeout."""
    h = Harness()
    a = Client(h, "a", instance_id="i-a", version=5)
    b = Client(h, "b", instance_id="i-b", version=5)
    a.join()
    b.join()
    h.tick(200)
    follower = b if a.last_join.leader == a.member_id else a
    follower.sync()
    assert follower.synced == []  # parked until the leader's assignment
    identity = MemberIdentity(member_id="", group_instance_id=follower.instance_id)
    assert h.coordinator.leave(GROUP, [identity], h.now)[0] == ErrorCode.NONE
    assert [r.error_code for r in follower.synced] == [ErrorCode.UNKNOWN_MEMBER_ID]


def test_a_dead_static_member_leaves_even_while_rebalances_keep_coming() -> None:
    """A new member timing out of each join phase just before it ends rejoins at once
    and starts the next; a static member that died must still go when its session
    ends, and not get a fresh one each time a join phase completes without it."""
    h = Harness(new_member_join_timeout_ms=14_000)
    dead = Client(h, "s", instance_id="i-s", session_ms=30_000, rebalance_ms=15_000, version=5)
    live = Client(h, "l", session_ms=10_000, rebalance_ms=15_000, version=3)
    dead.join()
    live.join()
    h.tick(200)
    dead.sync({dead.member_id: b"A", live.member_id: b"B"})  # its last word
    live.sync()
    newcomer = Client(h, "n", session_ms=10_000, rebalance_ms=15_000, version=4)
    for _ in range(4):
        newcomer.member_id = ""
        newcomer.join()  # MEMBER_ID_REQUIRED
        newcomer.join()
        assert live.heartbeat() == ErrorCode.REBALANCE_IN_PROGRESS
        live.join()
        # The newcomer's first join times out at 14 s, the join phase (waiting for
        # the dead member) ends at 15 s; the live member leads the next generation.
        h.tick(15_000)
        if newcomer.last_join.error_code == ErrorCode.NONE:
            break
        assert live.last_join.error_code == ErrorCode.NONE
        live.sync({live.member_id: b"AB"})
    assert newcomer.last_join.error_code == ErrorCode.NONE
    assert dead.member_id not in h.coordinator.groups[GROUP].members
