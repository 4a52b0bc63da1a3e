"""The authorization hook: every request is checked before its handler runs, as Kafka's
``authorizer.class.name`` checks it, and a refusal reaches the client as Kafka's error.

An :class:`Authorizer` answers, for one request's context (its principal, listener and
client address) and a list of :class:`Action` (an operation on a resource: DESCRIBE on
topic ``t``, DESCRIBE on the cluster), whether each is allowed, as Kafka's
``Authorizer.authorize`` does. The broker's default allows everything, and then nothing
is asked at all. An ACL store plugs in as another :class:`Authorizer`.

:class:`RequestGuard` knows which actions each API needs and how Kafka answers when some
are refused:

- Metadata needs DESCRIBE on each topic it names, and CREATE (on the cluster, or else on
  the topic) for each it would create; a refused topic is answered
  TOPIC_AUTHORIZATION_FAILED (with no topic id and no partitions) while the others are
  answered normally. A request for every topic leaves refused ones out without a word.
- DescribeLogDirs needs DESCRIBE on the cluster; refused, it answers no log dirs and
  CLUSTER_AUTHORIZATION_FAILED.
- ListConfigResources needs DESCRIBE_CONFIGS on the cluster; refused, it lists nothing
  and answers CLUSTER_AUTHORIZATION_FAILED.
- AlterReplicaLogDirs needs ALTER on the cluster; refused, every partition it names is
  answered CLUSTER_AUTHORIZATION_FAILED and nothing moves.
- ApiVersions needs nothing (a client must learn versions before anything else).

Every other API needs ALL on the cluster until its own actions are written here, and a
refusal closes the connection: stricter than Kafka, never more lenient.
"""

from __future__ import annotations

import copy
import enum
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from millpond.wire.errors import ErrorCode

if TYPE_CHECKING:
    from millpond.broker.context import RequestContext
    from millpond.wire import Message

#: The one cluster resource's name, as Kafka's.
CLUSTER_NAME = "kafka-cluster"


class AclOperation(enum.IntEnum):
    """Kafka's ACL operations, with their wire codes."""

    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class ResourceType(enum.IntEnum):
    """Kafka's resource types, with their wire codes."""

    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class Action(NamedTuple):
    """One operation on one named resource, as an authorizer is asked about it."""

    operation: AclOperation
    resource_type: ResourceType
    name: str


class Authorizer(Protocol):
    """Decides, for a request's context, which of ``actions`` are allowed."""

    def authorize(self, ctx: RequestContext, actions: Sequence[Action]) -> Sequence[bool]:
        """One verdict per action, in order (True: allowed)."""
        ...


class AllowEverything:
    """The default: every principal may do everything (Kafka without an authorizer)."""

    def authorize(self, ctx: RequestContext, actions: Sequence[Action]) -> Sequence[bool]:
        return [True] * len(actions)


class Narrowed(NamedTuple):
    """Part of a request allowed: the handler gets ``request``; ``amend`` adds the refused
    part's errors to its response."""

    request: Any
    amend: Callable[[Any], Any]


Verdict = None | Narrowed
"""None: handle the request as it is."""


class Topics(Protocol):
    """What the guard needs to know of the metadata image and the broker's configs."""

    def name_of(self, topic_id: bytes) -> str | None:
        """A topic's name by its id (None: unknown)."""
        ...

    def creatable(self, name: str) -> bool:
        """Whether a Metadata request for ``name`` would create it (it does not exist and
        ``auto.create.topics.enable`` is on)."""
        ...


class NoTopics:
    """Knows no topic and creates none."""

    def name_of(self, topic_id: bytes) -> str | None:
        return None

    def creatable(self, name: str) -> bool:
        return False


