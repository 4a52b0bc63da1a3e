"""The error-code table must match Kafka's numbers, names and retriability exactly:
clients branch on them, so a wrong entry is a wire incompatibility."""

import pytest

from millpond.wire.errors import ErrorCode, error_name

# Known values, checked against Apache Kafka 4.4.0's Errors.
KNOWN_CODES = {
    -1: "UNKNOWN_SERVER_ERROR",
    0: "NONE",
    1: "OFFSET_OUT_OF_RANGE",
    2: "CORRUPT_MESSAGE",
    3: "UNKNOWN_TOPIC_OR_PARTITION",
    6: "NOT_LEADER_OR_FOLLOWER",
    10: "MESSAGE_TOO_LARGE",
    14: "COORDINATOR_LOAD_IN_PROGRESS",
    15: "COORDINATOR_NOT_AVAILABLE",
    16: "NOT_COORDINATOR",
    35: "UNSUPPORTED_VERSION",
    42: "INVALID_REQUEST",
    45: "OUT_OF_ORDER_SEQUENCE_NUMBER",
    59: "UNKNOWN_PRODUCER_ID",
    79: "MEMBER_ID_REQUIRED",
    90: "PRODUCER_FENCED",
    100: "UNKNOWN_TOPIC_ID",
    129: "REBOOTSTRAP_REQUIRED",
    133: "SHARE_SESSION_LIMIT_REACHED",
    136: "CONTROLLER_ID_NOT_REGISTERED",
}

RETRIABLE = [
    "CORRUPT_MESSAGE",
    "UNKNOWN_TOPIC_OR_PARTITION",
    "LEADER_NOT_AVAILABLE",
    "NOT_LEADER_OR_FOLLOWER",
    "REQUEST_TIMED_OUT",
    "NETWORK_EXCEPTION",
    "COORDINATOR_LOAD_IN_PROGRESS",
    "COORDINATOR_NOT_AVAILABLE",
    "NOT_COORDINATOR",
    "NOT_ENOUGH_REPLICAS",
    "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
    "NOT_CONTROLLER",
    "CONCURRENT_TRANSACTIONS",
    "KAFKA_STORAGE_ERROR",
    "FETCH_SESSION_ID_NOT_FOUND",
    "FENCED_LEADER_EPOCH",
    "UNKNOWN_LEADER_EPOCH",
    "OFFSET_NOT_AVAILABLE",
    "UNSTABLE_OFFSET_COMMIT",
    "THROTTLING_QUOTA_EXCEEDED",
    "UNKNOWN_TOPIC_ID",
]

NOT_RETRIABLE = [
    "UNKNOWN_SERVER_ERROR",
    "NONE",
    "OFFSET_OUT_OF_RANGE",
    "BROKER_NOT_AVAILABLE",
    "MESSAGE_TOO_LARGE",
    "REBALANCE_IN_PROGRESS",
    "ILLEGAL_GENERATION",
    "UNKNOWN_MEMBER_ID",
    "TOPIC_AUTHORIZATION_FAILED",
    "UNSUPPORTED_VERSION",
    "INVALID_REQUEST",
    "OUT_OF_ORDER_SEQUENCE_NUMBER",
    "DUPLICATE_SEQUENCE_NUMBER",
    "INVALID_PRODUCER_EPOCH",
    "UNKNOWN_PRODUCER_ID",
    "MEMBER_ID_REQUIRED",
    "PRODUCER_FENCED",
    "TRANSACTION_ABORTABLE",
    "REBOOTSTRAP_REQUIRED",
]


def test_codes_are_unique() -> None:
    # An IntEnum silently turns a repeated value into an alias; aliases would hide a typo.
    assert len(ErrorCode.__members__) == len(ErrorCode)


def test_codes_are_contiguous_from_minus_one() -> None:
    codes = sorted(member.value for member in ErrorCode)
    assert codes == list(range(-1, codes[-1] + 1))
    assert codes[-1] >= 136


@pytest.mark.parametrize(("code", "name"), sorted(KNOWN_CODES.items()))
def test_known_values(code: int, name: str) -> None:
    assert ErrorCode(code).name == name
    assert ErrorCode[name] == code


@pytest.mark.parametrize("name", RETRIABLE)
def test_retriable(name: str) -> None:
    assert ErrorCode[name].retriable is True


@pytest.mark.parametrize("name", NOT_RETRIABLE)
def test_not_retriable(name: str) -> None:
    assert ErrorCode[name].retriable is False


def test_retriable_count_matches_kafka() -> None:
    # 32 codes map to exceptions under RetriableException in Kafka 4.4.0; a change here
    # means a flag was flipped by mistake (or Kafka added a retriable code).
    assert sum(member.retriable for member in ErrorCode) == 32


def test_every_error_has_a_message() -> None:
    assert ErrorCode.NONE.message == ""
    for member in ErrorCode:
        if member is not ErrorCode.NONE:
            assert member.message.endswith(".")
            assert member.message[0].isupper()


def test_members_are_ints_on_the_wire() -> None:
    wire_value: int = 35  # as read off the wire: a plain int
    assert wire_value == ErrorCode.UNSUPPORTED_VERSION
    assert isinstance(ErrorCode.UNSUPPORTED_VERSION.value, int)
    assert int(ErrorCode.UNKNOWN_SERVER_ERROR) == -1
    assert ErrorCode(35) is ErrorCode.UNSUPPORTED_VERSION


def test_error_name_known_and_unknown() -> None:
    assert error_name(0) == "NONE"
    assert error_name(ErrorCode.NOT_COORDINATOR) == "NOT_COORDINATOR"
    assert error_name(-1) == "UNKNOWN_SERVER_ERROR"
    assert error_name(4242) == "UNKNOWN_CODE_4242"
    assert error_name(-2) == "UNKNOWN_CODE_-2"
    assert error_name(-32768) == "UNKNOWN_CODE_-32768"
