"""The one exception a command raises for a user's problem (not a bug in millpond)."""

from __future__ import annotations

from millpond.wire.errors import ErrorCode, error_name


class CliError(Exception):
    """What went wrong and what to do about it; printed without a traceback, exit code 1.

    ``hint`` is the second half of every message: the flag to pass, the command to run,
    the thing to check. A message without one leaves the user guessing.
    """

    def __init__(self, what: str, hint: str = "", exit_code: int = 1) -> None:
        super().__init__(what)
        self.what = what
        self.hint = hint
        self.exit_code = exit_code


#: What to do about the Kafka error codes a user meets at the command line.
_HINTS: dict[int, str] = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: "check the name with `millpond topic list`",
    ErrorCode.REQUEST_TIMED_OUT: "the broker is slow or overloaded; retry, or raise --timeout-ms",
    ErrorCode.COORDINATOR_NOT_AVAILABLE: "the broker may still be starting; retry in a moment",
    ErrorCode.NOT_COORDINATOR: "the group's coordinator moved; retry",
    ErrorCode.ILLEGAL_GENERATION: "the group has active members; stop its consumers first",
    ErrorCode.UNKNOWN_MEMBER_ID: "the group has active members; stop its consumers first",
    ErrorCode.TOPIC_ALREADY_EXISTS: "choose another name, or delete the existing topic first",
    ErrorCode.INVALID_PARTITIONS: "pass a larger partition count",
    ErrorCode.INVALID_REPLICATION_FACTOR: "pass a replication factor of at most the broker count",
    ErrorCode.INVALID_CONFIG: "see `millpond configs describe` for the names the broker takes",
    ErrorCode.NOT_CONTROLLER: "retry: the request reached a broker that is not the controller",
    ErrorCode.NON_EMPTY_GROUP: "the group is not empty: stop its consumers first",
    ErrorCode.GROUP_ID_NOT_FOUND: "check the name with `millpond group list`",
}


def kafka_error(code: int, what: str, message: str | None = None) -> CliError:
    """A :class:`CliError` for a Kafka error code the broker answered about ``what``."""
    detail = f": {message}" if message else ""
    return CliError(f"{what}: {error_name(code)}{detail}", _HINTS.get(code, ""))


def error_text(code: int, message: str | None = None) -> str:
    """``NAME: message`` for a per-item status column."""
    return f"{error_name(code)}: {message}" if message else error_name(code)
