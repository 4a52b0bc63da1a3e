"""DeleteTopics (key 20), v1-6: topics removed through the controller, then their logs.

Behaviour, as Apache Kafka 4.4 (its controller path):
- v1-5 name topics; v6 names each by name *or* id. A missing name is
  UNKNOWN_TOPIC_OR_PARTITION, a missing id UNKNOWN_TOPIC_ID. A v6 entry with both a
  name and an id, or with neither, is INVALID_REQUEST; so is a name or id given twice
  ("Duplicate topic name." / "Duplicate topic id.", one result each), and a name whose
  topic's id was also given (the name gets the error, nothing is deleted for either).
- ``delete.topic.enable=false`` refuses the whole request: TOPIC_DELETION_DISABLED for
  every topic (INVALID_REQUEST below v3).
- The answer waits for the controller's RemoveTopicRecords to commit; the broker's
  metadata publisher then deletes the topic's partition logs (renamed ``-delete`` and
  removed after file.delete.delay.ms), before the answer is sent.

Version notes: v1 adds throttle_time_ms; v2-3 differ only in quota behaviour; v4 is
flexible; v5 adds error messages (KIP-599); v6 adds topic ids (KIP-516).
Not implemented: authorization, the controller mutation quota. Kafka shuffles the
results so their order reveals nothing; millpond keeps request order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from millpond.broker.context import RequestContext
from millpond.broker.handlers.describe_configs import broker_config
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.delete_topics_request import DeleteTopicsRequest
from millpond.wire.generated.api.delete_topics_response import (
    DeletableTopicResult,
    DeleteTopicsResponse,
)
from millpond.wire.primitives import ZERO_UUID

if TYPE_CHECKING:
    from millpond.broker.broker_server import BrokerServer


async def handle(
    broker: BrokerServer, ctx: RequestContext, request: DeleteTopicsRequest
) -> DeleteTopicsResponse:
    version = ctx.api_version
    given: list[tuple[str | None, bytes]] = (
        [(t.name, t.topic_id) for t in request.topics]
        if version >= 6
        else [(name, ZERO_UUID) for name in request.topic_names]
    )
    if not broker_config(broker).delete_topic_enable:
        code = ErrorCode.TOPIC_DELETION_DISABLED if version >= 3 else ErrorCode.INVALID_REQUEST
        return DeleteTopicsResponse(
            responses=[
                DeletableTopicResult(name=name, topic_id=topic_id, error_code=code)
                for name, topic_id in given
            ]
        )
    results: list[DeletableTopicResult] = []

    def refuse(name: str | None, topic_id: bytes, code: ErrorCode, message: str) -> None:
        results.append(
            DeletableTopicResult(
                name=name, topic_id=topic_id, error_code=code, error_message=message
            )
        )

    names: list[str] = []
    ids: list[bytes] = []
    for name, topic_id in given:
        if name is None and topic_id == ZERO_UUID:
            refuse(
                None,
                ZERO_UUID,
                ErrorCode.INVALID_REQUEST,
                "Neither topic name nor id were specified.",
            )
        elif name is not None and topic_id != ZERO_UUID:
            refuse(
                name,
                topic_id,
                ErrorCode.INVALID_REQUEST,
                "You may not specify both topic name and topic id.",
            )
        elif name is not None:
            names.append(name)
        else:
            ids.append(topic_id)
    # A name that resolves to an id also given: Kafka refuses the name and drops the id.
    clashing = {
        broker.image.topic_ids_by_name[n]
        for n in names
        if n in broker.image.topic_ids_by_name
        and broker.image.topic_ids_by_name[n] in ids
        and names.count(n) == 1
        and ids.count(broker.image.topic_ids_by_name[n]) == 1
    }
    for name in names:
        topic_id = broker.image.topic_ids_by_name.get(name, ZERO_UUID)
        if topic_id in clashing:
            refuse(
                name,
                topic_id,
                ErrorCode.INVALID_REQUEST,
                "The provided topic name maps to an ID that was already supplied.",
            )
    names = [n for n in names if broker.image.topic_ids_by_name.get(n) not in clashing]
    ids = [i for i in ids if i not in clashing]

    outcome = await broker.admin_channel.delete_topics(names, ids)
    for r in outcome:
        results.append(
            DeletableTopicResult(
                name=r.name,
                topic_id=r.topic_id,
                error_code=r.error.code,
                # Kafka explains every failure, a missing topic or id included.
                error_message=r.error.message
                if r.error.message is not None or r.error.code == ErrorCode.NONE
                else ErrorCode(r.error.code).message,
            )
        )
    return DeleteTopicsResponse(responses=results)
