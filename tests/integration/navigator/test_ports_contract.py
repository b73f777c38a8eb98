"""The navigator's ports, one contract over both adapters (in-memory and Postgres).

What the use cases rely on: a tenant reads and writes its own rows only; a scoped read honours
the pinned scope (a request's `where:` only narrows it); a reinforcement is one atomic sum per
edge, clamped to [0.001, 1.0], that loses no concurrent update; the revision moves with every
write and a cached graph is refreshed, kept or reloaded accordingly; what a unit of work queues
(audit events, outcomes, inbox claims) lands once when it commits and not at all when it fails.
The last tests run the navigator's use cases over each adapter: one audit event per query.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

import asyncpg
import pytest
from mnemo_auth import Principal
from mnemo_axon.compiler import load_deployment
from mnemo_axon.errors import UnknownColumnError
from mnemo_navigator.adapters import PostgresCatalogue, PostgresTransactions
from mnemo_navigator.fakes import InMemoryCatalogue, InMemoryStore
from mnemo_navigator.ports import Catalogue, Transactions
from mnemo_navigator.use_cases import (
    Caller,
    NavigateRequest,
    Navigator,
    Policy,
    RetrieveRequest,
)
from mnemo_store import EdgeDelta, GraphArrays, LoadLimits, OutboxEvent, Scope, Store, StoreCorpus
from mnemo_store.errors import RowLimitExceededError
from mnemo_store.graph_cache import GraphCache
from mnemo_store.identifiers import store_table
from mnemo_store.outcomes import NewOutcome, RecentScores

from tests.integration.navigator.conftest import (
    DECLARATIONS,
    PINNED,
    Declare,
    NewTenant,
    navigator_dsn,
)

DOCS: list[Mapping[str, object]] = [
    {"id": "a", "tenant_id": "c1", "title": "alpha liability", "body": "cap notes"},
    {"id": "b", "tenant_id": "c1", "title": "beta cap", "body": None},
    {"id": "c", "tenant_id": "c2", "title": "gamma alpha", "body": None},
]
EDGES: list[Mapping[str, object]] = [
    {"from_id": "a", "to_id": "b", "etype": "cite", "weight": 0.5, "tenant_id": "c1"},
    {"from_id": "a", "to_id": "c", "etype": "cite", "weight": 0.5, "tenant_id": "c2"},
    {"from_id": "a", "to_id": "b", "etype": "cite", "weight": 0.5, "tenant_id": "c2"},
]
LIMITS = LoadLimits()


def pinned(client: str, where: str | None = None, **params: object) -> Scope:
    return Scope(
        where=where, params=params, pinned=PINNED, pinned_params={"client": {"tenant_id": client}}
    )


@dataclass
class World:
    """One adapter pair and what a test needs around it: a corpus, tenants, row writes, and
    reads of what the ports wrote."""

    transactions: Transactions
    catalogue: Catalogue
    corpus: StoreCorpus
    new_tenant: Callable[[], Awaitable[uuid.UUID]]
    write: Callable[
        [uuid.UUID, Sequence[Mapping[str, object]], Sequence[Mapping[str, object]]],
        Awaitable[None],
    ]
    delete_edges: Callable[[uuid.UUID], Awaitable[None]]
    outbox: Callable[[uuid.UUID], Awaitable[list[uuid.UUID]]]
    weights: Callable[[uuid.UUID], Awaitable[dict[tuple[str, str, str], float]]]
    """Every edge's weight by (from, to, client)."""


