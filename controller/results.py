"""What controller operations return: the records to append and the response, together.

As in Kafka's ``ControllerResult``, an operation never changes state itself: it reads
the current :class:`~millpond.controller.image.MetadataImage` and returns the records
that would make the change plus the answer for the client. The controller appends the
records to the metadata log and replays them into the next image; validate-only
requests and failures simply return no records.
"""

from __future__ import annotations

from typing import Generic, NamedTuple, TypeVar

from millpond.controller.record_serde import ApiMessageAndVersion
from millpond.wire.errors import ErrorCode

__all__ = ["ApiError", "ControllerResult", "NotControllerError"]

T = TypeVar("T")


class ApiError(NamedTuple):
    """A Kafka error code with the message Kafka would put beside it (None: no message)."""

    code: ErrorCode
    message: str | None = None

    @property
    def is_success(self) -> bool:
        return self.code == ErrorCode.NONE

    @property
    def is_failure(self) -> bool:
        return self.code != ErrorCode.NONE


NO_ERROR = ApiError(ErrorCode.NONE)


class ControllerResult(NamedTuple, Generic[T]):
    records: tuple[ApiMessageAndVersion, ...]
    response: T


class NotControllerError(Exception):
    """This node is not the active controller (any more): Kafka's NOT_CONTROLLER; the
    caller asks the quorum's leader instead."""
