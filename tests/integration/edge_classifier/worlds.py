"""What the classifier's integration worlds share: dropping one (its stores, its corpus row and
its tenant with the rows the tenant's writes left behind)."""

from __future__ import annotations

import uuid

import asyncpg
from mnemo_axon.ir import Deployment
from mnemo_store.identifiers import store_table


async def drop_world(
    owner: asyncpg.Connection, deployment: Deployment, corpus: str, tenant: uuid.UUID
) -> None:
    """Drop `deployment`'s stores, `corpus`'s registry row and `tenant`, then close `owner`."""
    for store in deployment.stores:
        await owner.execute(f"DROP TABLE IF EXISTS {store_table(store.name)}")
    await owner.execute("DELETE FROM mnemo.corpora WHERE corpus_id = $1", corpus)
    async with owner.transaction():
        await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
        await owner.execute("DELETE FROM mnemo.graph_revisions")
    await owner.execute("DELETE FROM mnemo.tenants WHERE tenant_id = $1", tenant)
    await owner.close()
