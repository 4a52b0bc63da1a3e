"""Kafka's protocol error codes, with retriability and a default message for each.

Every response carries int16 error codes, and clients decide what to do from the
number alone: retry (possibly after refreshing metadata or finding the coordinator
again), or give up and surface the error. So the numbers and their retriability are
part of the wire contract and must match Apache Kafka exactly; the table below does
(checked against Apache Kafka 4.4.0's ``Errors``, codes -1..136). A code is
*retriable* when Kafka's exception for it extends ``RetriableException``; a broker
that answers with a retriable code is telling the client "try again, this may pass".

The messages are ours. A broker puts them in the ``error_message`` fields of
flexible responses when it has nothing more specific to say, so each names what went
wrong and, where it helps, what the client or operator can do about it.
"""

from enum import IntEnum

__all__ = ["ErrorCode", "error_name"]


class ErrorCode(IntEnum):
    """A Kafka error code; ``.retriable`` and ``.message`` describe it.

    Members are plain ints (an ``IntEnum``), so they can be written straight into an
    int16 field and compared with codes read off the wire.
    """

    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    OFFSET_OUT_OF_RANGE = 1
    CORRUPT_MESSAGE = 2
    UNKNOWN_TOPIC_OR_PARTITION = 3
    INVALID_FETCH_SIZE = 4
    LEADER_NOT_AVAILABLE = 5
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    BROKER_NOT_AVAILABLE = 8
    REPLICA_NOT_AVAILABLE = 9
    MESSAGE_TOO_LARGE = 10
    STALE_CONTROLLER_EPOCH = 11
    OFFSET_METADATA_TOO_LARGE = 12
    NETWORK_EXCEPTION = 13
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    INVALID_TOPIC_EXCEPTION = 17
    RECORD_LIST_TOO_LARGE = 18
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    INVALID_REQUIRED_ACKS = 21
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    CLUSTER_AUTHORIZATION_FAILED = 31
    INVALID_TIMESTAMP = 32
    UNSUPPORTED_SASL_MECHANISM = 33
    ILLEGAL_SASL_STATE = 34
    UNSUPPORTED_VERSION = 35
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    INVALID_REPLICA_ASSIGNMENT = 39
    INVALID_CONFIG = 40
    NOT_CONTROLLER = 41
    INVALID_REQUEST = 42
    UNSUPPORTED_FOR_MESSAGE_FORMAT = 43
    POLICY_VIOLATION = 44
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45
    DUPLICATE_SEQUENCE_NUMBER = 46
    INVALID_PRODUCER_EPOCH = 47
    INVALID_TXN_STATE = 48
    INVALID_PRODUCER_ID_MAPPING = 49
    INVALID_TRANSACTION_TIMEOUT = 50
    CONCURRENT_TRANSACTIONS = 51
    TRANSACTION_COORDINATOR_FENCED = 52
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
    SECURITY_DISABLED = 54
    OPERATION_NOT_ATTEMPTED = 55
    KAFKA_STORAGE_ERROR = 56
    LOG_DIR_NOT_FOUND = 57
    SASL_AUTHENTICATION_FAILED = 58
    UNKNOWN_PRODUCER_ID = 59
    REASSIGNMENT_IN_PROGRESS = 60
    DELEGATION_TOKEN_AUTH_DISABLED = 61
    DELEGATION_TOKEN_NOT_FOUND = 62
    DELEGATION_TOKEN_OWNER_MISMATCH = 63
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED = 64
    DELEGATION_TOKEN_AUTHORIZATION_FAILED = 65
    DELEGATION_TOKEN_EXPIRED = 66
    INVALID_PRINCIPAL_TYPE = 67
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    FETCH_SESSION_ID_NOT_FOUND = 70
    INVALID_FETCH_SESSION_EPOCH = 71
    LISTENER_NOT_FOUND = 72
    TOPIC_DELETION_DISABLED = 73
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    UNSUPPORTED_COMPRESSION_TYPE = 76
    STALE_BROKER_EPOCH = 77
    OFFSET_NOT_AVAILABLE = 78
    MEMBER_ID_REQUIRED = 79
    PREFERRED_LEADER_NOT_AVAILABLE = 80
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    ELIGIBLE_LEADERS_NOT_AVAILABLE = 83
    ELECTION_NOT_NEEDED = 84
    NO_REASSIGNMENT_IN_PROGRESS = 85
    GROUP_SUBSCRIBED_TO_TOPIC = 86
    INVALID_RECORD = 87
    UNSTABLE_OFFSET_COMMIT = 88
    THROTTLING_QUOTA_EXCEEDED = 89
    PRODUCER_FENCED = 90
    RESOURCE_NOT_FOUND = 91
    DUPLICATE_RESOURCE = 92
    UNACCEPTABLE_CREDENTIAL = 93
    INCONSISTENT_VOTER_SET = 94
    INVALID_UPDATE_VERSION = 95
    FEATURE_UPDATE_FAILED = 96
    PRINCIPAL_DESERIALIZATION_FAILURE = 97
    SNAPSHOT_NOT_FOUND = 98
    POSITION_OUT_OF_RANGE = 99
    UNKNOWN_TOPIC_ID = 100
    DUPLICATE_BROKER_REGISTRATION = 101
    BROKER_ID_NOT_REGISTERED = 102
    INCONSISTENT_TOPIC_ID = 103
    INCONSISTENT_CLUSTER_ID = 104
    TRANSACTIONAL_ID_NOT_FOUND = 105
    FETCH_SESSION_TOPIC_ID_ERROR = 106
    INELIGIBLE_REPLICA = 107
    NEW_LEADER_ELECTED = 108
    OFFSET_MOVED_TO_TIERED_STORAGE = 109
    FENCED_MEMBER_EPOCH = 110
    UNRELEASED_INSTANCE_ID = 111
    UNSUPPORTED_ASSIGNOR = 112
    STALE_MEMBER_EPOCH = 113
    MISMATCHED_ENDPOINT_TYPE = 114
    UNSUPPORTED_ENDPOINT_TYPE = 115
    UNKNOWN_CONTROLLER_ID = 116
    UNKNOWN_SUBSCRIPTION_ID = 117
    TELEMETRY_TOO_LARGE = 118
    INVALID_REGISTRATION = 119
    TRANSACTION_ABORTABLE = 120
    INVALID_RECORD_STATE = 121
    SHARE_SESSION_NOT_FOUND = 122
    INVALID_SHARE_SESSION_EPOCH = 123
    FENCED_STATE_EPOCH = 124
    INVALID_VOTER_KEY = 125
    DUPLICATE_VOTER = 126
    VOTER_NOT_FOUND = 127
    INVALID_REGULAR_EXPRESSION = 128
    REBOOTSTRAP_REQUIRED = 129
    STREAMS_INVALID_TOPOLOGY = 130
    STREAMS_INVALID_TOPOLOGY_EPOCH = 131
    STREAMS_TOPOLOGY_FENCED = 132
    SHARE_SESSION_LIMIT_REACHED = 133
    GROUP_DELETION_FAILED = 134
    STREAMS_TOPOLOGY_DESCRIPTION_UPDATE_FAILED = 135
    CONTROLLER_ID_NOT_REGISTERED = 136

    @property
    def retriable(self) -> bool:
        """Whether Kafka clients may retry the request (Kafka: extends RetriableException)."""
        return self in _RETRIABLE

    @property
    def message(self) -> str:
        """Our default human-readable explanation; empty for ``NONE``."""
        return _MESSAGES[self]