async def memory_world() -> World:
    suffix = uuid.uuid4().hex[:10]
    deployment = load_deployment(DECLARATIONS.format(s=suffix, adaptive="true"), "nav.axon")
    corpus = StoreCorpus.from_deployment(deployment, f"Nav_{suffix}")
    store, catalogue = InMemoryStore(), InMemoryCatalogue()
    store.register(corpus)
    catalogue.register(deployment, corpus.name)

    async def new_tenant() -> uuid.UUID:
        return catalogue.add_tenant()

    async def write(
        tenant: uuid.UUID,
        documents: Sequence[Mapping[str, object]],
        edges: Sequence[Mapping[str, object]],
    ) -> None:
        if documents:
            store.write(tenant, corpus.documents, documents)
        if edges:
            store.write(tenant, corpus.relations, edges)

    async def delete_edges(tenant: uuid.UUID) -> None:
        store.delete(tenant, corpus.relations, lambda row: True)

    async def outbox(tenant: uuid.UUID) -> list[uuid.UUID]:
        return [event.event_id for event in store.outbox(tenant)]

    async def weights(tenant: uuid.UUID) -> dict[tuple[str, str, str], float]:
        return {
            (str(r["from_id"]), str(r["to_id"]), str(r["tenant_id"])): float(str(r["weight"]))
            for r in store.rows(tenant, corpus.relations)
        }

    return World(store, catalogue, corpus, new_tenant, write, delete_edges, outbox, weights)


@pytest.fixture(scope="module")
async def navigator_pool(app_dsn: str) -> AsyncIterator[asyncpg.Pool]:
    pool = await asyncpg.create_pool(navigator_dsn(app_dsn), min_size=1, max_size=12)
    yield pool
    await pool.close()


async def postgres_world(
    declare: Declare,
    new_tenant: NewTenant,
    owner: asyncpg.Connection,
    pool: asyncpg.Pool,
) -> World:
    arena = await declare(adaptive=True)
    corpus = arena.corpus
    lock = asyncio.Lock()  # one owner connection: one statement at a time

    async def as_tenant(tenant: uuid.UUID, sql: str) -> list[asyncpg.Record]:
        async with lock, owner.transaction():
            await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
            return list(await owner.fetch(sql))

    async def write(
        tenant: uuid.UUID,
        documents: Sequence[Mapping[str, object]],
        edges: Sequence[Mapping[str, object]],
    ) -> None:
        await arena.write(tenant, documents, edges)

    async def delete_edges(tenant: uuid.UUID) -> None:
        await as_tenant(tenant, f"DELETE FROM {store_table(corpus.relations.name)}")

    async def outbox(tenant: uuid.UUID) -> list[uuid.UUID]:
        rows = await as_tenant(tenant, "SELECT event_id FROM mnemo.outbox ORDER BY seq")
        return [row["event_id"] for row in rows]

    async def weights(tenant: uuid.UUID) -> dict[tuple[str, str, str], float]:
        rows = await as_tenant(
            tenant,
            f"SELECT from_id, to_id, tenant_id, weight FROM {store_table(corpus.relations.name)}",
        )
        return {(r["from_id"], r["to_id"], r["tenant_id"]): r["weight"] for r in rows}

    return World(
        PostgresTransactions(Store(pool)),
        PostgresCatalogue(pool),
        corpus,
        new_tenant,
        write,
        delete_edges,
        outbox,
        weights,
    )


@dataclass(frozen=True)
class PostgresFixtures:
    declare: Declare
    new_tenant: NewTenant
    owner: asyncpg.Connection
    pool: asyncpg.Pool


@pytest.fixture(params=["memory", "postgres"])
def adapter(request: pytest.FixtureRequest) -> PostgresFixtures | None:
    """The adapter under test; Postgres's fixtures are set up only for the Postgres run."""
    if request.param == "memory":
        return None
    return PostgresFixtures(
        request.getfixturevalue("declare"),
        request.getfixturevalue("new_tenant"),
        request.getfixturevalue("owner_connection"),
        request.getfixturevalue("navigator_pool"),
    )


@pytest.fixture
async def world(adapter: PostgresFixtures | None) -> World:
    if adapter is None:
        return await memory_world()
    return await postgres_world(adapter.declare, adapter.new_tenant, adapter.owner, adapter.pool)


