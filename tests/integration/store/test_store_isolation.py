"""Tenant isolation: under concurrency, without a tenant, and against writes for another tenant."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import asyncpg
import pytest
from mnemo_store import EdgeDelta, Scope, Store, TenantTransactionClosedError
from mnemo_store.identifiers import store_table


def rows_for(
    tenant: uuid.UUID, count: int
) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    ids = [uuid.uuid4() for _ in range(count)]
    documents = [
        {"id": doc, "tenant_id": tenant, "title": f"note {k} of {tenant}", "body": "shared words"}
        for k, doc in enumerate(ids)
    ]
    edges = [
        {
            "from_id": ids[k],
            "to_id": ids[(k + 1) % count],
            "etype": "cite",
            "weight": 0.5,
            "tenant_id": tenant,
        }
        for k in range(count)
    ]
    return documents, edges


async def test_twenty_tenants_loading_and_writing_at_once_never_see_each_others_rows(
    store: Store, declare: Any, new_tenant: Any
) -> None:
    declared = await declare()
    corpus = declared.corpus
    tenants = [await new_tenant() for _ in range(20)]

    async def work(tenant: uuid.UUID) -> tuple[set[str], set[str], int]:
        documents, edges = rows_for(tenant, 30)
        async with store.tenant(tenant) as tx:
            await tx.insert_rows(corpus.documents, documents)
            await tx.insert_rows(corpus.relations, edges)
        async with store.tenant(tenant, read_only=True) as tx:
            graph = await tx.load_graph(corpus)
        deltas = [
            EdgeDelta(graph.ids[int(s)], graph.ids[int(t)], "cite", 0.125)
            for s, t in zip(graph.edge_source, graph.edge_target, strict=True)
        ]
        async with store.tenant(tenant) as tx:
            updated = await tx.reinforce(corpus, deltas)
        async with store.tenant(tenant) as tx:
            titles = {title.rsplit(" ", 1)[-1] for title in (await tx.load_graph(corpus)).titles}
        return set(graph.ids), titles, updated

    results = await asyncio.gather(*(work(tenant) for tenant in tenants))
    for tenant, (ids, titles, updated) in zip(tenants, results, strict=True):
        assert len(ids) == 30
        assert titles == {str(tenant)}, "a tenant saw a title written for another tenant"
        assert updated == 30, "a reinforcement touched a row it should not (or missed one)"
    all_ids = [doc for ids, _, _ in results for doc in ids]
    assert len(all_ids) == len(set(all_ids)) == 600


async def test_without_a_tenant_the_application_role_sees_no_rows(
    store: Store, declare: Any, new_tenant: Any, app_dsn: str
) -> None:
    declared = await declare()
    tenant = await new_tenant()
    documents, edges = rows_for(tenant, 5)
    async with store.tenant(tenant) as tx:
        await tx.insert_rows(declared.corpus.documents, documents)
        await tx.insert_rows(declared.corpus.relations, edges)
    app = await asyncpg.connect(app_dsn)
    try:
        for store_name in (declared.documents, declared.edges):
            assert await app.fetchval(f"SELECT count(*) FROM {store_table(store_name)}") == 0
            async with app.transaction():
                await app.execute("SELECT set_config('mnemo.tenant', '', true)")
                assert await app.fetchval(f"SELECT count(*) FROM {store_table(store_name)}") == 0
    finally:
        await app.close()


async def test_inserting_a_row_for_another_tenant_is_refused(
    store: Store, declare: Any, new_tenant: Any, app_dsn: str
) -> None:
    declared = await declare()
    mine, theirs = await new_tenant(), await new_tenant()
    app = await asyncpg.connect(app_dsn)
    try:
        with pytest.raises(asyncpg.InsufficientPrivilegeError, match="row-level security"):
            async with app.transaction():
                await app.execute("SELECT set_config('mnemo.tenant', $1, true)", str(mine))
                await app.execute(
                    f"INSERT INTO {store_table(declared.documents)} (axon_tenant, id, tenant_id,"
                    " title) VALUES ($1, $2, $1, 'x')",
                    theirs,
                    uuid.uuid4(),
                )
    finally:
        await app.close()
    async with store.tenant(theirs) as tx:
        assert (await tx.load_graph(declared.corpus)).n_documents == 0


async def test_a_tenant_transaction_cannot_be_used_after_its_block(
    store: Store, declare: Any, new_tenant: Any
) -> None:
    declared = await declare()
    async with store.tenant(await new_tenant()) as tx:
        pass
    with pytest.raises(TenantTransactionClosedError, match="has ended"):
        await tx.load_graph(declared.corpus, Scope())
    with pytest.raises(TypeError, match=r"uuid\.UUID"):
        async with store.tenant("not-a-uuid"):  # type: ignore[arg-type]  # the mistake under test
            pass
