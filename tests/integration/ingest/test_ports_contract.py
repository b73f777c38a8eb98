"""Ingest's ports, one contract over both adapters (in-memory and Postgres).

What the use case relies on: an inbox claim takes an event once per (tenant, consumer) and tells a
redelivery from a reused id with another payload; rows are found by id with their scope values
as text, for their own tenant only, and a second row with one primary key fails with the
database's verdict; a parked edge is parked once per event, taken (once) when any missing
document arrives or when it is older than the hold, and its values and arrival time survive a
re-park; the outbox keeps the order it was given; a unit of work that fails leaves nothing; the
directory knows a tenant or a store the moment it exists; a dead-lettered edge keeps its tenant,
event id, store, values, arrival time and reason (in memory, and on Kafka's `<topic>.dlt`). The
use case itself also runs over each adapter.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest
from aiokafka import AIOKafkaConsumer
from mnemo_axon.compiler import load_deployment
from mnemo_axon.ir import Deployment
from mnemo_events import PERSIST, Envelope, PersistRow
from mnemo_events.broker import create_broker
from mnemo_events.dead_letters import REASON
from mnemo_events.provisioning import ensure_topics
from mnemo_events.settings import KafkaSettings
from mnemo_events.topics import dead_letter_topic
from mnemo_ingest.adapters import KafkaDeadLetters, PostgresDirectory, PostgresIngestStore
from mnemo_ingest.fakes import MemoryDeadLetters, MemoryDirectory, MemoryIngestStore
from mnemo_ingest.ports import DeadLetters, Directory, IngestStore
from mnemo_ingest.use_cases import PRODUCER, Command, Ingest
from mnemo_store import OutboxEvent, Store, StoreCorpus
from mnemo_store.applier import apply_deployment
from mnemo_store.identifiers import store_table
from mnemo_store.ingest_writes import PendingEdge

DECLARATIONS = """
axonstore PcDocs_{s} {{
    backend: postgresql
    schema {{ id: Text primary_key  space: Text not_null  title: Text not_null  body: Text }}
}}
axonstore PcEdges_{s} {{
    backend: postgresql
    schema {{ from_id: Text not_null  to_id: Text not_null  etype: Text not_null
             weight: Float not_null  space: Text not_null }}
}}
corpus PcMemory_{s} from axonstore {{
    documents: PcDocs_{s}(id, title, body)
    relations: PcEdges_{s}(from_id, to_id, etype, weight)
}}
"""
CONSUMER = "mnemo.ingest.contract"
TOPIC = "mnemo.test.v1"


def deployment(suffix: str) -> tuple[Deployment, StoreCorpus]:
    declared = load_deployment(DECLARATIONS.format(s=suffix), f"contract_{suffix}.axon")
    return declared, StoreCorpus.from_deployment(declared, f"PcMemory_{suffix}")


def ingest_dsn(owner_dsn: str) -> str:
    configured = os.environ.get("MNEMO_INGEST_DATABASE_URL")
    if configured:
        return configured
    return owner_dsn.replace("mnemo_owner:mnemo_owner", "mnemo_ingest:mnemo_ingest")


@dataclass
class World:
    """One adapter pair and what a test needs around it: a corpus, new tenants, a later
    declaration, and a read of a tenant's outbox."""

    store: IngestStore
    directory: Directory
    corpus: StoreCorpus
    new_tenant: Callable[[], Awaitable[uuid.UUID]]
    declare: Callable[[], Awaitable[StoreCorpus]]
    outbox: Callable[[uuid.UUID], Awaitable[list[uuid.UUID]]]


