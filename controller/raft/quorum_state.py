"""``quorum-state``: the file in ``__cluster_metadata-0`` that keeps a replica's election.

Kafka writes it as one line of JSON, its ``QuorumStateData`` message with a
``data_version`` field added: version 0 (``kraft.version`` 0) names the voters' ids and has
no directory id; version 1 keeps the voted replica's directory id as a Uuid string. The
file is replaced atomically and synced before a transition takes effect, so a vote or an
epoch, once acted on, survives a crash. Both versions are read; the one written follows
the quorum's ``kraft.version``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from millpond.controller.raft.keys import ReplicaKey
from millpond.controller.raft.log import ElectionState
from millpond.storage.fs import FileSystem, join, write_atomic
from millpond.wire.message import uuid_from_str, uuid_to_str

__all__ = ["QUORUM_STATE_FILE", "FileElectionStore", "QuorumStateError"]

QUORUM_STATE_FILE = "quorum-state"
_ZERO_UUID = uuid_to_str(bytes(16))


class QuorumStateError(Exception):
    """``quorum-state`` cannot be read: the node must not guess its vote."""


class FileElectionStore:
    """An :class:`~millpond.controller.raft.log.ElectionStore` over ``quorum-state``."""

    def __init__(
        self,
        fs: FileSystem,
        directory: str,
        *,
        kraft_version: Callable[[], int] = lambda: 1,
        voter_ids: Callable[[], list[int]] = list,
    ) -> None:
        self._fs = fs
        self.path = join(directory, QUORUM_STATE_FILE)
        #: The quorum's kraft.version and voters when a state is written (version 0
        #: lists the voters).
        self._kraft_version = kraft_version
        self._voter_ids = voter_ids

    def read(self) -> ElectionState | None:
        if not self._fs.exists(self.path):
            return None
        handle = self._fs.open(self.path)
        try:
            text = handle.read_at(0, handle.size())
        finally:
            handle.close()
        try:
            body = json.loads(bytes(text).split(b"\n", 1)[0])
            return _parse(body)
        except (ValueError, KeyError, TypeError) as exc:
            raise QuorumStateError(
                f"{self.path} is not a quorum-state file ({exc}); restore it from a backup,"
                " or remove it only if this node has never voted"
            ) from None

    def write(self, state: ElectionState) -> None:
        write_atomic(self._fs, self.path, json.dumps(self._body(state)).encode())

    def _body(self, state: ElectionState) -> dict[str, Any]:
        voted = state.voted
        if self._kraft_version() >= 1:
            directory = voted.directory_id if voted is not None else None
            return {
                "leaderId": state.leader_id,
                "leaderEpoch": state.epoch,
                "votedId": voted.id if voted is not None else -1,
                "votedDirectoryId": uuid_to_str(directory) if directory else _ZERO_UUID,
                "data_version": 1,
            }
        return {
            "clusterId": "",
            "leaderId": state.leader_id,
            "leaderEpoch": state.epoch,
            "votedId": voted.id if voted is not None else -1,
            "appliedOffset": 0,
            "currentVoters": [{"voterId": i} for i in sorted(self._voter_ids())],
            "data_version": 0,
        }


def _parse(body: dict[str, Any]) -> ElectionState:
    version = body["data_version"]
    if version not in (0, 1):
        raise ValueError(f"data_version {version!r} is not 0 or 1")
    epoch = body.get("leaderEpoch", -1)
    leader = body.get("leaderId", -1)
    voted_id = body.get("votedId", -1)
    for name, value in (("leaderEpoch", epoch), ("leaderId", leader), ("votedId", voted_id)):
        if not isinstance(value, int):
            raise ValueError(f"{name} {value!r} is not an integer")
    directory: bytes | None = None
    if version == 1 and body.get("votedDirectoryId", _ZERO_UUID) != _ZERO_UUID:
        directory = uuid_from_str(body["votedDirectoryId"])
    voted = ReplicaKey(voted_id, directory) if voted_id >= 0 else None
    return ElectionState(max(epoch, 0), leader, voted)