async def filled(world: World) -> uuid.UUID:
    tenant = await world.new_tenant()
    await world.write(tenant, DOCS, EDGES)
    return tenant


def edges_of(arrays: GraphArrays) -> set[str]:
    ids = arrays.ids
    pairs = zip(arrays.edge_source.tolist(), arrays.edge_target.tolist(), strict=True)
    return {f"{ids[s]}->{ids[t]}" for s, t in pairs}


# ----------------------------------------------------------------------------------- isolation


async def test_a_tenant_never_reads_another_tenants_rows_memory_or_revision(world: World) -> None:
    owner = await filled(world)
    other = await world.new_tenant()
    corpus = world.corpus
    async with world.transactions.tenant(owner) as work:
        await work.memory.record_outcome(corpus.name, "d", 1, "q", ["a"], [], 0.5)
    async with world.transactions.tenant(other, read_only=True) as work:
        arrays, _ = await work.graph.load(corpus, Scope(), LIMITS)
        assert arrays.ids == []
        assert arrays.n_edges == 0
        assert await work.graph.revision(corpus.name) == 0
        assert await work.graph.retrieve(corpus, "alpha", 10, Scope()) == []
        assert await work.graph.documents_page(corpus, None, 10, Scope()) == []
        assert await work.memory.recent_outcomes(corpus.name, "d", 10) == []
    async with world.transactions.tenant(owner, read_only=True) as work:
        arrays, _ = await work.graph.load(corpus, Scope(), LIMITS)
        assert arrays.ids == ["a", "b", "c"]
        assert [o.sequence for o in await work.memory.recent_outcomes(corpus.name, "d", 10)] == [1]


async def test_the_catalogue_knows_the_registered_corpus_and_only_existing_tenants(
    world: World,
) -> None:
    tenant = await world.new_tenant()
    entry = await world.catalogue.corpus(world.corpus.name)
    assert entry is not None
    assert (entry.corpus_id, entry.status) == (world.corpus.name, "published")
    assert StoreCorpus.from_definition(entry.definition) == world.corpus
    assert await world.catalogue.corpus(f"missing_{uuid.uuid4().hex}") is None
    assert await world.catalogue.tenant_exists(tenant)
    assert not await world.catalogue.tenant_exists(uuid.uuid4())


# --------------------------------------------------------------------------------------- scope


async def test_a_pinned_scope_confines_every_read_and_where_only_narrows_it(world: World) -> None:
    tenant = await filled(world)
    corpus = world.corpus
    async with world.transactions.tenant(tenant, read_only=True) as work:
        arrays, _ = await work.graph.load(corpus, pinned("c1"), LIMITS)
        assert arrays.ids == ["a", "b"]
        assert edges_of(arrays) == {"a->b"}
        assert float(arrays.edge_weight[0]) == 0.5
        # The request asks for the other client's rows: the pinned scope still holds.
        widened, _ = await work.graph.load(corpus, pinned("c1", "tenant_id == 'c2'"), LIMITS)
        assert widened.ids == []
        assert widened.n_edges == 0
        found = await work.graph.retrieve(corpus, "alpha", 10, pinned("c1"))
        assert [d.id for d in found] == ["a"]
        assert await work.graph.retrieve(corpus, "alpha", 10, pinned("c1", "id == 'c'")) == []
        page = await work.graph.documents_page(corpus, None, 10, pinned("c2"))
        assert [d.id for d in page] == ["c"]
        narrowed = await work.graph.documents_page(
            corpus, None, 10, pinned("c1", "title == '${t}'", t="beta cap")
        )
        assert [d.id for d in narrowed] == ["b"]


