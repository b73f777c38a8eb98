"""A pooled connection goes back without asyncpg's reset round trip (`mnemo_store.pools`), and that
is safe: every kind of transaction the store opens leaves the session as a new one's, and tenants
taking turns on one reused connection each see only their own rows."""

from __future__ import annotations

import uuid

import asyncpg
import pytest
from mnemo_store import Store
from mnemo_store.identifiers import store_table
from mnemo_store.pools import open_pool

from tests.integration.store.conftest import Declare, Declared, NewTenant

pytestmark = pytest.mark.timeout(60)

SESSION_STATE = """
SELECT coalesce(current_setting('mnemo.tenant', true), '') AS tenant,
       (SELECT count(*) FROM pg_locks
         WHERE pid = pg_backend_pid() AND locktype = 'advisory') AS advisory_locks,
       (SELECT count(*) FROM pg_cursors WHERE is_holdable) AS cursors,
       (SELECT count(*) FROM pg_listening_channels()) AS channels,
       current_setting('lock_timeout') AS lock_timeout,
       current_setting('transaction_read_only') AS read_only
"""
NEW_SESSION = {
    "tenant": "",
    "advisory_locks": 0,
    "cursors": 0,
    "channels": 0,
    "lock_timeout": "0",
    "read_only": "off",
}


async def documents(store: Store, tenant: uuid.UUID, declared: Declared) -> set[str]:
    async with store.tenant(tenant, read_only=True) as tx:
        graph = await tx.load_graph(declared.corpus)
    return {str(i) for i in graph.ids}


async def seed(owner_dsn: str, tenant: uuid.UUID, declared: Declared, count: int) -> set[str]:
    ids = {str(uuid.uuid4()) for _ in range(count)}
    async with await Store.connect(owner_dsn, max_size=1) as owner, owner.tenant(tenant) as tx:
        await tx.insert_rows(
            declared.corpus.documents,
            [{"id": i, "tenant_id": str(tenant), "title": f"t{i}", "body": None} for i in ids],
        )
    return ids


async def test_a_released_connection_costs_no_reset_statement(app_dsn: str) -> None:
    statements: list[str] = []

    def log(record: asyncpg.connection.LoggedQuery) -> None:
        statements.append(record.query)

    pool = await open_pool(app_dsn, max_size=1)
    try:
        async with pool.acquire() as connection:
            connection.add_query_logger(log)
            await connection.fetchval("SELECT 1")
        async with pool.acquire() as connection:
            connection.remove_query_logger(log)
    finally:
        await pool.close()
    # asyncpg's default reset runs `SELECT pg_advisory_unlock_all(); CLOSE ALL; …` here.
    assert statements == ["SELECT 1"]


async def test_every_kind_of_transaction_leaves_the_session_as_new(
    declare: Declare, new_tenant: NewTenant, app_dsn: str
) -> None:
    declared = await declare()
    tenant = await new_tenant()
    pool = await open_pool(app_dsn, max_size=1)

    async def session() -> dict[str, object]:
        async with pool.acquire() as connection:
            assert not connection.is_in_transaction()
            return dict(await connection.fetchrow(SESSION_STATE))

    try:
        async with Store(pool) as store:
            assert await session() == NEW_SESSION
            await documents(store, tenant, declared)  # read only, repeatable read
            assert await session() == NEW_SESSION
            async with store.tenant(tenant) as tx:  # a write: holds the tenant against erasure
                await tx.serialise_memory(declared.corpus.name, "scope")  # an advisory lock
            assert await session() == NEW_SESSION
            with pytest.raises(RuntimeError):
                async with store.tenant(tenant) as tx:
                    await tx.serialise_memory(declared.corpus.name, "scope")
                    raise RuntimeError("the caller failed mid-transaction")
            assert await session() == NEW_SESSION
            async with pool.acquire() as connection:  # a transaction left open by hand
                await connection.execute(
                    "BEGIN; SET LOCAL lock_timeout = 5;"
                    f" SELECT set_config('mnemo.tenant', '{tenant}', true)"
                )
            assert await session() == NEW_SESSION
    finally:
        await pool.close()


async def test_tenants_taking_turns_on_one_connection_see_only_their_own_rows(
    declare: Declare, new_tenant: NewTenant, owner_dsn: str, app_dsn: str
) -> None:
    declared = await declare()
    first, second = await new_tenant(), await new_tenant()
    own = {
        first: await seed(owner_dsn, first, declared, 3),
        second: await seed(owner_dsn, second, declared, 2),
    }
    pool = await open_pool(app_dsn, max_size=1)
    try:
        async with Store(pool) as store:
            for turn in range(6):
                tenant = (first, second)[turn % 2]
                assert await documents(store, tenant, declared) == own[tenant]
                with pytest.raises(RuntimeError):
                    async with store.tenant(tenant, read_only=True) as tx:
                        await tx.load_graph(declared.corpus)
                        raise RuntimeError("the caller failed inside the tenant's transaction")
            async with pool.acquire() as connection:  # no tenant: row-level security shows nothing
                table = store_table(declared.documents)
                assert await connection.fetchval(f"SELECT count(*) FROM {table}") == 0
    finally:
        await pool.close()
