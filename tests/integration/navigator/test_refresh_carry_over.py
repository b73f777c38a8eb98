"""A graph refreshed from changed rows in Postgres takes over its predecessor's term index (updated
for the changed documents, equal to a rebuild) and its EPR as a warm start (within 1e-9 of a cold
computation)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable

import numpy as np
import pytest
from mnemo_mdn import epr
from mnemo_mdn.relevance import TERMS_MEMO, TermIndex, _build_term_index, term_index
from mnemo_store import Scope, Store
from mnemo_store.graph_cache import CachedGraph, graph_bytes, refreshed_graph_bytes, rows_bytes

from tests.integration.navigator.conftest import Declare, navigator_dsn
from tests.unit.mdn.test_incremental import assert_same_index

DOCS = [
    {"id": f"d{k:03d}", "tenant_id": "c1", "title": f"doc {k} alpha", "body": f"b{k % 3} beta"}
    for k in range(60)
]
EDGES = [
    {
        "from_id": f"d{k:03d}",
        "to_id": f"d{(k * 7 + 1) % 60:03d}",
        "etype": "contradict" if k % 5 == 0 else "cite",
        "weight": 0.5,
        "tenant_id": "c1",
    }
    for k in range(60)
]


@pytest.fixture(scope="module")
async def reader(app_dsn: str) -> AsyncIterator[Store]:
    async with await Store.connect(navigator_dsn(app_dsn), min_size=1, max_size=2) as store:
        yield store


async def test_a_refreshed_graph_carries_an_updated_term_index_and_a_warm_epr(
    declare: Declare,
    new_tenant: Callable[[], Awaitable[uuid.UUID]],
    reader: Store,
    owner_store: Store,
) -> None:
    arena = await declare(adaptive=False)
    tenant = await new_tenant()
    await arena.write(tenant, DOCS, EDGES)
    async with reader.tenant(tenant, read_only=True) as tx:
        _, rows = await tx.load_graph_rows(arena.corpus, Scope())
    assert rows is not None
    before = rows.to_graph()
    term_index(before)
    cold_before = epr(before)
    await arena.write(
        tenant,
        [
            {"id": "d030x", "tenant_id": "c1", "title": "fresh gamma", "body": "beta"},
        ],
        [{"from_id": "d030x", "to_id": "d001", "etype": "cite", "weight": 0.9, "tenant_id": "c1"}],
    )
    table = f'axon_stores."{arena.corpus.documents.name}"'
    async with owner_store.tenant(tenant) as tx:
        await tx._open().execute(f"UPDATE {table} SET title = 'renamed delta' WHERE id = 'd007'")
    async with reader.tenant(tenant, read_only=True) as tx:
        step = await tx.refresh_graph(arena.corpus, rows, Scope())
        _, reloaded = await tx.load_graph_rows(arena.corpus, Scope())
    assert step is not None
    assert step.change is not None
    assert reloaded is not None
    after = step.to_graph(before)
    carried = after.memoised(TERMS_MEMO)
    assert isinstance(carried, TermIndex)
    full = reloaded.to_graph()
    assert after.ids == full.ids
    assert_same_index(carried, _build_term_index(full))
    assert carried.documents_with("fresh").tolist() == [after.index["d030x"]]
    assert carried.titles_with("delta").tolist() == [after.index["d007"]]
    warm, cold = epr(after), epr(full)
    assert float(np.abs(warm.epr - cold.epr).max()) <= 1e-9
    assert cold_before.iterations > 0
    # The cache sizes the refreshed graph from the changed documents' strings only: same estimate.
    entry = CachedGraph(before, rows.revision, graph_bytes(before) + rows_bytes(rows), rows)
    assert refreshed_graph_bytes(entry, after, step.change) == graph_bytes(after)