async def test_a_filter_on_document_only_columns_keeps_the_edges_whose_two_ends_are_in_scope(
    world: World,
) -> None:
    tenant = await filled(world)
    async with world.transactions.tenant(tenant, read_only=True) as work:
        arrays, _ = await work.graph.load(
            world.corpus, Scope(where="title LIKE 'alpha%' OR title == 'beta cap'"), LIMITS
        )
    assert arrays.ids == ["a", "b"]
    # Both a->b edges (one per client) have both ends in scope; a->c does not.
    assert sorted(edges_of(arrays)) == ["a->b"]
    assert arrays.n_edges == 2


async def test_pages_follow_id_order_after_the_cursor_and_retrieval_ranks_then_orders_by_id(
    world: World,
) -> None:
    tenant = await filled(world)
    async with world.transactions.tenant(tenant, read_only=True) as work:
        first = await work.graph.documents_page(world.corpus, None, 2, Scope())
        rest = await work.graph.documents_page(world.corpus, first[-1].id, 2, Scope())
        found = await work.graph.retrieve(world.corpus, "alpha cap", 2, Scope())
        assert await work.graph.retrieve(world.corpus, "!!", 2, Scope()) == []
    assert [d.id for d in first] == ["a", "b"]
    assert [(d.id, d.title, d.body) for d in rest] == [("c", "gamma alpha", None)]
    assert [d.id for d in found] == ["a", "b"]  # a holds both terms, b and c one each
    assert found[0].similarity > found[1].similarity > 0


# ------------------------------------------------------------------------------- reinforcement


async def test_a_reinforcement_sums_the_deltas_per_edge_and_clamps_the_weight(
    world: World,
) -> None:
    tenant = await filled(world)
    corpus = world.corpus
    async with world.transactions.tenant(tenant) as work:
        moved = await work.memory.reinforce(
            corpus,
            [EdgeDelta("a", "b", "cite", 0.2), EdgeDelta("a", "b", "cite", 0.1)],
            pinned("c1"),
        )
    assert moved == 1
    assert await world.weights(tenant) == {
        ("a", "b", "c1"): pytest.approx(0.8),
        ("a", "c", "c2"): 0.5,
        ("a", "b", "c2"): 0.5,
    }
    async with world.transactions.tenant(tenant) as work:
        await work.memory.reinforce(corpus, [EdgeDelta("a", "c", "cite", 5.0)], Scope())
        await work.memory.reinforce(corpus, [EdgeDelta("a", "b", "cite", -5.0)], pinned("c1"))
        assert await work.memory.reinforce(corpus, [EdgeDelta("a", "c", "cite", 0.0)], Scope()) == 0
    assert await world.weights(tenant) == {
        ("a", "b", "c1"): 0.001,
        ("a", "c", "c2"): 1.0,
        ("a", "b", "c2"): 0.5,
    }


async def test_a_reinforcement_in_one_clients_scope_leaves_the_other_clients_same_edge(
    world: World,
) -> None:
    tenant = await filled(world)
    async with world.transactions.tenant(tenant) as work:
        await work.memory.reinforce(world.corpus, [EdgeDelta("a", "b", "cite", -5.0)], pinned("c2"))
    async with world.transactions.tenant(tenant, read_only=True) as work:
        mine, _ = await work.graph.load(world.corpus, pinned("c1"), LIMITS)
        theirs, _ = await work.graph.load(world.corpus, pinned("c2"), LIMITS)
    assert [float(w) for w in mine.edge_weight] == [0.5]
    assert sorted(float(w) for w in theirs.edge_weight) == [0.001, 0.5]  # a->b moved, a->c not


async def test_reinforcements_in_turn_each_clamp_what_the_ones_before_left_and_each_move_the_revision(
    world: World,
) -> None:
    tenant = await filled(world)
    corpus = world.corpus
    async with world.transactions.tenant(tenant) as work:
        before = await work.graph.revision(corpus.name)
        await work.memory.reinforce_in_turn(
            corpus,
            [
                [EdgeDelta("a", "b", "cite", 0.7)],  # 0.5 + 0.7 clamps at 1.0
                [EdgeDelta("a", "b", "cite", 0.0)],  # all zero: no statement
                [EdgeDelta("a", "b", "cite", -0.25)],  # from 1.0, not from 1.2
                [],
            ],
            pinned("c1"),
        )
        assert await work.graph.revision(corpus.name) == before + 2  # one per plan written
    assert await world.weights(tenant) == {
        ("a", "b", "c1"): pytest.approx(0.75),
        ("a", "c", "c2"): 0.5,
        ("a", "b", "c2"): 0.5,
    }


