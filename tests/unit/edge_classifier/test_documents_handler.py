"""The classifier's batch handler and use case on the in-memory ports (`mnemo_edge_classifier.fakes`):
a batch classified a tenant at a time with one freshness check, its edges published together after
every event was classified; skipped, refused and gone-corpus events; a failed publish; candidates
only from the event's tenant and end-client; a scope the index cannot follow read per event."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable
from typing import cast

import pytest
from mnemo_axon.compiler import load_deployment
from mnemo_edge_classifier.adapters import IndexedCandidates
from mnemo_edge_classifier.fakes import MemoryCandidates, MemoryCorpora, MemoryEdgePublisher
from mnemo_edge_classifier.subscribers import documents_handler
from mnemo_edge_classifier.use_cases import ClassifyDocument, LexicalClassifier
from mnemo_events import DocumentPersisted, Envelope, PersistRow, new_envelope
from mnemo_events.consumer import Received
from mnemo_events.dead_letters import Delivery
from mnemo_mdn.edge_classification import (
    DEFAULT_OPTIONS,
    TextDocument,
    candidate_query,
    document_keys,
    keys_of,
)
from mnemo_store import Scope, Store, StoreCorpus

from tests.declarations import memory_corpus

CORPUS = StoreCorpus.from_deployment(
    load_deployment(
        memory_corpus("U", "Memory", "u", id_type="Text", client_type="Text"), "u.axon"
    ),
    "Memory_u",
)
POET = {"id": "poet", "tenant_id": "client-a", "title": "Hilda Hilst", "body": "A poet."}


def song(doc_id: str, client: str = "client-a") -> dict[str, object]:
    return {
        "id": doc_id,
        "tenant_id": client,
        "title": f"Blue Moon {doc_id}",
        "body": "Performed by Hilda Hilst.",
    }


def received(
    tenant: uuid.UUID, values: dict[str, object], corpus: str = CORPUS.name, offset: int = 0
) -> Received[DocumentPersisted]:
    envelope = new_envelope(
        DocumentPersisted(
            corpus=corpus, store=CORPUS.documents.name, id=str(values["id"]), values=values
        ),
        tenant=tenant,
        producer="test",
        event_type="mnemo.document.persisted.v1",
    )
    return Received(envelope, Delivery("documents", 0, offset, tenant.bytes, b"{}"))


class World:
    """A published corpus whose tenants each hold the poet; the use case and handler over fakes."""

    def __init__(self, *tenants: uuid.UUID, status: str = "published") -> None:
        self.corpora = MemoryCorpora()
        self.corpora.add(CORPUS, status)
        self.candidates = MemoryCandidates()
        self.publisher = MemoryEdgePublisher()
        for tenant in tenants:
            self.candidates.put(tenant, CORPUS, POET)
        self.use_case = ClassifyDocument(self.corpora, self.candidates, LexicalClassifier())
        self.handle = documents_handler(self.use_case, self.publisher)

    def edges(self) -> list[tuple[uuid.UUID, object, object]]:
        return [
            (c.tenant, c.data.values["from_id"], c.data.values["to_id"])
            for c in self.publisher.published
        ]


async def test_a_batch_is_classified_a_tenant_at_a_time_and_its_edges_published_together() -> None:
    first, second = sorted((uuid.uuid4(), uuid.uuid4()), key=lambda t: t.bytes)
    world = World(first, second)
    reads_at_publish: list[int] = []
    enqueue = world.publisher.enqueue

    async def counting(command: Envelope[PersistRow]) -> Awaitable[object]:
        reads_at_publish.append(len(world.candidates.reads))
        return await enqueue(command)

    world.publisher.enqueue = counting  # type: ignore[method-assign]  # observe the order of calls
    items = [
        received(second, song("s1")),
        received(first, song("f1")),
        received(second, song("s2")),
    ]
    assert await world.handle(items) == []
    assert world.candidates.batches == 1  # one freshness check for the whole batch
    assert [tenant for tenant, _ in world.candidates.reads] == [first, second, second]
    assert reads_at_publish == [3, 3, 3]  # every event classified before any edge is sent
    assert sorted(world.edges(), key=str) == sorted(
        [(first, "f1", "poet"), (second, "s1", "poet"), (second, "s2", "poet")], key=str
    )


@pytest.mark.parametrize("status", ["draft", "deprecated"])
async def test_an_event_of_a_corpus_that_is_not_published_is_skipped_not_dead_lettered(
    status: str,
) -> None:
    tenant = uuid.uuid4()
    world = World(tenant, status=status)
    assert await world.handle([received(tenant, song("s1"))]) == []
    assert world.candidates.reads == []
    assert world.publisher.published == []


async def test_an_unknown_corpus_is_dead_lettered_with_its_reason_and_the_rest_classified() -> None:
    tenant = uuid.uuid4()
    world = World(tenant)
    lost = received(tenant, song("s1"), corpus="Nowhere", offset=7)
    rejections = await world.handle([lost, received(tenant, song("s2"), offset=8)])
    assert [(r.delivery.offset, r.reason) for r in rejections] == [
        (7, "corpus 'Nowhere' is not a registered store corpus (`mnemo corpus list`)")
    ]
    assert world.edges() == [(tenant, "s2", "poet")]


async def test_an_event_without_its_end_client_is_dead_lettered_before_any_read() -> None:
    tenant = uuid.uuid4()
    world = World(tenant)
    values = song("s1")
    del values["tenant_id"]
    rejections = await world.handle([received(tenant, values)])
    assert len(rejections) == 1
    assert "no value for 'tenant_id'" in rejections[0].reason
    assert world.candidates.reads == []


async def test_a_dropped_store_dead_letters_its_events_and_the_corpus_is_read_afresh() -> None:
    tenant = uuid.uuid4()
    world = World(tenant)
    world.candidates.drop(CORPUS)
    rejections = await world.handle([received(tenant, song("s1"))])
    assert len(rejections) == 1
    assert "is gone or changed" in rejections[0].reason
    assert world.corpora.forgotten == [CORPUS.name]
    assert world.publisher.published == []


async def test_a_batchs_edges_are_queued_one_after_the_other_then_awaited_together() -> None:
    """Sent concurrently, thousands of commands all waited on each full producer batch and all
    woke when it drained; queued in turn, one waits at a time."""
    tenant = uuid.uuid4()
    world = World(tenant)
    loop = asyncio.get_running_loop()
    queuing, most = 0, 0
    deliveries: list[asyncio.Future[object]] = []
    all_queued = asyncio.Event()

    async def enqueue(command: Envelope[PersistRow]) -> Awaitable[object]:
        nonlocal queuing, most
        queuing += 1
        most = max(most, queuing)
        turn: asyncio.Future[None] = loop.create_future()
        loop.call_soon(turn.set_result, None)
        await turn  # a queue that lets others run, as the producer's may
        queuing -= 1
        world.publisher.published.append(command)
        deliveries.append(loop.create_future())
        if len(deliveries) == 3:
            all_queued.set()
        return deliveries[-1]

    world.publisher.enqueue = enqueue  # type: ignore[method-assign]  # a producer that yields
    items = [received(tenant, song(f"s{k}"), offset=k) for k in range(3)]
    handling = asyncio.ensure_future(world.handle(items))
    await asyncio.wait_for(all_queued.wait(), 5)
    assert most == 1
    assert not handling.done()  # the batch waits for the broker to have every command
    for delivered in deliveries:
        delivered.set_result(None)
    assert await asyncio.wait_for(handling, 5) == []
    assert sorted(str(source) for _, source, _ in world.edges()) == ["s0", "s1", "s2"]


async def test_a_publish_that_fails_fails_the_batch_so_its_offsets_are_not_committed() -> None:
    tenant = uuid.uuid4()
    world = World(tenant)
    world.publisher.failing = ConnectionError("the broker is away")
    with pytest.raises(ConnectionError, match="the broker is away"):
        await world.handle([received(tenant, song("s1"))])


async def test_a_redelivered_batch_publishes_the_same_event_ids() -> None:
    tenant = uuid.uuid4()
    world = World(tenant)
    items = [received(tenant, song("s1")), received(tenant, song("s2"))]
    await world.handle(items)
    await world.handle(items)
    ids = [c.event_id for c in world.publisher.published]
    assert ids[:2] == ids[2:]


async def test_candidates_come_only_from_the_events_tenant_and_end_client() -> None:
    tenant, other = uuid.uuid4(), uuid.uuid4()
    world = World(other)  # only the other tenant holds the poet of client-a
    world.candidates.put(tenant, CORPUS, {**POET, "id": "poet-b", "tenant_id": "client-b"})
    assert await world.handle([received(tenant, song("s1", "client-a"))]) == []
    assert world.publisher.published == []
    assert world.candidates.reads == [
        (tenant, Scope("tenant_id == '${tenant_id}'", {"tenant_id": "client-a"}))
    ]
    await world.handle([received(tenant, song("s2", "client-b"))])
    assert world.edges() == [(tenant, "s2", "poet-b")]
    assert world.publisher.published[0].data.values["tenant_id"] == "client-b"


class NoStore:
    """A store that must not be read: the index does not try to hold the scope."""

    def tenant(self, *args: object, **kwargs: object) -> None:
        raise AssertionError("the store was read for a scope the index cannot follow")


async def test_a_scope_the_index_cannot_follow_is_read_per_event_from_the_fallback() -> None:
    unkeyed = StoreCorpus.from_deployment(
        load_deployment(
            memory_corpus("N", "Plain", "n", id_type="Text", client_type="Text").replace(
                "id: Text primary_key", "id: Text"
            ),
            "n.axon",
        ),
        "Plain_n",
    )
    tenant = uuid.uuid4()
    fallback = MemoryCandidates()
    fallback.put(tenant, unkeyed, POET)
    indexed = IndexedCandidates(cast(Store, NoStore()), fallback, 1000, DEFAULT_OPTIONS, 1 << 20)
    keys = document_keys(TextDocument("s1", "Blue Moon", "Performed by Hilda Hilst."))
    scope = Scope("tenant_id == '${tenant_id}'", {"tenant_id": "client-a"})
    indexed.new_batch()
    found = await indexed.neighbourhood(
        tenant, unkeyed, "s1", candidate_query(keys), keys_of(keys), scope
    )
    assert [c.id for c in found.candidates] == ["poet"]
    assert (indexed.fallbacks, indexed.loads) == (1, 0)
    assert fallback.reads == [(tenant, scope)]