class RequestGuard:
    """The actions each API needs, and Kafka's answer when they are refused."""

    def __init__(self, authorizer: Authorizer, topics: Topics | None = None) -> None:
        self.authorizer = authorizer
        self.topics = topics or NoTopics()

    @classmethod
    def of(cls, authorizer: Authorizer, topics: Topics | None = None) -> RequestGuard | None:
        """The guard for ``authorizer``; None when it allows everything anyway."""
        if isinstance(authorizer, AllowEverything):
            return None
        return cls(authorizer, topics)

    def check(self, api_key: int, ctx: RequestContext, request: Any) -> Message | Verdict:
        """None to handle ``request``; a :class:`Narrowed` request; or the response that
        refuses it. Raises CloseConnection when the API's response cannot say no."""
        if api_key == 18:  # ApiVersions
            return None
        if request is not None:
            if api_key == 3:
                return self._metadata(ctx, request)
            if api_key == 35:
                return self._describe_log_dirs(ctx, request)
            if api_key == 74:
                return self._list_config_resources(ctx)
            if api_key == 34:
                return self._alter_replica_log_dirs(ctx, request)
        self._whole(api_key, ctx)
        return None

    def _allowed(self, ctx: RequestContext, actions: Sequence[Action]) -> Sequence[bool]:
        return self.authorizer.authorize(ctx, actions) if actions else ()

    def _whole(self, api_key: int, ctx: RequestContext) -> None:
        from millpond.broker.dispatch import CloseConnection  # noqa: PLC0415 (a cycle)
        from millpond.wire import APIS  # noqa: PLC0415

        if not self._on_cluster(ctx, AclOperation.ALL):
            raise CloseConnection(f"{ctx.principal} may not send {APIS[api_key].name}")

    def _metadata(self, ctx: RequestContext, request: Any) -> Message | Verdict:
        if request.topics is None:  # every topic: refused ones are left out
            return Narrowed(request, lambda response: self._visible(ctx, response))
        names = [t.name or self.topics.name_of(t.topic_id) or "" for t in request.topics]
        verdicts = list(
            self._allowed(
                ctx, [Action(AclOperation.DESCRIBE, ResourceType.TOPIC, n) for n in names]
            )
        )
        if request.allow_auto_topic_creation:
            # Creating needs CREATE on the cluster, or else on each topic it would create.
            created = [
                i for i, name in enumerate(names)
                if verdicts[i] and name and self.topics.creatable(name)
            ]  # fmt: skip
            cluster = Action(AclOperation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME)
            if created and not all(self._allowed(ctx, [cluster])):
                creatable = self._allowed(
                    ctx,
                    [Action(AclOperation.CREATE, ResourceType.TOPIC, names[i]) for i in created],
                )
                for i, ok in zip(created, creatable, strict=True):
                    verdicts[i] = ok
        if all(verdicts):
            return None
        allowed = [t for t, ok in zip(request.topics, verdicts, strict=True) if ok]
        refused = [t for t, ok in zip(request.topics, verdicts, strict=True) if not ok]
        narrowed = copy.copy(request)
        narrowed.topics = allowed

        def amend(response: Any) -> Any:
            from millpond.wire.generated.api.metadata_response import (  # noqa: PLC0415
                MetadataResponseTopic,
            )

            for topic in refused:
                # By name: no topic id, so existence is not disclosed; by id: ids are not
                # secret, the name stays unknown (null).
                by_id = not topic.name
                response.topics.append(
                    MetadataResponseTopic(
                        error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                        name=None if by_id else topic.name,
                        topic_id=topic.topic_id if by_id else bytes(16),
                    )
                )
            return response

        if not allowed:
            # Nothing left to ask, but an empty list means "every topic" to v0: whatever
            # the handler found is dropped.
            return Narrowed(narrowed, lambda response: amend(_no_topics(response)))
        return Narrowed(narrowed, amend)

    def _visible(self, ctx: RequestContext, response: Any) -> Any:
        topics = response.topics
        verdicts = self._allowed(
            ctx, [Action(AclOperation.DESCRIBE, ResourceType.TOPIC, t.name or "") for t in topics]
        )
        response.topics = [t for t, ok in zip(topics, verdicts, strict=True) if ok]
        return response

    def _on_cluster(self, ctx: RequestContext, operation: AclOperation) -> bool:
        return all(self._allowed(ctx, [Action(operation, ResourceType.CLUSTER, CLUSTER_NAME)]))

    def _describe_log_dirs(self, ctx: RequestContext, request: Any) -> Message | Verdict:
        if self._on_cluster(ctx, AclOperation.DESCRIBE):
            return None
        from millpond.wire.generated.api.describe_log_dirs_response import (  # noqa: PLC0415
            DescribeLogDirsResponse,
        )

        return DescribeLogDirsResponse(
            error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, results=[]
        )

    def _list_config_resources(self, ctx: RequestContext) -> Message | Verdict:
        if self._on_cluster(ctx, AclOperation.DESCRIBE_CONFIGS):
            return None
        from millpond.wire.generated.api.list_config_resources_response import (  # noqa: PLC0415
            ListConfigResourcesResponse,
        )

        return ListConfigResourcesResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED)

    def _alter_replica_log_dirs(self, ctx: RequestContext, request: Any) -> Message | Verdict:
        if self._on_cluster(ctx, AclOperation.ALTER):
            return None
        from millpond.wire.generated.api.alter_replica_log_dirs_response import (  # noqa: PLC0415
            AlterReplicaLogDirPartitionResult,
            AlterReplicaLogDirsResponse,
            AlterReplicaLogDirTopicResult,
        )

        refused = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return AlterReplicaLogDirsResponse(
            results=[
                AlterReplicaLogDirTopicResult(
                    topic_name=topic.name,
                    partitions=[
                        AlterReplicaLogDirPartitionResult(partition_index=p, error_code=refused)
                        for p in topic.partitions
                    ],
                )
                for directory in request.dirs  # one result per topic of each dir, as Kafka's
                for topic in directory.topics
            ]
        )


def _no_topics(response: Any) -> Any:
    response.topics = []
    return response