def memory_world() -> World:
    _, corpus = deployment(uuid.uuid4().hex[:10])
    store = MemoryIngestStore()
    directory = MemoryDirectory([corpus])

    async def new_tenant() -> uuid.UUID:
        tenant = uuid.uuid4()
        directory.add_tenant(tenant)
        return tenant

    async def declare() -> StoreCorpus:
        _, later = deployment(uuid.uuid4().hex[:10])
        directory.add_corpus(later)
        return later

    async def outbox(tenant: uuid.UUID) -> list[uuid.UUID]:
        return [event.event_id for event in store.state(tenant).outbox]

    return World(store, directory, corpus, new_tenant, declare, outbox)


@dataclass
class Postgres:
    owner: asyncpg.Connection
    pool: asyncpg.Pool
    corpus: StoreCorpus
    tenants: list[uuid.UUID]
    declared: list[Deployment]
    lock: asyncio.Lock


@pytest.fixture(scope="module")
async def postgres(owner_dsn: str) -> AsyncIterator[Postgres]:
    owner = await asyncpg.connect(owner_dsn)
    pool = await asyncpg.create_pool(ingest_dsn(owner_dsn), min_size=1, max_size=4)
    declared, corpus = deployment(uuid.uuid4().hex[:10])
    await apply_deployment(owner, declared, gateway_base_url="http://127.0.0.1:8080")
    state = Postgres(owner, pool, corpus, [], [declared], asyncio.Lock())
    try:
        yield state
    finally:
        await pool.close()
        for tenant in state.tenants:
            async with owner.transaction():
                await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
                for table in ("outbox", "inbox", "pending_edges", "graph_revisions"):
                    await owner.execute(f"DELETE FROM mnemo.{table}")
                for done in state.declared:
                    for decl in done.stores:
                        await owner.execute(f"DELETE FROM {store_table(decl.name)}")
            await owner.execute("DELETE FROM mnemo.tenants WHERE tenant_id = $1", tenant)
        for done in state.declared:
            for decl in done.stores:
                await owner.execute(f"DROP TABLE IF EXISTS {store_table(decl.name)}")
            for corpus_decl in done.corpora:
                await owner.execute(
                    "DELETE FROM mnemo.corpora WHERE corpus_id = $1", corpus_decl.name
                )
        await owner.close()


def postgres_world(state: Postgres) -> World:
    owner = state.owner

    async def new_tenant() -> uuid.UUID:
        async with state.lock:
            tenant: uuid.UUID = await owner.fetchval(
                "INSERT INTO mnemo.tenants (name) VALUES ($1) RETURNING tenant_id",
                f"test-ports-{uuid.uuid4().hex[:20]}",
            )
        state.tenants.append(tenant)
        return tenant

    async def declare() -> StoreCorpus:
        later, corpus = deployment(uuid.uuid4().hex[:10])
        async with state.lock:
            await apply_deployment(owner, later, gateway_base_url="http://127.0.0.1:8080")
        state.declared.append(later)
        return corpus

    async def outbox(tenant: uuid.UUID) -> list[uuid.UUID]:
        async with state.lock, owner.transaction():
            await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
            rows = await owner.fetch("SELECT event_id FROM mnemo.outbox ORDER BY seq")
        return [row["event_id"] for row in rows]

    return World(
        PostgresIngestStore(Store(state.pool)),
        PostgresDirectory(state.pool),
        state.corpus,
        new_tenant,
        declare,
        outbox,
    )


@pytest.fixture(params=["memory", "postgres"])
def world(request: pytest.FixtureRequest) -> World:
    if request.param == "memory":
        return memory_world()
    return postgres_world(request.getfixturevalue("postgres"))


def doc(doc_id: str, space: str = "s1") -> dict[str, object]:
    return {"id": doc_id, "space": space, "title": f"Title {doc_id}", "body": None}


def edge(source: str, target: str, space: str = "s1") -> dict[str, object]:
    return {"from_id": source, "to_id": target, "etype": "cite", "weight": 0.5, "space": space}


# --------------------------------------------------------------------------------------- inbox