# Codes whose Kafka exception extends RetriableException (directly or through
# InvalidMetadataException / RefreshRetriableException). Everything else is final.
_RETRIABLE: frozenset[ErrorCode] = frozenset(
    {
        ErrorCode.CORRUPT_MESSAGE,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.REQUEST_TIMED_OUT,
        ErrorCode.REPLICA_NOT_AVAILABLE,
        ErrorCode.NETWORK_EXCEPTION,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.NOT_ENOUGH_REPLICAS,
        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        ErrorCode.NOT_CONTROLLER,
        ErrorCode.CONCURRENT_TRANSACTIONS,
        ErrorCode.KAFKA_STORAGE_ERROR,
        ErrorCode.FETCH_SESSION_ID_NOT_FOUND,
        ErrorCode.INVALID_FETCH_SESSION_EPOCH,
        ErrorCode.LISTENER_NOT_FOUND,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.OFFSET_NOT_AVAILABLE,
        ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
        ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE,
        ErrorCode.ELECTION_NOT_NEEDED,
        ErrorCode.UNSTABLE_OFFSET_COMMIT,
        ErrorCode.THROTTLING_QUOTA_EXCEEDED,
        ErrorCode.UNKNOWN_TOPIC_ID,
        ErrorCode.INCONSISTENT_TOPIC_ID,
        ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR,
        ErrorCode.SHARE_SESSION_NOT_FOUND,
        ErrorCode.INVALID_SHARE_SESSION_EPOCH,
        ErrorCode.SHARE_SESSION_LIMIT_REACHED,
    }
)

