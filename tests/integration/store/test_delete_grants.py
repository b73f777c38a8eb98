"""Least privilege for forgetting (migration 0013): ingest alone may delete store rows and
navigation outcomes, a store applied after the migration included (the owner's default
privileges); the navigator, the classifier and the legacy application role may not. Ingest's
delete reaches its own tenant's rows only."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg
import pytest
from mnemo_store import Store
from mnemo_store.identifiers import store_table

from tests.integration.store.conftest import Declared
from tests.integration.store.test_column_grants import role_dsn


@pytest.mark.parametrize(
    ("role", "allowed"),
    [
        ("mnemo_ingest", True),
        ("mnemo_navigator", False),
        ("mnemo_classifier", False),
        ("mnemo_app", False),
    ],
)
async def test_only_ingest_may_delete_store_rows_and_outcomes(
    declare: Any, owner_dsn: str, role: str, allowed: bool
) -> None:
    declared: Declared = await declare()  # applied now: the default privileges hold
    connection = await asyncpg.connect(role_dsn(owner_dsn, role))
    try:
        for table in (
            store_table(declared.corpus.documents.name),
            store_table(declared.corpus.relations.name),
            "mnemo.nav_outcomes",
        ):
            statement = f"DELETE FROM {table} WHERE false"
            if allowed:
                await connection.execute(statement)
            else:
                with pytest.raises(asyncpg.InsufficientPrivilegeError):
                    await connection.execute(statement)
    finally:
        await connection.close()


async def test_ingests_delete_reaches_its_own_tenants_rows_only(
    declare: Any, new_tenant: Any, store: Store, owner_dsn: str
) -> None:
    declared: Declared = await declare()
    mine, theirs = await new_tenant(), await new_tenant()
    shared_id = uuid.uuid4()
    for tenant in (mine, theirs):
        async with store.tenant(tenant) as tx:
            await tx.insert_rows(
                declared.corpus.documents,
                [{"id": shared_id, "tenant_id": tenant, "title": "t", "body": None}],
            )
    ingest = Store(
        await asyncpg.create_pool(role_dsn(owner_dsn, "mnemo_ingest"), min_size=1, max_size=1)
    )
    try:
        table = store_table(declared.corpus.documents.name)
        async with ingest.tenant(mine) as tx:
            assert await tx._open().execute(f"DELETE FROM {table}") == "DELETE 1"
        async with ingest.tenant(theirs) as tx:
            count = await tx._open().fetchval(f"SELECT count(*) FROM {table}")
        assert count == 1
    finally:
        await ingest.close()