async def test_an_event_is_claimed_once_and_its_redelivery_is_not_different(world: World) -> None:
    tenant = await world.new_tenant()
    first, second = uuid.uuid4(), uuid.uuid4()
    async with world.store.tenant(tenant) as tx:
        assert await tx.inbox.claim(CONSUMER, {first: "d1", second: "d2"}) == (
            {first, second},
            set(),
        )
    async with world.store.tenant(tenant) as tx:
        assert await tx.inbox.claim(CONSUMER, {first: "d1", second: "d2"}) == (set(), set())
        assert await tx.inbox.claim(CONSUMER, {}) == (set(), set())


async def test_an_event_claimed_before_with_another_payload_is_reported_different(
    world: World,
) -> None:
    tenant = await world.new_tenant()
    event, fresh = uuid.uuid4(), uuid.uuid4()
    async with world.store.tenant(tenant) as tx:
        await tx.inbox.claim(CONSUMER, {event: "d1"})
    async with world.store.tenant(tenant) as tx:
        assert await tx.inbox.claim(CONSUMER, {event: "other", fresh: "d"}) == ({fresh}, {event})


async def test_claims_are_kept_per_tenant_and_per_consumer(world: World) -> None:
    tenant, other = await world.new_tenant(), await world.new_tenant()
    event = uuid.uuid4()
    async with world.store.tenant(tenant) as tx:
        assert await tx.inbox.claim(CONSUMER, {event: "d"}) == ({event}, set())
    async with world.store.tenant(other) as tx:
        assert await tx.inbox.claim(CONSUMER, {event: "d"}) == ({event}, set())
    async with world.store.tenant(tenant) as tx:
        assert await tx.inbox.claim(CONSUMER + ".other", {event: "d"}) == ({event}, set())


# ---------------------------------------------------------------------------------------- rows


async def test_rows_are_found_by_id_with_their_scope_as_text_for_their_tenant_only(
    world: World,
) -> None:
    tenant, other = await world.new_tenant(), await world.new_tenant()
    corpus = world.corpus
    async with world.store.tenant(tenant) as tx:
        await tx.rows.take_revisions([corpus.name, corpus.name])
        assert await tx.rows.insert(corpus.documents, [doc("a", "s1"), doc("b", "s2")]) == 2
    async with world.store.tenant(tenant) as tx:
        found = await tx.rows.existing_documents(
            corpus.documents, corpus.id_column, ["a", "b", "c", "a"], ["space"]
        )
        assert found == {"a": {"space": "s1"}, "b": {"space": "s2"}}
        assert await tx.rows.existing_documents(corpus.documents, "id", [], ["space"]) == {}
        assert await tx.rows.existing_documents(corpus.documents, "id", ["a"], []) == {"a": {}}
    async with world.store.tenant(other) as tx:
        assert await tx.rows.existing_documents(corpus.documents, "id", ["a", "b"], []) == {}
        await tx.rows.insert(corpus.documents, [doc("a", "s9")])  # its own id space
        assert await tx.rows.existing_documents(corpus.documents, "id", ["a"], ["space"]) == {
            "a": {"space": "s9"}
        }


async def test_a_second_row_with_one_primary_key_fails_with_the_unique_violation(
    world: World,
) -> None:
    tenant = await world.new_tenant()
    corpus = world.corpus
    async with world.store.tenant(tenant) as tx:
        await tx.rows.insert(corpus.documents, [doc("a")])
    with pytest.raises(asyncpg.UniqueViolationError):
        async with world.store.tenant(tenant) as tx:
            await tx.rows.insert(corpus.documents, [doc("b"), doc("a", "s2")])
    async with world.store.tenant(tenant) as tx:
        found = await tx.rows.existing_documents(corpus.documents, "id", ["a", "b"], ["space"])
    assert found == {"a": {"space": "s1"}}


# ------------------------------------------------------------------------------- pending edges


