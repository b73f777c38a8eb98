"""A TRUNCATE empties a store for every tenant at once, whatever tenant is set, and row-level
security does not filter it: the revision of every tenant of every corpus reading the store moves
(and is recorded as a reset), so no navigator cache serves a row that is gone. A tenant's own delete
resets that tenant only (migration 0013), and so does forgetting a document: the next navigation is
without it."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import asyncpg
import pytest
from mnemo_ingest.adapters import PostgresDirectory, PostgresIngestStore
from mnemo_ingest.use_cases import Forget, ForgetCommand
from mnemo_store import Scope, Store
from mnemo_store.identifiers import store_table

from tests.integration.ingest.test_ports_contract import ingest_dsn
from tests.integration.navigator.conftest import Declare, NewTenant, Service, navigator_dsn


@pytest.fixture(scope="module")
async def reader(app_dsn: str) -> AsyncIterator[Store]:
    async with await Store.connect(navigator_dsn(app_dsn), min_size=1, max_size=2) as store:
        yield store


async def hit_ids(service: Service, corpus: str, tenant: uuid.UUID) -> list[str]:
    response = await service.client.post(
        f"/v1/corpora/{corpus}/navigate",
        json={"query": "alpha", "budget": 5},
        headers=service.token(tenant),
    )
    assert response.status_code == 200, response.text
    return sorted(hit["id"] for hit in response.json()["hits"])


async def revisions(
    owner: asyncpg.Connection, tenant: uuid.UUID, corpus: str
) -> tuple[int, int] | None:
    async with owner.transaction():
        await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
        row = await owner.fetchrow(
            "SELECT revision, reset_revision FROM mnemo.graph_revisions WHERE corpus_id = $1",
            corpus,
        )
    return None if row is None else (row["revision"], row["reset_revision"])


async def test_no_navigator_cache_serves_rows_a_truncate_removed_for_any_tenant(
    declare: Declare,
    new_tenant: NewTenant,
    service: Service,
    owner_connection: asyncpg.Connection,
) -> None:
    arena = await declare(adaptive=False)
    first, second = await new_tenant(), await new_tenant()
    await arena.write(first, [{"id": "f1", "tenant_id": "c1", "title": "alpha one", "body": None}])
    await arena.write(second, [{"id": "s1", "tenant_id": "c1", "title": "alpha two", "body": None}])
    assert await hit_ids(service, arena.name, first) == ["f1"]
    assert await hit_ids(service, arena.name, second) == ["s1"]
    before = await revisions(owner_connection, second, arena.name)
    assert before is not None
    # The owner truncates with the first tenant set: the second tenant's rows go too.
    table = store_table(arena.corpus.documents.name)
    async with owner_connection.transaction():
        await owner_connection.execute("SELECT set_config('mnemo.tenant', $1, true)", str(first))
        await owner_connection.execute(f"TRUNCATE {table}")
    after = await revisions(owner_connection, second, arena.name)
    assert after is not None
    assert after[0] > before[0]
    assert after[1] == after[0]
    assert await hit_ids(service, arena.name, first) == []
    assert await hit_ids(service, arena.name, second) == []
    # The sweep the truncate used does not outlive it: the owner sees one tenant again.
    setting = await owner_connection.fetchval(
        "SELECT coalesce(current_setting('mnemo.revision_sweep', true), '')"
    )
    assert setting == ""


async def test_a_truncate_with_no_tenant_set_still_forces_every_cached_graph_to_reload(
    declare: Declare,
    new_tenant: NewTenant,
    reader: Store,
    owner_connection: asyncpg.Connection,
) -> None:
    arena = await declare(adaptive=False)
    tenants = [await new_tenant(), await new_tenant()]
    for k, tenant in enumerate(tenants):
        await arena.write(
            tenant,
            [{"id": f"d{k}", "tenant_id": "c1", "title": "alpha", "body": None}],
            [{"from_id": f"d{k}", "to_id": "x", "etype": "cite", "weight": 1.0, "tenant_id": "c1"}],
        )
    cached = {}
    for tenant in tenants:
        async with reader.tenant(tenant, read_only=True) as tx:
            _, rows = await tx.load_graph_rows(arena.corpus, Scope())
        assert rows is not None
        cached[tenant] = rows
    # Only the edges go: the documents' markers show nothing, the reset must.
    await owner_connection.execute(f"TRUNCATE {store_table(arena.corpus.relations.name)}")
    for tenant in tenants:
        async with reader.tenant(tenant, read_only=True) as tx:
            assert await tx.refresh_graph(arena.corpus, cached[tenant], Scope()) is None
            _, reloaded = await tx.load_graph_rows(arena.corpus, Scope())
        assert reloaded is not None
        assert reloaded.edges_read == 0
        assert reloaded.revision > cached[tenant].revision


async def test_a_tenants_own_delete_resets_that_tenant_only(
    declare: Declare,
    new_tenant: NewTenant,
    reader: Store,
    owner_store: Store,
    owner_connection: asyncpg.Connection,
) -> None:
    arena = await declare(adaptive=False)
    deleting, other = await new_tenant(), await new_tenant()
    for tenant in (deleting, other):
        await arena.write(tenant, [{"id": "d", "tenant_id": "c1", "title": "alpha", "body": None}])
    untouched = await revisions(owner_connection, other, arena.name)
    table = store_table(arena.corpus.documents.name)
    async with owner_store.tenant(deleting) as tx:
        await tx._open().execute(f"DELETE FROM {table} WHERE id = 'nothing'")
    quiet = await revisions(owner_connection, deleting, arena.name)
    assert quiet is not None
    assert quiet[1] < quiet[0]  # bumped (a write), but nothing was deleted: no reset
    async with owner_store.tenant(deleting) as tx:
        await tx._open().execute(f"DELETE FROM {table} WHERE id = 'd'")
    moved = await revisions(owner_connection, deleting, arena.name)
    assert moved is not None
    assert moved[1] == moved[0] > quiet[0]
    assert await revisions(owner_connection, other, arena.name) == untouched


async def test_after_a_forget_the_next_navigation_is_without_the_document_and_its_edges(
    declare: Declare,
    new_tenant: NewTenant,
    service: Service,
    owner_dsn: str,
) -> None:
    arena = await declare(adaptive=False)
    tenant = await new_tenant()
    await arena.write(
        tenant,
        [
            {"id": "keep", "tenant_id": "c1", "title": "alpha kept", "body": None},
            {"id": "gone", "tenant_id": "c1", "title": "alpha forgotten", "body": None},
        ],
        [{"from_id": "keep", "to_id": "gone", "etype": "cite", "weight": 1.0, "tenant_id": "c1"}],
    )
    assert await hit_ids(service, arena.name, tenant) == ["gone", "keep"]  # now cached
    pool = await asyncpg.create_pool(ingest_dsn(owner_dsn), min_size=1, max_size=2)
    try:
        forget = Forget(PostgresIngestStore(Store(pool)), PostgresDirectory(pool), consumer="t")
        command = ForgetCommand(
            ref=None,
            event_id=uuid.uuid4(),
            tenant=tenant,
            store=arena.corpus.documents.name,
            document_id="gone",
            producer="tester",
        )
        done, refused = await forget.forget([command])
    finally:
        await pool.close()
    assert refused == []
    assert [(f.document_id, f.edges) for f in done] == [("gone", 1)]
    assert await hit_ids(service, arena.name, tenant) == ["keep"]


async def test_a_delete_with_no_tenant_set_moves_and_resets_every_tenant_it_removed_rows_of(
    declare: Declare,
    new_tenant: NewTenant,
    owner_connection: asyncpg.Connection,
) -> None:
    arena = await declare(adaptive=False)
    first, second, untouched = await new_tenant(), await new_tenant(), await new_tenant()
    for tenant in (first, second, untouched):
        doc_id = "other" if tenant == untouched else "shared"
        await arena.write(tenant, [{"id": doc_id, "tenant_id": "c1", "title": "a", "body": None}])
    before = {
        t: await revisions(owner_connection, t, arena.name) for t in (first, second, untouched)
    }
    table = store_table(arena.corpus.documents.name)
    # The owner stops forcing the policy on this store (a role bypassing row-level security
    # behaves the same): with no tenant set, its delete reaches every tenant's rows.
    await owner_connection.execute(f"ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY")
    try:
        status = await owner_connection.execute(f"DELETE FROM {table} WHERE id = 'shared'")
    finally:
        await owner_connection.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
    assert status == "DELETE 2"
    for tenant in (first, second):
        was, now = before[tenant], await revisions(owner_connection, tenant, arena.name)
        assert was is not None
        assert now is not None
        assert now[0] == was[0] + 1
        assert now[1] == now[0]
    assert await revisions(owner_connection, untouched, arena.name) == before[untouched]