_MESSAGES: dict[ErrorCode, str] = {
    ErrorCode.UNKNOWN_SERVER_ERROR: (
        "The broker hit an unexpected internal error while handling the request; its log should "
        "say more."
    ),
    ErrorCode.NONE: "",
    ErrorCode.OFFSET_OUT_OF_RANGE: (
        "The requested offset lies outside the partition's current log (before its start or past "
        "its end); reset the position according to the offset reset policy."
    ),
    ErrorCode.CORRUPT_MESSAGE: (
        "A record batch is corrupt: its CRC does not match, its size is invalid, or a compacted "
        "topic received a record without a key."
    ),
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: (
        "This broker has no such topic or partition; refresh metadata and check the name."
    ),
    ErrorCode.INVALID_FETCH_SIZE: ("The fetch request asked for an invalid maximum size."),
    ErrorCode.LEADER_NOT_AVAILABLE: (
        "The partition has no leader right now, typically during a leader election or just after "
        "topic creation; retry after a metadata refresh."
    ),
    ErrorCode.NOT_LEADER_OR_FOLLOWER: (
        "This broker is not the leader of the partition (or, for follower fetches, not a replica "
        "of it); refresh metadata to find the current leader."
    ),
    ErrorCode.REQUEST_TIMED_OUT: (
        "The broker could not complete the request in time, for example while waiting for "
        "replicas to acknowledge it."
    ),
    ErrorCode.BROKER_NOT_AVAILABLE: ("The addressed broker is not available."),
    ErrorCode.REPLICA_NOT_AVAILABLE: (
        "A replica of the partition is not available on the addressed broker."
    ),
    ErrorCode.MESSAGE_TOO_LARGE: (
        "A record batch is larger than the topic's max.message.bytes allows; send smaller batches"
        " or raise the limit."
    ),
    ErrorCode.STALE_CONTROLLER_EPOCH: (
        "The request came from a controller whose epoch is no longer current."
    ),
    ErrorCode.OFFSET_METADATA_TOO_LARGE: (
        "The metadata string attached to an offset commit is longer than the broker allows."
    ),
    ErrorCode.NETWORK_EXCEPTION: ("The connection was closed before a response arrived."),
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: (
        "The coordinator is still loading its state and cannot serve the request yet; retry "
        "shortly."
    ),
    ErrorCode.COORDINATOR_NOT_AVAILABLE: (
        "No coordinator is available for this group or transactional ID right now; find the "
        "coordinator again and retry."
    ),
    ErrorCode.NOT_COORDINATOR: (
        "This broker is not the coordinator for the group or transactional ID; find the "
        "coordinator again and retry there."
    ),
    ErrorCode.INVALID_TOPIC_EXCEPTION: (
        "The topic name is invalid, or the operation is not allowed on this topic (for example, "
        "producing to an internal topic)."
    ),
    ErrorCode.RECORD_LIST_TOO_LARGE: (
        "A record batch is larger than a log segment of the topic can hold."
    ),
    ErrorCode.NOT_ENOUGH_REPLICAS: (
        "Too few replicas are in sync to satisfy min.insync.replicas, so the write was refused; "
        "it may succeed once replicas catch up."
    ),
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: (
        "The records were appended to the leader, but too few in-sync replicas remained to "
        "acknowledge them; retrying may write them twice unless the producer is idempotent."
    ),
    ErrorCode.INVALID_REQUIRED_ACKS: "The produce request's acks value is not one of -1, 0 or 1.",
    ErrorCode.ILLEGAL_GENERATION: (
        "The generation ID does not match the group's current generation; the member must rejoin "
        "the group."
    ),
    ErrorCode.INCONSISTENT_GROUP_PROTOCOL: (
        "The member's protocol type or protocols have nothing in common with those of the group's"
        " current members."
    ),
    ErrorCode.INVALID_GROUP_ID: ("The group ID is empty or otherwise invalid."),
    ErrorCode.UNKNOWN_MEMBER_ID: (
        "The coordinator does not know this member ID; the member must rejoin the group."
    ),
    ErrorCode.INVALID_SESSION_TIMEOUT: (
        "The session timeout is outside the range the broker accepts "
        "(group.min.session.timeout.ms to group.max.session.timeout.ms)."
    ),
    ErrorCode.REBALANCE_IN_PROGRESS: (
        "The group is rebalancing; the member must rejoin before it can continue."
    ),
    ErrorCode.INVALID_COMMIT_OFFSET_SIZE: ("The offset commit was too large to be stored."),
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: (
        "The principal is not authorized to perform this operation on the topic."
    ),
    ErrorCode.GROUP_AUTHORIZATION_FAILED: (
        "The principal is not authorized to perform this operation on the group."
    ),
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: (
        "The principal is not authorized to perform this operation on the cluster."
    ),
    ErrorCode.INVALID_TIMESTAMP: (
        "A record timestamp is outside the range the topic accepts (see "
        "message.timestamp.before.max.ms and message.timestamp.after.max.ms)."
    ),
    ErrorCode.UNSUPPORTED_SASL_MECHANISM: (
        "The broker does not offer the requested SASL mechanism on this listener."
    ),
    ErrorCode.ILLEGAL_SASL_STATE: (
        "The request is not allowed at this point of the SASL exchange."
    ),
    ErrorCode.UNSUPPORTED_VERSION: (
        "The broker does not support this API or this version of it; use ApiVersions to pick a "
        "supported version."
    ),
    ErrorCode.TOPIC_ALREADY_EXISTS: ("A topic with this name already exists."),
    ErrorCode.INVALID_PARTITIONS: (
        "The requested number of partitions is invalid (it must be positive, and can only grow)."
    ),
    ErrorCode.INVALID_REPLICATION_FACTOR: (
        "The replication factor is invalid, or larger than the number of available brokers."
    ),
    ErrorCode.INVALID_REPLICA_ASSIGNMENT: (
        "The manual replica assignment is invalid (unknown or duplicate brokers, or uneven "
        "replica counts)."
    ),
    ErrorCode.INVALID_CONFIG: ("A configuration name or value in the request is invalid."),
    ErrorCode.NOT_CONTROLLER: (
        "This node is not the active controller; refresh metadata and send the request to the "
        "controller."
    ),
    ErrorCode.INVALID_REQUEST: (
        "The request is malformed or inconsistent; this usually points to a client bug, and the "
        "broker log has details."
    ),
    ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT: (
        "The operation needs a newer record format than the topic or request uses."
    ),
    ErrorCode.POLICY_VIOLATION: ("The request breaks a policy configured on the broker."),
    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER: (
        "The batch's sequence number is not the one the broker expected next for this producer "
        "and partition, so records may have been lost."
    ),
    ErrorCode.DUPLICATE_SEQUENCE_NUMBER: (
        "The broker already holds a batch with this sequence number from this producer."
    ),
    ErrorCode.INVALID_PRODUCER_EPOCH: (
        "The producer epoch is older than the one the broker knows, or the transaction has "
        "already timed out; the producer must abort or reinitialize."
    ),
    ErrorCode.INVALID_TXN_STATE: "The operation is not allowed in the transaction's current state.",
    ErrorCode.INVALID_PRODUCER_ID_MAPPING: (
        "The producer ID does not match the one the coordinator holds for this transactional ID; "
        "reinitialize the producer."
    ),
    ErrorCode.INVALID_TRANSACTION_TIMEOUT: (
        "The transaction timeout is larger than transaction.max.timeout.ms allows."
    ),
    ErrorCode.CONCURRENT_TRANSACTIONS: (
        "The previous transaction for this producer is still being completed; retry shortly."
    ),
    ErrorCode.TRANSACTION_COORDINATOR_FENCED: (
        "The transaction coordinator that sent this request has been replaced by one with a newer"
        " epoch."
    ),
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: (
        "The principal is not authorized to use this transactional ID."
    ),
    ErrorCode.SECURITY_DISABLED: (
        "The request needs security features that are not enabled on this broker."
    ),
    ErrorCode.OPERATION_NOT_ATTEMPTED: (
        "The broker did not try this operation, because another part of the same request failed "
        "first."
    ),
    ErrorCode.KAFKA_STORAGE_ERROR: (
        "A disk error on the broker made the partition's log unavailable; refresh metadata and "
        "retry, possibly against a new leader."
    ),
    ErrorCode.LOG_DIR_NOT_FOUND: (
        "The named log directory is not one of the broker's configured log directories."
    ),
    ErrorCode.SASL_AUTHENTICATION_FAILED: (
        "SASL authentication failed; check the credentials and mechanism."
    ),
    ErrorCode.UNKNOWN_PRODUCER_ID: (
        "The broker holds no state for this producer ID on the partition, for instance because "
        "retention removed all of its records."
    ),
    ErrorCode.REASSIGNMENT_IN_PROGRESS: ("A replica reassignment of the partition is in progress."),
    ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED: (
        "Delegation tokens are not enabled on this cluster."
    ),
    ErrorCode.DELEGATION_TOKEN_NOT_FOUND: (
        "The broker has no delegation token matching the request."
    ),
    ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH: (
        "The principal is neither the owner nor a renewer of the delegation token."
    ),
    ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED: (
        "Delegation token requests are refused on unauthenticated connections and on connections "
        "that themselves authenticated with a delegation token."
    ),
    ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED: (
        "The principal is not authorized to perform this delegation token operation."
    ),
    ErrorCode.DELEGATION_TOKEN_EXPIRED: ("The delegation token has expired."),
    ErrorCode.INVALID_PRINCIPAL_TYPE: ("The principal type in the request is not supported."),
    ErrorCode.NON_EMPTY_GROUP: ("The group still has active members, so the operation is refused."),
    ErrorCode.GROUP_ID_NOT_FOUND: ("No group with this ID exists."),
    ErrorCode.FETCH_SESSION_ID_NOT_FOUND: (
        "The broker no longer has this fetch session (it may have been evicted); start a new one "
        "with a full fetch."
    ),
    ErrorCode.INVALID_FETCH_SESSION_EPOCH: (
        "The fetch session epoch is not the expected next one; start a new session with a full "
        "fetch."
    ),
    ErrorCode.LISTENER_NOT_FOUND: (
        "The partition's leader has no endpoint for the listener this request came in on; "
        "listener configuration may differ between brokers."
    ),
    ErrorCode.TOPIC_DELETION_DISABLED: (
        "Topic deletion is turned off on this cluster (delete.topic.enable=false)."
    ),
    ErrorCode.FENCED_LEADER_EPOCH: (
        "The leader epoch in the request is older than the broker's; refresh metadata and retry."
    ),
    ErrorCode.UNKNOWN_LEADER_EPOCH: (
        "The leader epoch in the request is newer than the broker's; the broker has not caught up"
        " yet, so retry shortly."
    ),
    ErrorCode.UNSUPPORTED_COMPRESSION_TYPE: (
        "The partition's data uses a compression type that this client's request version cannot "
        "carry."
    ),
    ErrorCode.STALE_BROKER_EPOCH: ("The broker epoch in the request is out of date."),
    ErrorCode.OFFSET_NOT_AVAILABLE: (
        "The new leader's high watermark has not caught up since the election, so the offset "
        "cannot be given yet; retry shortly."
    ),
    ErrorCode.MEMBER_ID_REQUIRED: (
        "The member must join again using the member ID the coordinator returned with this error."
    ),
    ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE: (
        "The preferred replica cannot become leader at the moment."
    ),
    ErrorCode.GROUP_MAX_SIZE_REACHED: (
        "The group is full (group.max.size); no more members can join."
    ),
    ErrorCode.FENCED_INSTANCE_ID: (
        "Another member registered with the same group.instance.id under a different member ID, "
        "so this static member has been fenced."
    ),
    ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE: (
        "None of the replicas eligible to lead the partition is available."
    ),
    ErrorCode.ELECTION_NOT_NEEDED: (
        "The partition already has the leader the election would choose."
    ),
    ErrorCode.NO_REASSIGNMENT_IN_PROGRESS: (
        "There is no replica reassignment of this partition to cancel."
    ),
    ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC: (
        "The group's offsets for a topic cannot be deleted while the group is subscribed to that "
        "topic."
    ),
    ErrorCode.INVALID_RECORD: (
        "A record failed the broker's validation and was rejected; the per-record errors say why."
    ),
    ErrorCode.UNSTABLE_OFFSET_COMMIT: (
        "Offsets for the partition are pending in an open transaction; retry once it commits or "
        "aborts."
    ),
    ErrorCode.THROTTLING_QUOTA_EXCEEDED: (
        "The request would exceed the principal's quota on topic or partition mutations; retry "
        "after the throttle time."
    ),
    ErrorCode.PRODUCER_FENCED: (
        "A newer producer with the same transactional ID has started, so this one is fenced and "
        "must close."
    ),
    ErrorCode.RESOURCE_NOT_FOUND: ("The request names a resource that does not exist."),
    ErrorCode.DUPLICATE_RESOURCE: ("The request names the same resource more than once."),
    ErrorCode.UNACCEPTABLE_CREDENTIAL: (
        "The credential does not meet the broker's requirements (for example, too few iterations)."
    ),
    ErrorCode.INCONSISTENT_VOTER_SET: (
        "The sender or the receiver of this quorum request is not one of the voters the other "
        "side expects."
    ),
    ErrorCode.INVALID_UPDATE_VERSION: ("The feature update names an invalid version."),
    ErrorCode.FEATURE_UPDATE_FAILED: (
        "The finalized features could not be updated because of an unexpected error on the "
        "controller."
    ),
    ErrorCode.PRINCIPAL_DESERIALIZATION_FAILURE: (
        "A forwarded request's principal could not be deserialized; the cluster's security setup "
        "is inconsistent."
    ),
    ErrorCode.SNAPSHOT_NOT_FOUND: ("The requested snapshot does not exist."),
    ErrorCode.POSITION_OUT_OF_RANGE: (
        "The requested position is negative or beyond the end of the snapshot."
    ),
    ErrorCode.UNKNOWN_TOPIC_ID: (
        "This broker knows no topic with this ID; refresh metadata to get current topic IDs."
    ),
    ErrorCode.DUPLICATE_BROKER_REGISTRATION: (
        "Another live broker has already registered with this broker ID."
    ),
    ErrorCode.BROKER_ID_NOT_REGISTERED: ("No broker has registered with this ID."),
    ErrorCode.INCONSISTENT_TOPIC_ID: (
        "The topic ID in the request differs from the ID of the partition's log on this broker."
    ),
    ErrorCode.INCONSISTENT_CLUSTER_ID: (
        "The cluster ID in the request differs from this node's cluster ID."
    ),
    ErrorCode.TRANSACTIONAL_ID_NOT_FOUND: (
        "No transaction state exists for this transactional ID."
    ),
    ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR: (
        "The fetch session mixed topic IDs and topic names inconsistently; start a new session."
    ),
    ErrorCode.INELIGIBLE_REPLICA: (
        "The proposed in-sync replica set includes a replica that is not eligible to be in it."
    ),
    ErrorCode.NEW_LEADER_ELECTED: (
        "The partition state was updated, but a different leader has since been elected."
    ),
    ErrorCode.OFFSET_MOVED_TO_TIERED_STORAGE: (
        "The requested offset is no longer in local storage; it now lives in tiered storage."
    ),
    ErrorCode.FENCED_MEMBER_EPOCH: (
        "The coordinator fenced this member's epoch; the member must give up its partitions and "
        "join again."
    ),
    ErrorCode.UNRELEASED_INSTANCE_ID: (
        "Another member of the group still holds this instance ID and must leave before it can be"
        " reused."
    ),
    ErrorCode.UNSUPPORTED_ASSIGNOR: (
        "The group does not support the requested assignor or assignor version."
    ),
    ErrorCode.STALE_MEMBER_EPOCH: (
        "The member epoch is out of date; retry after the next heartbeat returns the current epoch."
    ),
    ErrorCode.MISMATCHED_ENDPOINT_TYPE: (
        "The request reached an endpoint of the wrong kind (broker versus controller)."
    ),
    ErrorCode.UNSUPPORTED_ENDPOINT_TYPE: (
        "This kind of endpoint does not support the request yet."
    ),
    ErrorCode.UNKNOWN_CONTROLLER_ID: ("No controller with this ID is known."),
    ErrorCode.UNKNOWN_SUBSCRIPTION_ID: (
        "The telemetry subscription ID is unknown or outdated; fetch the subscriptions again."
    ),
    ErrorCode.TELEMETRY_TOO_LARGE: ("The pushed telemetry exceeds the size the broker accepts."),
    ErrorCode.INVALID_REGISTRATION: "The controller rejected the broker's registration as invalid.",
    ErrorCode.TRANSACTION_ABORTABLE: (
        "The transaction hit an error and must be aborted; the transactional ID stays usable "
        "afterwards."
    ),
    ErrorCode.INVALID_RECORD_STATE: (
        "The record is not in a state that allows this acknowledgement."
    ),
    ErrorCode.SHARE_SESSION_NOT_FOUND: (
        "The broker no longer has this share session; open a new one."
    ),
    ErrorCode.INVALID_SHARE_SESSION_EPOCH: (
        "The share session epoch is not the expected next one; open a new session."
    ),
    ErrorCode.FENCED_STATE_EPOCH: (
        "The state epoch in the request does not match the coordinator's."
    ),
    ErrorCode.INVALID_VOTER_KEY: (
        "The voter key in the request does not match the receiving replica's key."
    ),
    ErrorCode.DUPLICATE_VOTER: ("The voter is already a member of the voter set."),
    ErrorCode.VOTER_NOT_FOUND: ("The voter is not a member of the voter set."),
    ErrorCode.INVALID_REGULAR_EXPRESSION: "The subscription's regular expression cannot be parsed.",
    ErrorCode.REBOOTSTRAP_REQUIRED: (
        "The client's view of the cluster is too stale to repair; it should rebootstrap from its "
        "bootstrap servers."
    ),
    ErrorCode.STREAMS_INVALID_TOPOLOGY: ("The Streams topology in the request is invalid."),
    ErrorCode.STREAMS_INVALID_TOPOLOGY_EPOCH: (
        "The Streams topology epoch in the request is invalid."
    ),
    ErrorCode.STREAMS_TOPOLOGY_FENCED: (
        "The Streams topology epoch in the request is older than the group's."
    ),
    ErrorCode.SHARE_SESSION_LIMIT_REACHED: (
        "The broker already holds as many share sessions as it allows; retry later."
    ),
    ErrorCode.GROUP_DELETION_FAILED: (
        "Some groups could not be deleted; each group's result carries the reason."
    ),
    ErrorCode.STREAMS_TOPOLOGY_DESCRIPTION_UPDATE_FAILED: (
        "The broker could not apply the Streams topology description update; the error message "
        "gives the reason."
    ),
    ErrorCode.CONTROLLER_ID_NOT_REGISTERED: ("No controller has registered with this ID."),
}

_NAMES: dict[int, str] = {member.value: member.name for member in ErrorCode}


def error_name(code: int) -> str:
    """Return Kafka's name for ``code``, or ``UNKNOWN_CODE_<n>`` for a code we do not know.

    Logging a peer's response must never fail, and newer peers may send codes newer
    than this table, hence no exception here.
    """
    name = _NAMES.get(code)
    return name if name is not None else f"UNKNOWN_CODE_{code}"