async def test_an_edge_is_parked_once_per_event_and_taken_once_when_a_document_arrives(
    world: World,
) -> None:
    tenant = await world.new_tenant()
    store = world.corpus.relations.name
    early, later, unrelated = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    async with world.store.tenant(tenant) as tx:
        assert await tx.pending.hold(early, store, edge("a", "b"), ["a", "b"])
        assert not await tx.pending.hold(early, store, edge("a", "b"), ["a", "b"])
        assert await tx.pending.hold(later, store, edge("b", "c"), ["c"])
        assert await tx.pending.hold(unrelated, store, edge("x", "y"), ["x"])
    async with world.store.tenant(tenant) as tx:
        taken = await tx.pending.take_for(["b", "c", "b"])
        assert [e.event_id for e in taken] == [early, later]
        assert taken[0].pending_id < taken[1].pending_id
        assert (taken[0].store, taken[0].values, taken[0].missing) == (
            store,
            edge("a", "b"),
            ("a", "b"),
        )
        assert await tx.pending.take_for([]) == []
    async with world.store.tenant(tenant) as tx:
        assert await tx.pending.take_for(["a", "b", "c"]) == []
        assert [e.event_id for e in await tx.pending.take_for(["x"])] == [unrelated]


async def test_a_re_parked_edge_keeps_its_values_and_first_arrival_time(world: World) -> None:
    tenant = await world.new_tenant()
    store = world.corpus.relations.name
    arrived = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    event = uuid.uuid4()
    values = {**edge("a", "b"), "weight": 0.25}
    async with world.store.tenant(tenant) as tx:
        await tx.pending.hold(event, store, values, ["a", "b"])
        [taken] = await tx.pending.take_for(["a"])
        assert await tx.pending.hold(event, store, taken.values, ["b"], arrived)
    async with world.store.tenant(tenant) as tx:
        [again] = await tx.pending.take_for(["b"])
    assert (again.event_id, again.values, again.missing) == (event, values, ("b",))
    assert again.received_at == arrived


async def test_expired_edges_are_taken_by_age_oldest_first_up_to_the_limit(world: World) -> None:
    tenant, other = await world.new_tenant(), await world.new_tenant()
    store = world.corpus.relations.name
    now = datetime.now(UTC)
    old = [uuid.uuid4() for _ in range(3)]
    young = uuid.uuid4()
    async with world.store.tenant(tenant) as tx:
        for n, event in enumerate(old):
            await tx.pending.hold(
                event, store, edge("a", f"b{n}"), [f"b{n}"], now - timedelta(hours=2)
            )
        await tx.pending.hold(young, store, edge("a", "c"), ["c"], now)
    async with world.store.tenant(other) as tx:
        assert await tx.pending.take_expired(now - timedelta(hours=1)) == []
    async with world.store.tenant(tenant) as tx:
        first = await tx.pending.take_expired(now - timedelta(hours=1), limit=2)
        rest = await tx.pending.take_expired(now - timedelta(hours=1))
    assert [e.event_id for e in first] == old[:2]
    assert [e.event_id for e in rest] == old[2:]
    async with world.store.tenant(tenant) as tx:
        assert [e.event_id for e in await tx.pending.take_for(["c"])] == [young]


async def test_a_tenant_never_takes_another_tenants_parked_edges(world: World) -> None:
    tenant, other = await world.new_tenant(), await world.new_tenant()
    store = world.corpus.relations.name
    async with world.store.tenant(tenant) as tx:
        await tx.pending.hold(uuid.uuid4(), store, edge("a", "b"), ["b"])
    async with world.store.tenant(other) as tx:
        assert await tx.pending.take_for(["b"]) == []
        assert await tx.pending.take_expired(datetime.now(UTC) + timedelta(hours=1)) == []
    async with world.store.tenant(tenant) as tx:
        assert len(await tx.pending.take_for(["b"])) == 1


# ---------------------------------------------------------------------- outbox and atomicity


