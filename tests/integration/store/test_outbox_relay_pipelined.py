"""The relay with a pipelining publisher (the services' Kafka producer): a batch is handed over in
order and its acknowledgements awaited together; a failed acknowledgement stops only its tenant,
whose later events stay unpublished in order; rows of topics the relay does not know stay put."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Awaitable
from typing import Any

import asyncpg
import pytest
from mnemo_store import OutboxEvent, OutboxMessage, OutboxRelay, PipelinedPublisher, Store

TOPIC = "mnemo.test.pipelined.v1"


class PipelinedRecorder:
    """Queues in order; acknowledges later; one chosen event's acknowledgement fails."""

    def __init__(self, fail: set[uuid.UUID] | None = None) -> None:
        self.queued: list[OutboxMessage] = []
        self.acknowledged: list[OutboxMessage] = []
        self.fail = fail or set()

    async def publish(self, message: OutboxMessage) -> None:
        await (await self.enqueue(message))

    async def enqueue(self, message: OutboxMessage) -> Awaitable[object]:
        self.queued.append(message)

        async def acknowledgement() -> None:
            # Injected latency, not synchronisation: acknowledgements come back out of order.
            await asyncio.sleep(0.001 * (len(self.queued) % 3))
            if message.event_id in self.fail:
                raise ConnectionError("broker refused the batch")
            self.acknowledged.append(message)

        return asyncio.ensure_future(acknowledgement())


@pytest.fixture
async def relay_pool(relay_dsn: str) -> AsyncIterator[asyncpg.Pool]:
    pool = await asyncpg.create_pool(relay_dsn, min_size=1, max_size=2)
    yield pool
    await pool.close()


async def append(store: Store, tenant: uuid.UUID, n: int, topic: str = TOPIC) -> uuid.UUID:
    async with store.tenant(tenant) as tx:
        event = OutboxEvent(uuid.uuid4(), topic, tenant.bytes, {"n": n})
        await tx.append_outbox(event)
        return event.event_id


async def test_a_failed_acknowledgement_holds_back_only_its_tenant_and_order_holds(
    store: Store, new_tenant: Any, relay_pool: asyncpg.Pool
) -> None:
    tenants = [await new_tenant() for _ in range(3)]
    ids = {t: [await append(store, t, n) for n in range(6)] for t in tenants}
    failing = tenants[1]
    publisher = PipelinedRecorder(fail={ids[failing][2]})
    assert isinstance(publisher, PipelinedPublisher)
    relay = OutboxRelay(relay_pool, publisher, batch_size=100, tenants=tenants, topics=[TOPIC])
    with pytest.raises(ConnectionError):
        await relay.relay_once()
    assert sorted(m.event_id for m in publisher.queued) == sorted(
        i for g in ids.values() for i in g
    )
    # Marked: everything of the healthy tenants, the failing tenant's events before the failure.
    healthy = PipelinedRecorder()
    published = await OutboxRelay(
        relay_pool, healthy, batch_size=100, tenants=tenants, topics=[TOPIC]
    ).relay_once()
    assert published == 4
    assert [m.event_id for m in healthy.queued] == ids[failing][2:]
    assert [json.loads(m.payload)["n"] for m in healthy.queued] == [2, 3, 4, 5]
    for tenant in tenants:
        mine = [m for m in publisher.queued if m.tenant_id == tenant]
        assert [json.loads(m.payload)["n"] for m in mine] == list(range(6))  # queued in order


async def test_rows_of_a_topic_the_relay_does_not_know_stay_unpublished(
    store: Store, new_tenant: Any, relay_pool: asyncpg.Pool
) -> None:
    tenant = await new_tenant()
    known = await append(store, tenant, 0)
    await append(store, tenant, 1, topic="mnemo.test.elsewhere.v1")
    publisher = PipelinedRecorder()
    relay = OutboxRelay(relay_pool, publisher, tenants=[tenant], topics=[TOPIC])
    assert await relay.relay_once() == 1
    assert await relay.relay_once() == 0
    assert [m.event_id for m in publisher.acknowledged] == [known]
    other = PipelinedRecorder()
    assert await OutboxRelay(relay_pool, other, tenants=[tenant]).relay_once() == 1
    assert [m.topic for m in other.acknowledged] == ["mnemo.test.elsewhere.v1"]
