"""Inbox: an event is processed once. Outbox: every event published exactly once, across restarts."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest
from mnemo_store import OutboxEvent, OutboxMessage, OutboxRelay, Store

from tests.waiting import eventually


class RecordingPublisher:
    """Publishes into a list; optionally fails (like a broker going away) after `fail_after`."""

    def __init__(self, fail_after: int | None = None) -> None:
        self.published: list[OutboxMessage] = []
        self.fail_after = fail_after

    async def publish(self, message: OutboxMessage) -> None:
        if self.fail_after is not None and len(self.published) >= self.fail_after:
            raise ConnectionError("broker went away")
        await asyncio.sleep(0)  # a real publisher awaits: let other tasks run, as a broker would
        self.published.append(message)


@pytest.fixture
async def relay_pool(relay_dsn: str) -> AsyncIterator[asyncpg.Pool]:
    pool = await asyncpg.create_pool(relay_dsn, min_size=1, max_size=4)
    yield pool
    await pool.close()


async def persist_once(
    store: Store, corpus: Any, tenant: uuid.UUID, event_id: uuid.UUID, doc: str, sub: uuid.UUID
) -> bool:
    async with store.tenant(tenant) as tx:
        if not await tx.claim_event("ingest", event_id):
            return False
        await tx.insert_rows(
            corpus.documents, [{"id": doc, "tenant_id": sub, "title": "once", "body": None}]
        )
        return True


async def test_the_same_event_twice_writes_once(
    store: Store, declare: Any, new_tenant: Any
) -> None:
    corpus = (await declare()).corpus
    tenant, sub = await new_tenant(), uuid.uuid4()
    event_id = uuid.uuid4()
    # The row's key is fresh each time: only the inbox can stop the second write.
    first = await persist_once(store, corpus, tenant, event_id, str(uuid.uuid4()), sub)
    second = await persist_once(store, corpus, tenant, event_id, str(uuid.uuid4()), sub)
    concurrent = await asyncio.gather(
        *(
            persist_once(
                store, corpus, tenant, uuid.UUID(int=event_id.int ^ 1), str(uuid.uuid4()), sub
            )
            for _ in range(5)
        )
    )
    assert (first, second, sorted(concurrent)) == (True, False, [False] * 4 + [True])
    async with store.tenant(tenant) as tx:
        assert (await tx.load_graph(corpus)).n_documents == 2


async def test_an_event_whose_write_rolled_back_is_processed_again(
    store: Store, declare: Any, new_tenant: Any
) -> None:
    corpus = (await declare()).corpus
    tenant, event_id = await new_tenant(), uuid.uuid4()
    with pytest.raises(RuntimeError):
        async with store.tenant(tenant) as tx:
            assert await tx.claim_event("ingest", event_id)
            raise RuntimeError("the write failed")
    assert await persist_once(store, corpus, tenant, event_id, str(uuid.uuid4()), uuid.uuid4())


async def test_every_event_is_published_exactly_once_across_a_relay_restart_mid_batch(
    store: Store, new_tenant: Any, relay_pool: asyncpg.Pool
) -> None:
    tenants = [await new_tenant() for _ in range(3)]
    sent: list[uuid.UUID] = []
    for round_ in range(10):
        for tenant in tenants:
            async with store.tenant(tenant) as tx:
                event = OutboxEvent(uuid.uuid4(), "mnemo.test.v1", tenant.bytes, {"round": round_})
                await tx.append_outbox(event)
                sent.append(event.event_id)
    with pytest.raises(RuntimeError):  # a rolled-back write leaves no event behind
        async with store.tenant(tenants[0]) as tx:
            await tx.append_outbox(OutboxEvent(uuid.uuid4(), "mnemo.test.v1", b"k", {}))
            raise RuntimeError("roll back")

    crashing = RecordingPublisher(fail_after=7)
    first = OutboxRelay(relay_pool, crashing, batch_size=12, tenants=tenants)
    with pytest.raises(ConnectionError):
        await first.relay_once()
    assert len(crashing.published) == 7

    healthy = RecordingPublisher()
    relays = [OutboxRelay(relay_pool, healthy, batch_size=5, tenants=tenants) for _ in range(2)]
    while sum(await asyncio.gather(*(relay.relay_once() for relay in relays))):
        pass

    published = [m.event_id for m in crashing.published + healthy.published]
    assert sorted(published) == sorted(sent)  # every event, none twice
    per_tenant = {
        tenant: [m.payload for m in healthy.published if m.tenant_id == tenant]
        for tenant in tenants
    }
    assert all(
        len(payloads) + sum(m.tenant_id == t for m in crashing.published) == 10
        for t, payloads in per_tenant.items()
    )
    assert crashing.published[0].key in {tenant.bytes for tenant in tenants}


async def test_the_relay_loop_stops_when_asked(
    store: Store, new_tenant: Any, relay_pool: asyncpg.Pool
) -> None:
    tenant = await new_tenant()
    async with store.tenant(tenant) as tx:
        await tx.append_outbox(OutboxEvent(uuid.uuid4(), "mnemo.test.v1", b"k", {"a": 1}))
    publisher = RecordingPublisher()
    stop = asyncio.Event()
    task = asyncio.create_task(
        OutboxRelay(relay_pool, publisher, tenants=[tenant], idle_seconds=0.01).run(stop)
    )

    async def published() -> bool:
        return bool(publisher.published)

    await eventually(published, within=10, every=0.01, what="the relay published nothing")
    stop.set()
    await asyncio.wait_for(task, 5)
    assert [json.loads(m.payload) for m in publisher.published] == [{"a": 1}]
