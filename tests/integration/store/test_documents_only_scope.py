"""A `where:` naming a column only the documents store has: it scopes the documents, and the edges
read and reinforced are those with both ends among them (ARCHITECTURE §2)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass

import asyncpg
import pytest
from mnemo_axon.compiler import load_deployment
from mnemo_axon.errors import UnknownColumnError
from mnemo_store import EdgeDelta, Scope, Store, StoreCorpus
from mnemo_store.applier import apply_deployment
from mnemo_store.identifiers import store_table

DECLARATIONS = """
axonstore OnlyDocs_{s} {{
    schema {{ id: Text primary_key  tenant_id: Text not_null  title: Text not_null  body: Text }}
}}
axonstore OnlyEdges_{s} {{
    schema {{ from_id: Text not_null  to_id: Text not_null  etype: Text not_null
             weight: Float not_null  tenant_id: Text not_null }}
}}
corpus Only_{s} from axonstore {{
    documents: OnlyDocs_{s}(id, title, body)
    relations: OnlyEdges_{s}(from_id, to_id, etype, weight)
    adaptive: true
}}
"""
# a -> b stays inside `title LIKE 'keep%'`; b -> c and c -> a leave it; d -> a is another client's.
DOCS = [("a", "c1", "keep one"), ("b", "c1", "keep two"), ("c", "c1", "drop"), ("d", "c2", "keep")]
EDGES = [("a", "b", "c1"), ("b", "c", "c1"), ("c", "a", "c1"), ("d", "a", "c2")]


@dataclass(frozen=True, slots=True)
class Arena:
    app_dsn: str
    corpus: StoreCorpus
    tenant: uuid.UUID


@pytest.fixture
async def arena(app_dsn: str, owner_dsn: str) -> AsyncIterator[Arena]:
    suffix = uuid.uuid4().hex[:10]
    owner = await asyncpg.connect(owner_dsn)
    deployment = load_deployment(DECLARATIONS.format(s=suffix), "only.axon")
    await apply_deployment(owner, deployment, gateway_base_url="http://127.0.0.1:8080")
    corpus = StoreCorpus.from_deployment(deployment, f"Only_{suffix}")
    tenant = await owner.fetchval(
        "INSERT INTO mnemo.tenants (name) VALUES ($1) RETURNING tenant_id",
        f"test-only-{uuid.uuid4().hex}",
    )
    try:
        async with await Store.connect(app_dsn) as store, store.tenant(tenant) as tx:
            await tx.insert_rows(
                corpus.documents,
                [{"id": i, "tenant_id": c, "title": t, "body": None} for i, c, t in DOCS],
            )
            await tx.insert_rows(
                corpus.relations,
                [
                    {"from_id": s, "to_id": t, "etype": "cite", "weight": 0.5, "tenant_id": c}
                    for s, t, c in EDGES
                ],
            )
        yield Arena(app_dsn, corpus, tenant)
    finally:
        for decl in (corpus.documents, corpus.relations):
            await owner.execute(f"DROP TABLE IF EXISTS {store_table(decl.name)}")
        await owner.execute("DELETE FROM mnemo.corpora WHERE corpus_id = $1", corpus.name)
        async with owner.transaction():
            await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
            await owner.execute("DELETE FROM mnemo.graph_revisions")
        await owner.execute("DELETE FROM mnemo.tenants WHERE tenant_id = $1", tenant)
        await owner.close()


async def _weights(arena: Arena) -> dict[tuple[str, str], float]:
    owner = await asyncpg.connect(arena.app_dsn)
    try:
        async with owner.transaction():
            await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(arena.tenant))
            rows = await owner.fetch(
                f"SELECT from_id, to_id, weight FROM {store_table(arena.corpus.relations.name)}"
            )
    finally:
        await owner.close()
    return {(r["from_id"], r["to_id"]): r["weight"] for r in rows}


async def test_a_documents_only_filter_scopes_documents_and_the_edges_between_them(
    arena: Arena,
) -> None:
    scope = Scope("title LIKE '${t}%'", {"t": "keep"}, pinned="tenant_id == 'c1'")
    every_edge = [EdgeDelta(s, t, "cite", 0.1) for s, t, _ in EDGES]
    async with await Store.connect(arena.app_dsn) as store:
        async with store.tenant(arena.tenant, read_only=True) as tx:
            graph = await tx.load_graph(arena.corpus, scope)
            assert graph.ids == ["a", "b"]
            assert graph.n_edges == 1
            unpinned = await tx.load_graph(arena.corpus, Scope("title LIKE 'keep%'"))
            assert unpinned.ids == ["a", "b", "d"]
            assert unpinned.n_edges == 2  # a -> b and d -> a: both ends of each are in scope
        async with store.tenant(arena.tenant) as tx:
            assert await tx.reinforce(arena.corpus, every_edge, scope) == 1
    weights = await _weights(arena)
    assert weights.pop(("a", "b")) == pytest.approx(0.6)
    assert set(weights.values()) == {0.5}


@pytest.mark.parametrize(
    ("where", "column"), [("colour == 'red'", "colour"), ("weight > 0.1", "weight")]
)
async def test_a_column_the_documents_store_lacks_is_refused_by_name(
    arena: Arena, where: str, column: str
) -> None:
    async with (
        await Store.connect(arena.app_dsn) as store,
        store.tenant(arena.tenant, read_only=True) as tx,
    ):
        with pytest.raises(UnknownColumnError, match=f"'{column}'"):
            await tx.load_graph(arena.corpus, Scope(where))