async def test_outcomes_and_audit_events_recorded_together_read_back_as_one_by_one(
    world: World,
) -> None:
    tenant = await filled(world)
    name = world.corpus.name
    events = [event(tenant) for _ in range(3)]
    async with world.transactions.tenant(tenant) as work:
        await work.memory.serialise(name, "scope")
        await work.memory.record_outcomes(
            name,
            "scope",
            [NewOutcome(k, f"q{k}", ("a", "b")[: k % 2 + 1], [], k / 10) for k in (1, 2, 3)],
        )
        await work.audit.append_all(events)
        await work.audit.append_all([])
    async with world.transactions.tenant(tenant, read_only=True) as work:
        recent = await work.memory.recent_outcomes(name, "scope", 5)
    assert [(o.sequence, o.path, o.score) for o in recent] == [
        (1, ("a", "b"), 0.1),
        (2, ("a",), 0.2),
        (3, ("a", "b"), 0.3),
    ]
    assert await world.outbox(tenant) == [e.event_id for e in events]


async def test_concurrent_reinforcements_lose_no_update(world: World) -> None:
    tenant = await filled(world)

    async def nudge() -> None:
        async with world.transactions.tenant(tenant) as work:
            await work.memory.reinforce(
                world.corpus, [EdgeDelta("a", "b", "cite", 0.01)], pinned("c1")
            )

    await asyncio.gather(*(nudge() for _ in range(10)))
    weights = await world.weights(tenant)
    assert weights[("a", "b", "c1")] == pytest.approx(0.6)
    assert weights[("a", "b", "c2")] == 0.5


# ----------------------------------------------------------------------------------- freshness


async def test_the_revision_moves_with_every_write_and_a_refresh_follows_it(world: World) -> None:
    tenant = await world.new_tenant()
    corpus = world.corpus
    await world.write(tenant, DOCS[:2], EDGES[:1])
    async with world.transactions.tenant(tenant, read_only=True) as work:
        first = await work.graph.revision(corpus.name)
        arrays, rows = await work.graph.load(corpus, Scope(), LIMITS)
        assert rows is not None
        assert rows.revision == arrays.revision == first == 2  # one per write statement
        same = await work.graph.refresh(corpus, rows, Scope(), LIMITS)  # nothing changed
        assert same is not None
        assert (same.revision, same.ids, same.n_edges) == (first, ["a", "b"], 1)
    await world.write(tenant, DOCS[2:], [])
    async with world.transactions.tenant(tenant, read_only=True) as work:
        assert await work.graph.revision(corpus.name) == first + 1
        refreshed = await work.graph.refresh(corpus, rows, Scope(), LIMITS)
    assert refreshed is not None
    assert refreshed.revision == first + 1
    assert refreshed.ids == ["a", "b", "c"]
    assert edges_of(refreshed) == {"a->b"}
    async with world.transactions.tenant(tenant) as work:
        await work.memory.reinforce(corpus, [EdgeDelta("a", "b", "cite", 0.1)], Scope())
        assert await work.graph.revision(corpus.name) == first + 2  # a reinforcement is a write
    await world.delete_edges(tenant)
    async with world.transactions.tenant(tenant, read_only=True) as work:
        assert await work.graph.revision(corpus.name) == first + 3
        # A deletion is a reset: the cached rows cannot be brought up to date, only reloaded.
        assert await work.graph.refresh(corpus, refreshed, Scope(), LIMITS) is None
        reloaded, _ = await work.graph.load(corpus, Scope(), LIMITS)
    assert reloaded.n_edges == 0