async def test_outbox_events_land_in_the_order_given_for_their_tenant(world: World) -> None:
    tenant, other = await world.new_tenant(), await world.new_tenant()
    events = [OutboxEvent(uuid.uuid4(), TOPIC, b"k", {"n": n}) for n in range(5)]
    async with world.store.tenant(tenant) as tx:
        await tx.outbox.append(events[:3])
        await tx.outbox.append([])
    async with world.store.tenant(tenant) as tx:
        await tx.outbox.append(events[3:])
    assert await world.outbox(tenant) == [e.event_id for e in events]
    assert await world.outbox(other) == []


async def test_a_unit_of_work_that_fails_leaves_no_claim_row_parked_edge_or_event(
    world: World,
) -> None:
    tenant = await world.new_tenant()
    corpus = world.corpus
    event = uuid.uuid4()
    with pytest.raises(RuntimeError, match="abandoned"):
        async with world.store.tenant(tenant) as tx:
            await tx.inbox.claim(CONSUMER, {event: "d"})
            await tx.rows.insert(corpus.documents, [doc("a")])
            await tx.pending.hold(event, corpus.relations.name, edge("a", "b"), ["b"])
            await tx.outbox.append([OutboxEvent(uuid.uuid4(), TOPIC, b"k", {})])
            raise RuntimeError("abandoned")
    async with world.store.tenant(tenant) as tx:
        assert await tx.inbox.claim(CONSUMER, {event: "d"}) == ({event}, set())
        assert await tx.rows.existing_documents(corpus.documents, "id", ["a"], []) == {}
        assert await tx.pending.take_for(["b"]) == []
        assert tx.tenant == tenant
    assert await world.outbox(tenant) == []


# ----------------------------------------------------------------------------------- directory


async def test_the_directory_knows_a_tenant_the_moment_it_exists(world: World) -> None:
    assert not await world.directory.tenant_exists(uuid.uuid4())
    tenant = await world.new_tenant()
    assert await world.directory.tenant_exists(tenant)
    assert tenant in await world.directory.tenants()


async def test_the_directory_gives_each_store_its_corpora_and_roles(world: World) -> None:
    corpus = world.corpus
    documents = await world.directory.store(corpus.documents.name)
    relations = await world.directory.store(corpus.relations.name)
    assert documents is not None
    assert relations is not None
    assert documents.store == corpus.documents
    assert documents.role("documents") == corpus
    assert documents.role("relations") is None
    assert relations.role("relations") == corpus
    assert await world.directory.store("NoSuchStore") is None
    later = await world.declare()
    found = await world.directory.store(later.documents.name)
    assert found is not None
    assert found.role("documents") == later


# ------------------------------------------------------------------------- the use case on both


async def test_the_use_case_parks_then_writes_an_edge_the_same_way_on_both(world: World) -> None:
    tenant = await world.new_tenant()
    dead = MemoryDeadLetters()
    ingest = Ingest(
        world.store,
        world.directory,
        dead,
        consumer=CONSUMER,
        persisted_topic=TOPIC,
        audit_topic=TOPIC,
    )
    corpus = world.corpus

    def command(store: str, values: dict[str, object]) -> Command:
        return Command(None, uuid.uuid4(), tenant, store, values, "agent")

    parked = command(corpus.relations.name, edge("a", "b"))
    assert await ingest.persist([parked, command(corpus.documents.name, doc("a"))]) == []
    async with world.store.tenant(tenant) as tx:
        found = await tx.rows.existing_documents(corpus.documents, "id", ["a", "b"], [])
    assert found == {"a": {}}
    refused = await ingest.persist([command(corpus.relations.name, edge("a", "a", "s2"))])
    assert [r.reason for r in refused] == [
        "edge endpoint a is outside the edge's scope: its space is s1, the edge's is s2 "
        "(G2: edges join documents of one scope)"
    ]
    arrival = command(corpus.documents.name, doc("b"))
    assert await ingest.persist([arrival]) == []
    async with world.store.tenant(tenant) as tx:
        assert await tx.pending.take_for(["a", "b"]) == []
    persisted = uuid.uuid5(arrival.event_id, f"persisted:{corpus.name}")
    assert persisted in await world.outbox(tenant)
    # a's persisted event and audit; then b's persisted event and audit, and the edge's audit
    assert len(await world.outbox(tenant)) == 5
    assert dead.edges == []


