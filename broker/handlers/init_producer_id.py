"""InitProducerId (key 22), v0-5: producer ids for idempotent producers.

Behaviour, as Apache Kafka 4.4:
- No transactional id (an idempotent producer): a fresh producer id with epoch 0,
  whatever id and epoch the request carries (v3+ carry them when a producer asks for a
  new id after an epoch bump of its own, KIP-360). The ids come from blocks of 1000
  that the controller grants this broker (AllocateProducerIds, persisted as a
  ``ProducerIdsRecord`` in the metadata log, so no id repeats across restarts); while
  no block is at hand the request waits for the one asked for, and if the controller
  refuses it the answer is COORDINATOR_LOAD_IN_PROGRESS (retriable).
- ``producer_id`` and ``producer_epoch`` must be both -1 or both set: INVALID_REQUEST.
- A transactional id: INVALID_REQUEST if empty, INVALID_TRANSACTION_TIMEOUT outside
  (0, ``transaction.max.timeout.ms``], otherwise COORDINATOR_NOT_AVAILABLE until the
  transaction coordinator exists (see :func:`~millpond.broker.producer_ids.init_producer_id`).
- Errors carry producer id and epoch -1; before v4, PRODUCER_FENCED is sent as
  INVALID_PRODUCER_EPOCH.
- Not yet: the transaction coordinator (transactional ids), 2PC (v6, KIP-939, unstable
  in Kafka 4.4 and not advertised).

Version notes: v1 is v0 (throttling after the response, KIP-219); v2 is flexible; v3
adds the producer id and epoch to the request (KIP-360); v4 allows PRODUCER_FENCED
(KIP-588); v5 marks a client that speaks transactions v2 (KIP-890).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from millpond.broker.context import RequestContext
from millpond.broker.producer_ids import (
    InitProducerIdResult,
    init_producer_id,
    init_producer_id_error_for_version,
)
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.init_producer_id_request import InitProducerIdRequest
from millpond.wire.generated.api.init_producer_id_response import InitProducerIdResponse

if TYPE_CHECKING:
    from millpond.broker.broker_server import BrokerServer


async def handle(
    broker: BrokerServer, ctx: RequestContext, request: InitProducerIdRequest
) -> InitProducerIdResponse:
    def answer() -> InitProducerIdResult:
        return init_producer_id(
            transactional_id=request.transactional_id,
            transaction_timeout_ms=request.transaction_timeout_ms,
            producer_id=request.producer_id,
            producer_epoch=request.producer_epoch,
            generate_producer_id=broker.producer_ids.generate_producer_id,
            enable_2pc=request.enable2_pc,
            keep_prepared_txn=request.keep_prepared_txn,
        )

    result = answer()
    if result.error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
        # The block was asked for and is on its way from the controller: wait for it
        # once rather than have the client retry.
        await broker.producer_id_blocks.wait()
        result = answer()
    return InitProducerIdResponse(
        error_code=init_producer_id_error_for_version(result.error, ctx.api_version),
        producer_id=result.producer_id,
        producer_epoch=result.producer_epoch,
    )
