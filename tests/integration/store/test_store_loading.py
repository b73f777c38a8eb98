"""Graph loading: document order, endpoints as positions, the scope on both stores, limits, revisions."""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np
import pytest
from mnemo_mdn import RELATION_TYPES
from mnemo_store import LoadLimits, RowLimitExceededError, Scope, Store


@pytest.mark.parametrize(
    ("id_type", "make_id"),
    [
        ("Uuid", lambda k: str(uuid.uuid4())),
        ("BigInt", lambda k: str(k * 7 + 3)),  # text order differs from numeric order: "10" < "3"
        ("Text", lambda k: f"doc-{k:03d}-ü"),
    ],
)
async def test_a_loaded_graph_has_documents_in_id_text_order_and_edges_as_positions(
    store: Store, declare: Any, new_tenant: Any, id_type: str, make_id: Any
) -> None:
    corpus = (await declare(id_type)).corpus
    tenant, sub = await new_tenant(), uuid.uuid4()
    ids = [make_id(k) for k in range(12)]
    typed = [int(doc) if id_type == "BigInt" else doc for doc in ids]
    edges = [
        (typed[0], typed[1], "cite", 0.5),
        (typed[2], typed[11], "contradict", 0.25),
        (typed[3], typed[3], "depend", 1.0),
        (typed[4], ("9999" if id_type == "BigInt" else make_id(99)), "cite", 0.5),  # unknown end
        (typed[5], typed[6], "likes", 0.5),  # outside the catalog
    ]
    if id_type == "BigInt":
        edges[3] = (typed[4], 9999, "cite", 0.5)
    async with store.tenant(tenant) as tx:
        await tx.insert_rows(
            corpus.documents,
            [
                {
                    "id": doc,
                    "tenant_id": sub,
                    "title": f"title {k}",
                    "body": f"body {k}" if k % 2 else None,
                }
                for k, doc in enumerate(typed)
            ],
        )
        await tx.insert_rows(
            corpus.relations,
            [
                {"from_id": s, "to_id": t, "etype": e, "weight": w, "tenant_id": sub}
                for s, t, e, w in edges
            ],
        )
    async with store.tenant(tenant, read_only=True) as tx:
        graph = await tx.load_graph(corpus)
    assert graph.ids == sorted(ids, key=lambda doc: doc.encode("utf-8"))
    position = {doc: k for k, doc in enumerate(graph.ids)}
    title_of = {doc: f"title {k}" for k, doc in enumerate(ids)}
    assert graph.titles == [title_of[doc] for doc in graph.ids]
    assert graph.bodies is not None
    assert graph.bodies[position[ids[1]]] == "body 1"
    assert graph.bodies[position[ids[0]]] is None
    found = {
        (int(s), int(t), int(e), float(w))
        for s, t, e, w in zip(
            graph.edge_source, graph.edge_target, graph.edge_type, graph.edge_weight, strict=True
        )
    }
    assert found == {
        (position[ids[0]], position[ids[1]], RELATION_TYPES.index("cite"), 0.5),
        (position[ids[2]], position[ids[11]], RELATION_TYPES.index("contradict"), 0.25),
        (position[ids[3]], position[ids[3]], RELATION_TYPES.index("depend"), 1.0),
        (position[ids[4]], -1, RELATION_TYPES.index("cite"), 0.5),
        (position[ids[5]], position[ids[6]], -1, 0.5),
    }
    engine_graph = graph.to_graph()
    assert engine_graph.diagnostics.skipped_edges == 2
    assert engine_graph.ids == tuple(graph.ids)