async def test_a_read_only_unit_of_work_reads_one_snapshot(world: World) -> None:
    tenant = await filled(world)
    async with world.transactions.tenant(tenant, read_only=True) as work:
        before = await work.graph.revision(world.corpus.name)
        await world.write(tenant, [{"id": "d", "tenant_id": "c1", "title": "delta"}], [])
        arrays, _ = await work.graph.load(world.corpus, Scope(), LIMITS)
        assert await work.graph.revision(world.corpus.name) == before
    assert "d" not in arrays.ids


async def test_a_load_past_the_row_limit_fails_naming_the_limit(world: World) -> None:
    tenant = await filled(world)
    async with world.transactions.tenant(tenant, read_only=True) as work:
        with pytest.raises(RowLimitExceededError, match="more than 2 documents in scope"):
            await work.graph.load(world.corpus, Scope(), LoadLimits(max_documents=2))


# ------------------------------------------------------------------------ memory, audit, inbox


def event(tenant: uuid.UUID) -> OutboxEvent:
    return OutboxEvent(
        event_id=uuid.uuid4(),
        topic="mnemo.audit.v1",
        key=str(tenant).encode(),
        payload={"data": {"record": {}}},
        headers={"content-type": "application/json"},
    )


async def test_what_a_unit_of_work_queues_lands_once_on_commit_and_never_on_failure(
    world: World,
) -> None:
    tenant = await filled(world)
    kept, dropped = event(tenant), event(tenant)
    request = uuid.uuid4()
    async with world.transactions.tenant(tenant) as work:
        await work.audit.append(kept)
        assert await work.inbox.claim("navigator", request)
    with pytest.raises(RuntimeError, match="boom"):
        async with world.transactions.tenant(tenant) as work:
            await work.audit.append(dropped)
            await work.memory.record_outcome(world.corpus.name, "d", 1, "q", ["a"], [], 0.5)
            assert await work.inbox.claim("navigator", uuid.uuid4())
            raise RuntimeError("boom")
    assert await world.outbox(tenant) == [kept.event_id]
    async with world.transactions.tenant(tenant) as work:
        assert not await work.inbox.claim("navigator", request)  # already handled
        assert await work.inbox.claim("another consumer", request)
        assert await work.memory.recent_outcomes(world.corpus.name, "d", 5) == []


async def test_recent_outcomes_are_the_last_ones_of_the_scope_oldest_first(world: World) -> None:
    tenant = await filled(world)
    name = world.corpus.name
    async with world.transactions.tenant(tenant) as work:
        await work.memory.serialise(name, "scope")
        for sequence in (1, 2, 3):
            await work.memory.record_outcome(
                name, "scope", sequence, "q", ["a", "b"], [{"from": "a"}], sequence / 10
            )
        await work.memory.record_outcome(name, "other", 1, "q", ["c"], [], 0.9)
    async with world.transactions.tenant(tenant, read_only=True) as work:
        recent = await work.memory.recent_outcomes(name, "scope", 2)
    assert [(o.sequence, o.path, o.score) for o in recent] == [
        (2, ("a", "b"), 0.2),
        (3, ("a", "b"), 0.3),
    ]
    async with world.transactions.tenant(tenant, read_only=True) as work:
        since = [o.sequence for o in await work.memory.recent_outcomes(name, "scope", 9, since=2)]
        assert since == [2, 3]  # from sequence 2 on, that one included
        assert await work.memory.recent_outcomes(name, "scope", 9, since=4) == []
        assert [
            o.sequence for o in await work.memory.recent_outcomes(name, "scope", 1, since=2)
        ] == [3]


