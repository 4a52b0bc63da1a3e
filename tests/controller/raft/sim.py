"""A seeded, deterministic simulation of the KRaft quorum: faults in, invariants checked.

Everything comes from one ``random.Random(seed)``: message delays, drops, duplicates,
partitions (both ways and one way, silent as a dropped packet), kills (the unflushed log
tail is lost, and a request to a dead node is refused at once), wipes (a node
comes back with an empty disk and a new directory id, and an operator replaces its voter
entry as KIP-853 has it), moves (a node comes back on another port, which it announces
to the leader: UpdateRaftVoter), clock skew, voters added and removed. Time is virtual and
events run one at a time from a priority queue, so a seed replays exactly. After every
event the :class:`~tests.controller.raft.checks.Checker` checks R1-R9; after the faults
heal, the run checks that a leader is elected within a bound (L1), that every proposal
is committed or lost to a truncation (L2), that the voter set converges (L3) and that it
names every live voter's listeners as they are (L4).
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable
from typing import NamedTuple

from millpond.controller.raft.config import RaftConfig
from millpond.controller.raft.keys import Endpoint, ReplicaKey, Voter, VoterSet
from millpond.controller.raft.log import Entry
from millpond.controller.raft.messages import (
    AddVoterRequest,
    Message,
    RemoveVoterRequest,
)
from millpond.controller.raft.node import NEVER, NotLeaderError, RaftFatalError, RaftNode, Role
from tests.controller.raft.checks import Checker, Violation
from tests.controller.raft.simlog import SimLog, SimStore

__all__ = ["RunResult", "SimConfig", "Simulation", "run_seed"]

OPERATOR = -100  # the admin client's address


class SimConfig(NamedTuple):
    nodes: int = 5
    voters: int = 3
    duration_ms: int = 4_000
    heal_at_ms: int = 2_500
    propose_every_ms: int = 15
    #: No proposals in the last stretch, so every accepted one can commit.
    quiet_ms: int = 300
    fault_every_ms: tuple[int, int] = (60, 250)
    operator_every_ms: int = 50
    snapshot_every: int = 30
    delay_ms: tuple[int, int] = (1, 8)
    raft: RaftConfig = RaftConfig(
        cluster_id="sim",
        election_timeout_ms=100,
        fetch_timeout_ms=200,
        election_backoff_max_ms=100,
        request_timeout_ms=200,
        retry_backoff_ms=5,
        fetch_max_wait_ms=50,
        fetch_max_bytes=64 * 16,
        fetch_snapshot_max_bytes=40,
    )
    #: L1: a leader within this many election timeouts of the heal.
    election_bound_timeouts: int = 10


DEFAULT_CONFIG = SimConfig()


class RunResult(NamedTuple):
    seed: int
    events: int
    faults: int
    violations: list[str]
    #: Simulated ms from the heal to one leader, followed by a majority of its voters,
    #: with a commit in its epoch.
    election_after_heal_ms: int | None
    #: Whether that leader was elected after the heal (not already leading at it).
    elected_after_heal: bool
    elections: int
    committed: int
    proposals: int


class SimNode:
    def __init__(self, sim: Simulation, node_id: int) -> None:
        self.sim = sim
        self.id = node_id
        self.raft: RaftNode | None = None
        self.led_epoch = -1
        self.leader_hw = -1
        self.checked_hw = 0
        self.wake_at = NEVER
        self.rate = 1.0
        self._local_base = 0.0
        self._global_base = 0
        self.port = 9000 + node_id
        self.log = self._new_disk()

    @property
    def endpoints(self) -> tuple[Endpoint, ...]:
        return (Endpoint("CONTROLLER", f"node-{self.id}", self.port),)

    def format(self) -> None:
        """Wipe the disk. The checkers remember what the old one held."""
        self.sim.lost_disks[self.key] = self.log
        self.log = self._new_disk()

    def _new_disk(self) -> SimLog:
        """An empty log and quorum-state under a new directory id."""
        self.directory_id = self.sim.rng.randbytes(16)
        checker = self.sim.checker
        log = SimLog(self.sim.content_id)
        log.on_append = lambda o, e, c: checker.on_append(self, o, e, c)
        log.on_truncate = lambda offset: checker.on_truncate(self, offset)
        self.store = SimStore(lambda state: checker.on_election_write(self, state))
        self.checked_hw = 0
        return log

    @property
    def key(self) -> ReplicaKey:
        return ReplicaKey(self.id, self.directory_id)

    # -- clocks ------------------------------------------------------------------------

    def local(self, now: int) -> int:
        return int(self._local_base + (now - self._global_base) * self.rate)

    def set_rate(self, now: int, rate: float) -> None:
        self._local_base = self.local(now)
        self._global_base = now
        self.rate = rate

    def to_global(self, local: int) -> int:
        if local >= NEVER:
            return NEVER
        return self._global_base + int((local - self._local_base) / self.rate) + 1

    # -- life --------------------------------------------------------------------------

    def start(self, now: int) -> None:
        sim = self.sim
        self.raft = RaftNode(
            self.key,
            sim.config.raft,
            self.log,
            self.store,
            random.Random(sim.rng.getrandbits(64)),
            self.local(now),
            bootstrap_voters=sim.bootstrap_voters,
            bootstrap_servers=list(range(sim.config.nodes)),
            local_endpoints=self.endpoints,
        )
        self.led_epoch = -1
        self.leader_hw = -1

    def kill(self) -> None:
        self.raft = None
        self.log.crash()
        self.wake_at = NEVER

    def durable_end(self) -> int:
        return self.log.start + self.log.flushed

    def durable_holds(self, offset: int, chain: int) -> bool:
        return durably_holds(self.log, offset, chain, self.sim.checker.committed)


def durably_holds(log: SimLog, offset: int, chain: int, committed: list[int]) -> bool:
    """Whether the flushed part of ``log`` (or its snapshot) holds ``chain`` at ``offset``."""
    if log.start <= offset < log.start + log.flushed:
        return log.chains[offset - log.start] == chain
    if offset == log.start - 1:
        return log.start_chain == chain
    if offset < log.start - 1 < len(committed):
        # Inside the snapshot: it holds the offset if the snapshot is of committed state.
        return committed[log.start - 1] == log.start_chain
    return False


class Simulation:
    def __init__(self, seed: int, config: SimConfig = DEFAULT_CONFIG) -> None:
        self.seed = seed
        self.config = config
        self.rng = random.Random(seed)
        self.checker = Checker()
        self._contents: dict[Entry, int] = {}
        #: The logs of wiped disks, by the replica key they had.
        self.lost_disks: dict[ReplicaKey, SimLog] = {}
        self.nodes = [SimNode(self, i) for i in range(config.nodes)]
        # Formatted with the voters' listeners, or without (the voters announce them).
        named = self.rng.random() < 0.5
        self.bootstrap_voters = VoterSet(
            Voter(n.key, n.endpoints if named else ()) for n in self.nodes[: config.voters]
        )
        self.desired = set(range(config.voters))
        self.now = 0
        self._queue: list[tuple[int, int, Callable[[], None]]] = []
        self._seq = 0
        self.events = 0
        self.faults = 0
        self.blocked: set[tuple[int, int]] = set()
        self.drop = 0.0
        self.duplicate = 0.0
        self.delay = config.delay_ms
        self.healed_at: int | None = None
        self.settled_at: int | None = None
        self.epoch_at_heal = -1
        self.settled_epoch = -1
        #: (offset, content, node id, epoch) of every append a leader accepted.
        self.proposals: list[tuple[int, int, int, int]] = []
        self._next_payload = 0
        self._operator_waiting = False
        self._correlation = 0

    def content_id(self, entry: Entry) -> int:
        return self._contents.setdefault(entry, len(self._contents) + 1)

    def acknowledged(self, key: ReplicaKey, offset: int, chain: int) -> bool:
        """Whether replica ``key`` holds ``chain`` at ``offset`` durably, or did when its
        disk was wiped (its acknowledgements were true when given)."""
        node = self.node_by_key(key)
        if node is not None:
            return node.durable_holds(offset, chain)
        lost = self.lost_disks.get(key)
        return lost is not None and durably_holds(lost, offset, chain, self.checker.committed)

    def node_by_key(self, key: ReplicaKey) -> SimNode | None:
        node = self.nodes[key.id] if 0 <= key.id < len(self.nodes) else None
        if node is None or not key.matches(node.key):
            return None
        return node

    # -- the queue ---------------------------------------------------------------------

    def at(self, time: int, action: Callable[[], None]) -> None:
        self._seq += 1
        heapq.heappush(self._queue, (time, self._seq, action))

    def run(self) -> RunResult:
        config = self.config
        for node in self.nodes:
            node.start(0)
            self._after_node(node)
        self.at(config.propose_every_ms, self._propose)
        self.at(self.rng.randint(*config.fault_every_ms), self._fault)
        self.at(config.operator_every_ms, self._operate)
        self.at(config.heal_at_ms, self._heal)
        violations: list[str] = []
        try:
            while self._queue:
                time, _, action = heapq.heappop(self._queue)
                if time > config.duration_ms:
                    break
                self.now = self.checker.now = time
                action()
                self.events += 1
            self._check_liveness()
        except Violation:
            pass
        except RaftFatalError as exc:
            self.checker.violations.append(f"t={self.now}: fatal: {exc}")
        violations = self.checker.violations
        election = None
        if self.healed_at is not None and self.settled_at is not None:
            election = self.settled_at - self.healed_at
        elected = self.settled_epoch > self.epoch_at_heal
        return RunResult(
            self.seed,
            self.events,
            self.faults,
            violations,
            election,
            elected,
            len(self.checker.leaders),
            len(self.checker.committed),
            len(self.proposals),
        )

    # -- nodes and messages --------------------------------------------------------------

    def _after_node(self, node: SimNode) -> None:
        raft = node.raft
        if raft is None:
            return
        raft.poll(node.local(self.now))
        for out in raft.take_outbox():
            self._transmit(node.id, out.destination, out.correlation, out.message, out.is_response)
        self.checker.after_event(self.nodes)
        self._maybe_snapshot(node)
        self._maybe_settled()
        wake = node.to_global(raft.wakeup_at())
        wake = max(wake, self.now + 1)
        if wake < node.wake_at or node.wake_at <= self.now:
            node.wake_at = wake
            if wake < NEVER:
                self.at(wake, lambda: self._wake(node, wake))

    def _wake(self, node: SimNode, when: int) -> None:
        if node.wake_at != when or node.raft is None:
            return
        node.wake_at = NEVER
        self._after_node(node)

    def _transmit(
        self, src: int, dst: int, correlation: int, message: Message, response: bool
    ) -> None:
        if (src, dst) in self.blocked:
            return
        rng = self.rng
        if rng.random() < self.drop:
            return
        copies = 2 if rng.random() < self.duplicate else 1
        for _ in range(copies):
            delay = rng.randint(*self.delay)
            self.at(
                self.now + delay, lambda: self._deliver(src, dst, correlation, message, response)
            )

    def _deliver(
        self, src: int, dst: int, correlation: int, message: Message, response: bool
    ) -> None:
        if dst == OPERATOR:
            self._operator_waiting = False
            return
        node = self.nodes[dst]
        raft = node.raft
        if raft is None:
            if not response and src != OPERATOR:
                # A dead process refuses the connection: the sender hears so at once (a
                # cut link, by contrast, is silence until the request times out).
                delay = self.rng.randint(*self.delay)
                self.at(self.now + delay, lambda: self._refused(src, dst, correlation))
            return
        raft.handle(node.local(self.now), src, correlation, message, is_response=response)
        self._after_node(node)

    def _refused(self, src: int, dst: int, correlation: int) -> None:
        node = self.nodes[src]
        if node.raft is None:
            return
        node.raft.unreachable(node.local(self.now), dst, correlation)
        self._after_node(node)

    def _maybe_snapshot(self, node: SimNode) -> None:
        raft = node.raft
        assert raft is not None
        log = node.log
        latest = log.latest_snapshot()
        base = latest.offset if latest is not None else log.start
        hw = raft.high_watermark
        if hw - base >= self.config.snapshot_every and hw <= log.end_offset:
            log.take_snapshot(hw, raft.voters_at(hw - 1))
            log.clean()

    # -- the workload --------------------------------------------------------------------

    def leaders(self) -> list[SimNode]:
        return [n for n in self.nodes if n.raft is not None and n.raft.role is Role.LEADER]

    def _propose(self) -> None:
        if self.now + self.config.quiet_ms >= self.config.duration_ms:
            return
        self.at(self.now + self.config.propose_every_ms, self._propose)
        leaders = self.leaders()
        if not leaders:
            return
        node = self.rng.choice(leaders)
        assert node.raft is not None
        self._next_payload += 1
        payload = b"v%d" % self._next_payload
        try:
            offset = node.raft.append(node.local(self.now), [payload])
        except NotLeaderError:
            return
        self.proposals.append((offset, self.content_id(payload), node.id, node.raft.epoch))
        self._after_node(node)

    def _operate(self) -> None:
        """The operator: replace wiped voters and apply the desired voter set, one
        change at a time through whichever node leads."""
        self.at(self.now + self.config.operator_every_ms, self._operate)
        if self._operator_waiting:
            return
        leaders = [n for n in self.leaders() if n.raft is not None]
        if not leaders:
            return
        node = max(leaders, key=lambda n: n.raft.epoch if n.raft else -1)
        raft = node.raft
        assert raft is not None
        request: Message | None = None

        def whole(v: Voter) -> bool:
            return v.key == self.nodes[v.key.id].key

        # Wiped voters go first; a whole one only while the voters left whole after it
        # stay a majority (else the set could never change again: an operator error).
        stale = [v for v in raft.voters if not whole(v)]
        unwanted = [v for v in raft.voters if whole(v) and v.key.id not in self.desired]

        def caught_up(v: Voter) -> bool:
            return self.nodes[v.key.id].log.end_offset >= raft.log.end_offset

        for voter in [*stale, *unwanted]:
            left = [w for w in raft.voters if w.key != voter.key]
            if voter.key == raft.key and not all(map(caught_up, left)):
                # The leader removing itself leads on until the change commits; should it
                # die first, voters that lack its log can never outvote it. An operator
                # (kafka-metadata-quorum describe --replication) waits for them.
                continue
            if not whole(voter) or sum(map(whole, left)) > len(left) // 2:
                request = RemoveVoterRequest("sim", voter.key)
                break
        if request is None:
            for node_id in sorted(self.desired):
                if node_id not in raft.voters:
                    added = self.nodes[node_id]
                    request = AddVoterRequest("sim", added.key, added.endpoints, 1000)
                    break
        if request is None:
            return
        self._correlation += 1
        self._operator_waiting = True
        self._transmit(OPERATOR, node.id, self._correlation, request, False)
        # An answer that never comes (a dropped message) frees the operator later.
        self.at(self.now + 4 * self.config.raft.request_timeout_ms, self._operator_timeout)

    def _operator_timeout(self) -> None:
        self._operator_waiting = False

    # -- faults ------------------------------------------------------------------------

    def _fault(self) -> None:
        if self.healed_at is not None:
            return
        self.at(self.now + self.rng.randint(*self.config.fault_every_ms), self._fault)
        self.faults += 1
        rng = self.rng
        choice = rng.randrange(11)
        ids = list(range(len(self.nodes)))
        if choice == 0:
            self.drop = rng.choice([0.0, 0.05, 0.2])
        elif choice == 1:
            self.duplicate = rng.choice([0.0, 0.05, 0.2])
        elif choice == 2:
            self.delay = rng.choice([self.config.delay_ms, (1, 30), (5, 80)])
        elif choice == 3:
            group = set(rng.sample(ids, rng.randint(1, len(ids) // 2)))
            self.blocked = {(a, b) for a in ids for b in ids if (a in group) != (b in group)}
        elif choice == 4:
            a, b = rng.sample(ids, 2)
            self.blocked.add((a, b))
        elif choice == 5:
            self.blocked.clear()
        elif choice in (6, 7):
            self._kill(rng.choice(ids), wipe=False, move=rng.random() < 0.3)
        elif choice == 8:
            self._maybe_wipe(rng.choice(ids))
        elif choice == 9:
            node = rng.choice(self.nodes)
            node.set_rate(self.now, rng.choice([0.7, 0.9, 1.1, 1.4]))
        else:
            self._change_desired_voters()

    def _kill(self, node_id: int, *, wipe: bool, move: bool = False) -> None:
        node = self.nodes[node_id]
        if node.raft is None:
            return
        node.kill()
        if wipe:
            node.format()
        if move:
            node.port += 100
        self.at(self.now + self.rng.randint(20, 400), lambda: self._restart(node))

    def _maybe_wipe(self, node_id: int) -> None:
        """Wipe a node only if, in every voter set any node holds or logs, the voters left whole
        are still a majority: losing the disks of a majority loses committed data in any
        Raft, and a set left without a whole majority can never change again."""
        views = [self.bootstrap_voters]
        views += [n.raft.voters for n in self.nodes if n.raft is not None]
        # Any voter set in any log, a dead node's too, may be the one in force later.
        views += [voters for n in self.nodes for _, voters in n.log.voter_history()]
        for voters in views:
            whole = sum(
                1 for v in voters if v.key.id != node_id and self.nodes[v.key.id].key == v.key
            )
            if whole < voters.majority:
                return
        self._kill(node_id, wipe=True)

    def _restart(self, node: SimNode) -> None:
        if node.raft is not None:
            return
        node.start(self.now)
        self._after_node(node)

    def _change_desired_voters(self) -> None:
        rng = self.rng
        outside = [n for n in range(len(self.nodes)) if n not in self.desired]
        if len(self.desired) <= 3 or (outside and rng.random() < 0.5):
            if outside:
                self.desired.add(rng.choice(outside))
        else:
            self.desired.discard(rng.choice(sorted(self.desired)))

    # -- heal and liveness ---------------------------------------------------------------

    def _heal(self) -> None:
        self.healed_at = self.now
        self.epoch_at_heal = max((n.raft.epoch for n in self.leaders() if n.raft), default=-1)
        self.blocked.clear()
        self.drop = self.duplicate = 0.0
        self.delay = self.config.delay_ms
        for node in self.nodes:
            node.set_rate(self.now, 1.0)
            if node.raft is None:
                self._restart(node)

    def _maybe_settled(self) -> None:
        if self.healed_at is None or self.settled_at is not None:
            return
        leaders = self.leaders()
        if len(leaders) != 1:
            return
        leader = leaders[0].raft
        assert leader is not None
        if leader.high_watermark < 0:
            return
        following = 0
        for voter in leader.voters:
            node = self.node_by_key(voter.key)
            if node is None or node.raft is None:
                continue
            if node.raft is leader or (
                node.raft.epoch == leader.epoch and node.raft.role is Role.FOLLOWER
            ):
                following += 1
        if following >= leader.voters.majority:
            self.settled_at = self.now
            self.settled_epoch = leader.epoch

    def _check_liveness(self) -> None:
        checker = self.checker
        config = self.config
        bound = config.election_bound_timeouts * config.raft.election_timeout_ms
        if self.settled_at is None or self.healed_at is None:
            checker.fail(
                f"L1: no leader settled in the {config.duration_ms - config.heal_at_ms} ms"
                " after the heal"
            )
            return
        if self.settled_at - self.healed_at > bound:
            checker.fail(
                f"L1: a leader took {self.settled_at - self.healed_at} ms after the heal"
                f" (bound {bound})"
            )
        contents = checker.committed_content
        for offset, content, node_id, epoch in self.proposals:
            if offset < len(contents) and contents[offset] == content:
                continue
            raft = self.nodes[node_id].raft
            if raft is not None and raft.role is Role.LEADER and raft.epoch == epoch:
                # Its leader still leads: it was neither committed nor rejected.
                checker.fail(f"L2: the proposal at offset {offset} (epoch {epoch}) never committed")
        leaders = self.leaders()
        if len(leaders) == 1 and leaders[0].raft is not None:
            voters = leaders[0].raft.voters
            want = {self.nodes[i].key for i in self.desired}
            have = {v.key for v in voters}
            if want != have:
                checker.fail(
                    f"L3: the voter set {sorted(k.id for k in have)} never became"
                    f" {sorted(self.desired)}"
                )
            for voter in voters:
                node = self.node_by_key(voter.key)
                if (
                    node is not None
                    and node.raft is not None
                    and (set(voter.endpoints) != set(node.endpoints))
                ):
                    checker.fail(
                        f"L4: the voter set names {voter.endpoints} for node {node.id},"
                        f" which listens on {node.endpoints}"
                    )


def run_seed(seed: int, config: SimConfig = DEFAULT_CONFIG) -> RunResult:
    return Simulation(seed, config).run()