async def test_the_scope_restricts_documents_and_edges_alike(
    store: Store, declare: Any, new_tenant: Any
) -> None:
    corpus = (await declare()).corpus
    tenant = await new_tenant()
    alice, bob = uuid.uuid4(), uuid.uuid4()
    a = [str(uuid.uuid4()) for _ in range(3)]
    b = [str(uuid.uuid4()) for _ in range(2)]
    async with store.tenant(tenant) as tx:
        await tx.insert_rows(
            corpus.documents,
            [
                *({"id": doc, "tenant_id": alice, "title": "a", "body": None} for doc in a),
                *({"id": doc, "tenant_id": bob, "title": "b", "body": None} for doc in b),
            ],
        )
        await tx.insert_rows(
            corpus.relations,
            [
                {
                    "from_id": a[0],
                    "to_id": a[1],
                    "etype": "cite",
                    "weight": 0.5,
                    "tenant_id": alice,
                },
                {"from_id": b[0], "to_id": b[1], "etype": "cite", "weight": 0.5, "tenant_id": bob},
                # bob's row pointing at alice's documents: never part of alice's graph
                {"from_id": a[1], "to_id": a[2], "etype": "cite", "weight": 0.5, "tenant_id": bob},
            ],
        )
        scoped = await tx.load_graph(corpus, Scope("tenant_id = '${id}'", {"id": str(alice)}))
        whole = await tx.load_graph(corpus)
    assert sorted(scoped.ids) == sorted(a)
    assert scoped.n_edges == 1
    assert (scoped.ids[int(scoped.edge_source[0])], scoped.ids[int(scoped.edge_target[0])]) == (
        a[0],
        a[1],
    )
    assert whole.n_documents == 5
    assert whole.n_edges == 3


async def test_a_row_limit_fails_loudly_or_flags_the_graph_as_truncated(
    store: Store, declare: Any, new_tenant: Any
) -> None:
    corpus = (await declare()).corpus
    tenant, sub = await new_tenant(), uuid.uuid4()
    ids = sorted(str(uuid.uuid4()) for _ in range(10))
    async with store.tenant(tenant) as tx:
        await tx.insert_rows(
            corpus.documents,
            # Inserted last first: the first rows on disk are not the first in id order.
            [{"id": doc, "tenant_id": sub, "title": "t", "body": None} for doc in reversed(ids)],
        )
        await tx.insert_rows(
            corpus.relations,
            [
                {
                    "from_id": ids[k],
                    "to_id": ids[k + 1],
                    "etype": "cite",
                    "weight": 0.5,
                    "tenant_id": sub,
                }
                for k in range(9)
            ],
        )
        with pytest.raises(RowLimitExceededError, match="more than 5 documents"):
            await tx.load_graph(corpus, limits=LoadLimits(max_documents=5))
        with pytest.raises(RowLimitExceededError, match="more than 3 edges"):
            await tx.load_graph(corpus, limits=LoadLimits(max_edges=3))
        flagged = await tx.load_graph(corpus, limits=LoadLimits(max_documents=5, on_exceed="flag"))
        exact = await tx.load_graph(corpus, limits=LoadLimits(max_documents=10, max_edges=9))
    assert flagged.truncated
    assert flagged.ids == ids[:5]
    assert np.all(flagged.edge_source < 5)
    assert not exact.truncated
    assert exact.n_documents == 10
    assert exact.n_edges == 9


async def test_every_write_bumps_the_graph_revision_in_its_own_transaction(
    store: Store, declare: Any, new_tenant: Any
) -> None:
    corpus = (await declare()).corpus
    tenant, other, sub = await new_tenant(), await new_tenant(), uuid.uuid4()
    doc = str(uuid.uuid4())
    async with store.tenant(tenant) as tx:
        assert await tx.graph_revision(corpus.name) == 0
        cached = await tx.load_graph(corpus)
    assert cached.revision == 0
    with pytest.raises(RuntimeError):
        async with store.tenant(tenant) as tx:
            await tx.insert_rows(
                corpus.documents, [{"id": doc, "tenant_id": sub, "title": "t", "body": None}]
            )
            raise RuntimeError("roll back")
    async with store.tenant(tenant) as tx:
        assert await tx.graph_revision(corpus.name) == 0  # a rolled-back write changes nothing
        await tx.insert_rows(
            corpus.documents, [{"id": doc, "tenant_id": sub, "title": "t", "body": None}]
        )
        await tx.insert_rows(
            corpus.relations,
            [{"from_id": doc, "to_id": doc, "etype": "cite", "weight": 0.5, "tenant_id": sub}],
        )
    async with store.tenant(tenant) as tx:
        revision = await tx.graph_revision(corpus.name)
        assert revision == 2
        assert revision != cached.revision
        fresh = await tx.load_graph(corpus)
        await tx.reinforce(corpus, [])  # nothing to write: no bump
    assert fresh.revision == 2
    async with store.tenant(other) as tx:
        assert await tx.graph_revision(corpus.name) == 0  # revisions are per tenant
