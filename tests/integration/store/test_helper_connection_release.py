"""A graph load's second connection, taken from the pool only when one is free at once, goes back
to the pool however long its reset takes: a slow reset (a busy database) is no error of the load.
It was released under the 50 ms acquire timeout, so under load the reset timed out, the navigator
answered 503 "database unavailable: TimeoutError" and the connection was terminated."""

from __future__ import annotations

import asyncio
import uuid

import asyncpg
import pytest
from mnemo_store import Store

from tests.integration.store.conftest import Declare, NewTenant

pytestmark = pytest.mark.timeout(60)


async def test_a_slow_reset_of_the_second_connection_does_not_fail_the_load(
    declare: Declare, new_tenant: NewTenant, owner_dsn: str, app_dsn: str
) -> None:
    declared = await declare()
    tenant = await new_tenant()
    sub = str(uuid.uuid4())
    ids = [str(uuid.uuid4()) for _ in range(3)]
    async with await Store.connect(owner_dsn, max_size=1) as owner, owner.tenant(tenant) as tx:
        await tx.insert_rows(
            declared.corpus.documents,
            [
                {"id": i, "tenant_id": sub, "title": f"t{n}", "body": None}
                for n, i in enumerate(ids)
            ],
        )
        await tx.insert_rows(
            declared.corpus.relations,
            [
                {
                    "from_id": ids[0],
                    "to_id": ids[1],
                    "etype": "cite",
                    "weight": 0.5,
                    "tenant_id": sub,
                }
            ],
        )

    async def slow_reset(connection: asyncpg.Connection) -> None:
        await asyncio.sleep(0.2)  # injected fault: a slow reset round trip on a busy database

    pool = await asyncpg.create_pool(app_dsn, min_size=1, max_size=4, reset=slow_reset)
    async with Store(pool) as store:
        for _ in range(3):
            async with store.tenant(tenant, read_only=True) as tx:
                graph = await tx.load_graph(declared.corpus)
            assert (len(graph.ids), graph.n_edges) == (3, 1)
        assert pool.get_size() <= 4
