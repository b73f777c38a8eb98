"""Ingest's persist handler over the real use case on the in-memory adapters: refusals come back as
rejections with their reasons, and a database verdict on a row (its key already taken) is a
rejection when the row is alone in its batch and a retry of the batch otherwise."""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest
from mnemo_events import PersistRow, new_envelope
from mnemo_events.consumer import Received
from mnemo_events.dead_letters import Delivery
from mnemo_events.tracing import context_from_headers
from mnemo_ingest.subscribers import persist_handler

from tests.unit.ingest.world import TENANT, World, doc


def received(store: str, values: dict[str, Any], offset: int) -> Received[PersistRow]:
    envelope = new_envelope(
        PersistRow(store=store, values=values),
        tenant=TENANT,
        producer="test",
        event_type="mnemo.persist.v1",
    )
    delivery = Delivery(topic="persist", partition=0, offset=offset, key=None, value=b"")
    return Received(envelope=envelope, delivery=delivery, context=context_from_headers((), None))


async def test_a_refused_row_comes_back_as_a_rejection_with_its_reason() -> None:
    world = World()
    handle = persist_handler(world.ingest)
    good, bad = received("Docs", doc("a"), 0), received("Nowhere", doc("b"), 1)
    [rejection] = await handle([good, bad])
    assert rejection.delivery is bad.delivery
    assert "unknown store 'Nowhere'" in rejection.reason
    assert [r["id"] for r in world.rows("Docs")] == ["a"]


async def test_a_lone_row_whose_key_is_taken_is_rejected_with_the_databases_reason() -> None:
    world = World()
    handle = persist_handler(world.ingest)
    assert await handle([received("Docs", doc("a"), 0)]) == []
    [rejection] = await handle([received("Docs", doc("a", title="again"), 1)])
    assert rejection.reason.startswith("the database refused the row: UniqueViolationError")


async def test_a_batch_with_a_row_whose_key_is_taken_is_retried_whole() -> None:
    world = World()
    handle = persist_handler(world.ingest)
    await handle([received("Docs", doc("a"), 0)])
    with pytest.raises(asyncpg.UniqueViolationError):
        await handle([received("Docs", doc("b"), 1), received("Docs", doc("a", title="x"), 2)])
    assert [r["id"] for r in world.rows("Docs")] == ["a"]