# -------------------------------------------------------------------------------- dead letters

Letter = tuple[uuid.UUID, uuid.UUID, str, Mapping[str, object], str, str]
"""What a dead-lettered edge keeps: tenant, event id, store, values, reason, pending since."""


@dataclass
class Letters:
    dead_letters: DeadLetters
    read: Callable[[int], Awaitable[list[Letter]]]


@pytest.fixture(params=["memory", "kafka"])
async def letters(request: pytest.FixtureRequest) -> AsyncIterator[Letters]:
    if request.param == "memory":
        memory = MemoryDeadLetters()

        async def kept(count: int) -> list[Letter]:
            return [
                (
                    d.tenant,
                    d.edge.event_id,
                    d.edge.store,
                    d.edge.values,
                    d.reason,
                    d.edge.received_at.isoformat(),
                )
                for d in memory.edges
            ]

        yield Letters(memory, kept)
        return
    bootstrap = request.getfixturevalue("kafka_bootstrap")
    topic = f"test.persist.contract.{uuid.uuid4().hex[:10]}.v1"
    settings = KafkaSettings(bootstrap=bootstrap, partitions=1)
    await ensure_topics(settings, [topic, dead_letter_topic(topic)])
    broker = create_broker(settings, client_id="test-ports-contract")
    await broker.start()

    async def published(count: int) -> list[Letter]:
        consumer = AIOKafkaConsumer(
            dead_letter_topic(topic),
            bootstrap_servers=bootstrap,
            auto_offset_reset="earliest",
            group_id=None,
        )
        await consumer.start()
        found: list[Letter] = []
        try:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 30
            while len(found) < count and loop.time() < deadline:
                for records in (await consumer.getmany(timeout_ms=300)).values():
                    for record in records:
                        envelope = Envelope[PersistRow].model_validate_json(record.value)
                        headers = {k: v.decode() for k, v in record.headers}
                        assert record.key == str(envelope.tenant).encode()
                        assert (envelope.producer, envelope.type) == (PRODUCER, PERSIST)
                        found.append(
                            (
                                envelope.tenant,
                                envelope.event_id,
                                envelope.data.store,
                                envelope.data.values,
                                headers[REASON],
                                headers["mnemo-pending-since"],
                            )
                        )
        finally:
            await consumer.stop()
        return found

    try:
        yield Letters(KafkaDeadLetters(broker, "test.ingest.contract", topic), published)
    finally:
        await broker.stop()


async def test_a_dead_lettered_edge_keeps_what_it_was_and_why(letters: Letters) -> None:
    tenant, other = uuid.uuid4(), uuid.uuid4()
    since = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    edges = [
        PendingEdge(1, uuid.uuid4(), "Edges", edge("a", "b"), ("b",), since),
        PendingEdge(2, uuid.uuid4(), "Edges", edge("a", "c", "s2"), ("a", "c"), since),
    ]
    await letters.dead_letters.dead_letter_edge(tenant, edges[0], "never arrived (G2)")
    await letters.dead_letters.dead_letter_edge(other, edges[1], "outside the edge's scope")
    assert await letters.read(2) == [
        (
            tenant,
            edges[0].event_id,
            "Edges",
            edge("a", "b"),
            "never arrived (G2)",
            since.isoformat(),
        ),
        (
            other,
            edges[1].event_id,
            "Edges",
            edge("a", "c", "s2"),
            "outside the edge's scope",
            since.isoformat(),
        ),
    ]
