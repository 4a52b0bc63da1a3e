"""A metadata log seeded by ``storage format`` for a dynamic quorum: the bootstrap
checkpoint (offset 0, epoch 0) names the first voters at kraft.version 1 and the feature
levels the first active controller writes; a level millpond cannot run stops the node
at start, saying which."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from millpond.controller.controller import ControllerConfig
from millpond.controller.controller_server import ControllerServer
from millpond.controller.metadata_log import open_metadata_log, open_raft_client
from millpond.controller.raft.keys import Endpoint, ReplicaKey, Voter, VoterSet
from millpond.controller.raft.node import Role
from millpond.controller.record_serde import encode_metadata_record, with_version
from millpond.quorum_format import write_bootstrap
from millpond.storage.clock import ManualClock
from millpond.storage.config_def import ConfigError
from millpond.storage.fs import MemFileSystem, OsFileSystem
from millpond.storage.log_dirs import ensure_meta_properties
from millpond.testing import broker
from millpond.wire.generated.metadata.feature_level_record import FeatureLevelRecord

from .helpers import CLUSTER_ID, LOG_DIR, NODE_ID, mem_fs, replayed

DIRECTORY = bytes(range(1, 17))
ME = Voter(ReplicaKey(NODE_ID, DIRECTORY), (Endpoint("CONTROLLER", "127.0.0.1", 9093),))


def _seeded(voters: VoterSet | None) -> MemFileSystem:
    fs = mem_fs()
    write_bootstrap(fs, LOG_DIR, ManualClock(), voters)
    return fs


def test_the_checkpoint_voters_make_a_dynamic_quorum_that_replicates_them() -> None:
    fs = _seeded(VoterSet([ME]))
    clock = ManualClock()
    raft = open_raft_client(
        fs, LOG_DIR, clock, random.Random(3), node_id=NODE_ID, directory_id=DIRECTORY
    )
    try:
        assert raft.node.config.kraft_version == 1 and raft.kraft_version == 1
        assert raft.node.voters == VoterSet([ME])
        for _ in range(50):  # a single voter elects itself on its first timeout
            raft.poll(clock.monotonic_ms())
            clock.advance(100)
        assert raft.node.role is Role.LEADER
        # The leader writes the bootstrap voters into the replicated log.
        assert raft.log.voter_history()[-1][1] == VoterSet([ME])
    finally:
        raft.log.log.close()


def test_without_a_checkpoint_the_single_node_stays_static() -> None:
    fs = mem_fs()
    raft = open_raft_client(fs, LOG_DIR, ManualClock(), random.Random(3), node_id=NODE_ID)
    try:
        assert raft.node.config.kraft_version == 0
        assert raft.node.voters == VoterSet.of_ids([NODE_ID])
    finally:
        raft.log.log.close()


def test_an_observer_to_be_learns_its_voters_from_the_log() -> None:
    raft = open_raft_client(
        mem_fs(), LOG_DIR, ManualClock(), random.Random(3), node_id=2, bootstrap_servers=[-1000]
    )
    try:
        assert raft.node.config.kraft_version == 1
        assert len(raft.node.voters) == 0 and not raft.node.is_voter
    finally:
        raft.log.log.close()


def _server(fs: MemFileSystem) -> ControllerServer:
    return ControllerServer(
        fs, LOG_DIR, ManualClock(), random.Random(3), ControllerConfig(NODE_ID, CLUSTER_ID)
    )


def _seeded_at(levels: dict[str, int]) -> MemFileSystem:
    fs = mem_fs()
    log = open_metadata_log(fs, LOG_DIR, ManualClock())
    records = [with_version(FeatureLevelRecord(name=n, feature_level=v)) for n, v in levels.items()]
    log.write_bootstrap_checkpoint(VoterSet([ME]), [encode_metadata_record(r) for r in records])
    log.log.close()
    return fs


def test_the_first_active_controller_writes_the_checkpoint_levels() -> None:
    fs = _seeded_at({"metadata.version": 21})  # 3.9-IV0, not the default 4.1-IV1
    server = _server(fs)
    server.close()
    assert dict(replayed(fs).features) == {"metadata.version": 21}


def test_levels_millpond_cannot_run_stop_the_node_saying_which() -> None:
    fs = _seeded_at({"metadata.version": 33, "transaction.version": 2})
    with pytest.raises(ConfigError) as info:
        _server(fs)
    message = str(info.value)
    assert "metadata.version=33" in message and "only supports versions 7-27" in message
    assert "--release-version 4.1-IV1" in message


def test_a_node_refused_at_start_frees_its_directories(tmp_path: Path) -> None:
    """The refusal comes while the node holds its directories' locks: it lets them go,
    so that the same process may start a node there once the data is fixed."""
    ensure_meta_properties(OsFileSystem(), str(tmp_path), CLUSTER_ID, NODE_ID, ManualClock())
    log = open_metadata_log(OsFileSystem(), str(tmp_path), ManualClock())
    record = with_version(FeatureLevelRecord(name="metadata.version", feature_level=33))
    log.write_bootstrap_checkpoint(VoterSet([ME]), [encode_metadata_record(record)])
    log.log.close()
    for _ in range(2):  # the second start meets the same error, not a locked directory
        with (
            pytest.raises(ConfigError, match="metadata.version=33"),
            broker(data_dir=str(tmp_path)),
        ):
            pass
