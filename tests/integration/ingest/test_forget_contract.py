"""The ports `Forget` uses, one contract over both adapters (in-memory and Postgres as the ingest
role): a document is deleted only for its tenant and only when its match columns agree; edges
touching it go (either end), others stay; parked edges naming it go; outcomes whose path went
through it go, for that corpus only. And the use case over each adapter, with another tenant's
document of the same id left alone."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable

import pytest
from mnemo_ingest.fakes import MemoryIngestStore
from mnemo_ingest.use_cases import Forget, ForgetCommand

from tests.integration.ingest.test_ports_contract import (
    CONSUMER,
    Postgres,
    World,
    doc,
    edge,
    memory_world,
    postgres,
    postgres_world,
)

__all__ = ["postgres"]  # the module fixture, shared with the ports contract

Seed = Callable[[uuid.UUID, str, tuple[str, ...]], Awaitable[None]]
Count = Callable[[uuid.UUID], Awaitable[int]]


@pytest.fixture(params=["memory", "postgres"])
def world(request: pytest.FixtureRequest) -> tuple[World, Seed, Count]:
    """A world, a way to record an outcome (corpus, path) for a tenant, and a count of them."""
    if request.param == "memory":
        made = memory_world()
        assert isinstance(made.store, MemoryIngestStore)
        memory = made.store

        async def seed(tenant: uuid.UUID, corpus: str, path: tuple[str, ...]) -> None:
            memory.state(tenant).outcomes.append((corpus, path))

        async def count(tenant: uuid.UUID) -> int:
            return len(memory.state(tenant).outcomes)

        return made, seed, count
    state: Postgres = request.getfixturevalue("postgres")
    owner = state.owner

    async def seed_row(tenant: uuid.UUID, corpus: str, path: tuple[str, ...]) -> None:
        async with state.lock, owner.transaction():
            await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
            await owner.execute(
                "INSERT INTO mnemo.nav_outcomes (axon_tenant, corpus_id, scope, seq, query, path,"
                " score) VALUES ($1, $2, '', (SELECT count(*) FROM mnemo.nav_outcomes), 'q',"
                " $3::text[], 0.5)",
                tenant,
                corpus,
                list(path),
            )

    async def count_rows(tenant: uuid.UUID) -> int:
        async with state.lock, owner.transaction():
            await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
            return int(await owner.fetchval("SELECT count(*) FROM mnemo.nav_outcomes"))

    return postgres_world(state), seed_row, count_rows


async def test_a_document_is_deleted_for_its_tenant_only_and_only_within_its_match(
    world: tuple[World, Seed, Count],
) -> None:
    made, _, _ = world
    corpus = made.corpus
    tenant, other = await made.new_tenant(), await made.new_tenant()
    for owner_of in (tenant, other):
        async with made.store.tenant(owner_of) as tx:
            await tx.rows.take_revisions([corpus.name])
            await tx.rows.insert(corpus.documents, [doc("a", "s1"), doc("b", "s2")])
    async with made.store.tenant(tenant) as tx:
        assert not await tx.rows.delete_document(corpus.documents, "id", "b", {"space": "s1"})
        assert not await tx.rows.delete_document(corpus.documents, "id", "zz", {})
        assert await tx.rows.delete_document(corpus.documents, "id", "a", {"space": "s1"})
        assert await tx.rows.delete_document(corpus.documents, "id", "b", {})
        assert not await tx.rows.delete_document(corpus.documents, "id", "a", {})
        with pytest.raises(ValueError, match="no column"):
            await tx.rows.delete_document(corpus.documents, "id", "a", {"nope": "x"})
    async with made.store.tenant(tenant) as tx:
        assert await tx.rows.existing_documents(corpus.documents, "id", ["a", "b"], []) == {}
    async with made.store.tenant(other) as tx:
        found = await tx.rows.existing_documents(corpus.documents, "id", ["a", "b"], [])
        assert sorted(found) == ["a", "b"]


async def test_edges_touching_a_document_go_from_either_end_and_others_stay(
    world: tuple[World, Seed, Count],
) -> None:
    made, _, _ = world
    corpus = made.corpus
    tenant, other = await made.new_tenant(), await made.new_tenant()
    for owner_of in (tenant, other):
        async with made.store.tenant(owner_of) as tx:
            await tx.rows.take_revisions([corpus.name])
            await tx.rows.insert(corpus.relations, [edge("a", "b"), edge("b", "a"), edge("b", "c")])
    args = (corpus.relations, corpus.from_column, corpus.to_column)
    async with made.store.tenant(tenant) as tx:
        assert await tx.rows.delete_edges_touching(*args, "a") == 2
        assert await tx.rows.delete_edges_touching(*args, "a") == 0
    async with made.store.tenant(other) as tx:
        assert await tx.rows.delete_edges_touching(*args, "c") == 1
        assert await tx.rows.delete_edges_touching(*args, "a") == 2


async def test_parked_edges_naming_a_document_go_and_others_stay(
    world: tuple[World, Seed, Count],
) -> None:
    made, _, _ = world
    corpus = made.corpus
    tenant = await made.new_tenant()
    store = corpus.relations.name
    async with made.store.tenant(tenant) as tx:
        await tx.pending.hold(uuid.uuid4(), store, edge("a", "x"), ["x"])
        await tx.pending.hold(uuid.uuid4(), store, edge("y", "a"), ["y"])
        await tx.pending.hold(uuid.uuid4(), store, edge("y", "x"), ["y", "x"])
        await tx.pending.hold(uuid.uuid4(), "OtherStore", edge("a", "x"), ["x"])
    async with made.store.tenant(tenant) as tx:
        assert await tx.pending.drop_naming(store, "from_id", "to_id", "a") == 2
        assert await tx.pending.drop_naming(store, "from_id", "to_id", "a") == 0
        left = await tx.pending.take_for(["x", "y"])
    assert sorted((e.store, e.values["from_id"]) for e in left) == [
        ("OtherStore", "a"),
        (store, "y"),
    ]


async def test_outcomes_whose_path_went_through_a_document_go_for_that_corpus_only(
    world: tuple[World, Seed, Count],
) -> None:
    made, seed, count = world
    name = made.corpus.name
    tenant, other = await made.new_tenant(), await made.new_tenant()
    await seed(tenant, name, ("b", "a"))
    await seed(tenant, name, ("b",))
    await seed(tenant, "AnotherCorpus", ("a",))
    await seed(other, name, ("a",))
    async with made.store.tenant(tenant) as tx:
        assert await tx.outcomes.forget_naming(name, "a") == 1
        assert await tx.outcomes.forget_naming(name, "a") == 0
    assert await count(tenant) == 2
    assert await count(other) == 1
    for who in (tenant, other):  # leave no outcome behind (the fixture removes the tenants)
        async with made.store.tenant(who) as tx:
            await tx.outcomes.forget_naming(name, "a")
            await tx.outcomes.forget_naming(name, "b")
            await tx.outcomes.forget_naming("AnotherCorpus", "a")


async def test_the_use_case_forgets_one_tenants_document_and_leaves_the_others(
    world: tuple[World, Seed, Count],
) -> None:
    made, _, _ = world
    corpus = made.corpus
    tenant, other = await made.new_tenant(), await made.new_tenant()
    for owner_of in (tenant, other):
        async with made.store.tenant(owner_of) as tx:
            await tx.rows.take_revisions([corpus.name])
            await tx.rows.insert(corpus.documents, [doc("a"), doc("b")])
            await tx.rows.insert(corpus.relations, [edge("a", "b")])
    forget = Forget(made.store, made.directory, consumer=CONSUMER)
    event = uuid.uuid4()
    command = ForgetCommand(
        ref="r", event_id=event, tenant=tenant, store=corpus.documents.name,
        document_id="a", producer="tester",
    )  # fmt: skip
    done, refused = await forget.forget([command])
    assert refused == []
    assert [(f.document_id, f.edges) for f in done] == [("a", 1)]
    assert await forget.forget([command]) == ([], [])  # redelivered
    async with made.store.tenant(tenant) as tx:
        assert sorted(await tx.rows.existing_documents(corpus.documents, "id", ["a", "b"], [])) == [
            "b"
        ]
    async with made.store.tenant(other) as tx:
        found = await tx.rows.existing_documents(corpus.documents, "id", ["a", "b"], [])
        assert sorted(found) == ["a", "b"]
    assert len(await made.outbox(tenant)) == 1  # the delete audit event