async def test_the_reset_mark_moves_with_a_delete_and_only_then(world: World) -> None:
    tenant = await world.new_tenant()
    name = world.corpus.name
    async with world.transactions.tenant(tenant, read_only=True) as work:
        assert await work.graph.marks(name) == (0, 0)
    await world.write(tenant, DOCS[:2], EDGES[:1])
    async with world.transactions.tenant(tenant) as work:
        revision, reset = await work.graph.marks(name)
        assert (revision, reset) == (await work.graph.revision(name), 0)
        await work.memory.reinforce(world.corpus, [EdgeDelta("a", "b", "cite", 0.1)], Scope())
        assert await work.graph.marks(name) == (revision + 1, 0)  # a write, not a reset
    await world.delete_edges(tenant)
    async with world.transactions.tenant(tenant, read_only=True) as work:
        assert await work.graph.marks(name) == (revision + 2, revision + 2)


async def test_recent_scores_are_the_last_ones_of_the_scope_oldest_first(world: World) -> None:
    tenant = await filled(world)
    name = world.corpus.name
    async with world.transactions.tenant(tenant) as work:
        assert await work.memory.recent_scores(name, "scope", 5) == RecentScores(0, ())
        await work.memory.serialise(name, "scope")
        for sequence in (1, 2, 3, 4):
            await work.memory.record_outcome(name, "scope", sequence, "q", ["a"], [], sequence / 8)
        await work.memory.record_outcome(name, "other", 7, "q", ["c"], [], 0.9)
    async with world.transactions.tenant(tenant, read_only=True) as work:
        assert await work.memory.recent_scores(name, "scope", 3) == RecentScores(
            4, (0.25, 0.375, 0.5)
        )
        assert await work.memory.recent_scores(name, "scope", 9) == RecentScores(
            4, (0.125, 0.25, 0.375, 0.5)
        )
        assert await work.memory.recent_scores(name, "other", 9) == RecentScores(7, (0.9,))
    stranger = await filled(world)
    async with world.transactions.tenant(stranger, read_only=True) as work:
        assert await work.memory.recent_scores(name, "scope", 9) == RecentScores(0, ())


# ------------------------------------------------------------------- the use cases over each


async def test_every_query_of_the_use_cases_leaves_exactly_one_audit_event(world: World) -> None:
    tenant = await filled(world)
    navigator = Navigator(
        world.transactions, world.catalogue, GraphCache(64 << 20), Policy(pinned_scopes={})
    )
    caller = Caller(Principal(tenant=tenant, subject="agent", scopes=frozenset({"read"})))
    name = world.corpus.name
    first = await navigator.navigate(caller, name, NavigateRequest("alpha beta", seed="a"))
    second = await navigator.navigate(caller, name, NavigateRequest("alpha beta", seed="a"))
    found = await navigator.retrieve(caller, name, RetrieveRequest("alpha", k=5))
    page = await navigator.documents(caller, name, None, 2)
    assert (first.cache, second.cache) == ("miss", "hit")
    assert [d.id for d in found.items] == ["a", "c"]
    assert [d.id for d in page.documents] == ["a", "b"]
    assert page.next_after == "b"
    assert len(await world.outbox(tenant)) == 4


async def test_of_two_concurrent_claims_of_one_request_exactly_one_wins(world: World) -> None:
    tenant = await world.new_tenant()
    request = uuid.uuid4()

    async def claim() -> bool:
        async with world.transactions.tenant(tenant) as work:
            return await work.inbox.claim("navigator", request)

    assert sorted(await asyncio.gather(claim(), claim())) == [False, True]


async def test_a_filter_naming_a_column_the_documents_lack_is_refused_before_any_read(
    world: World,
) -> None:
    tenant = await filled(world)
    async with world.transactions.tenant(tenant, read_only=True) as work:
        with pytest.raises(UnknownColumnError, match="unknown column 'colour'"):
            await work.graph.load(world.corpus, Scope(where="colour == 'red'"), LIMITS)
        with pytest.raises(UnknownColumnError):
            await work.graph.documents_page(world.corpus, None, 5, Scope(where="colour == 'r'"))
