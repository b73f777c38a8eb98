"""A navigate request handled twice under one request id (Kafka redelivers after a crash between
the work and the offset commit) is answered both times but remembered once: one outcome, one
reinforcement, one audit event, against real Postgres as the navigator's role."""

from __future__ import annotations

import asyncio
import uuid

import asyncpg
from mnemo_auth import Principal
from mnemo_navigator.adapters import PostgresCatalogue, PostgresTransactions
from mnemo_navigator.app import build_navigator
from mnemo_navigator.settings import Settings
from mnemo_navigator.subscribers import CONSUMER
from mnemo_navigator.use_cases import Caller, Claim, NavigateRequest
from mnemo_store import Store

from tests.integration.navigator.conftest import Declare, NewTenant, navigator_dsn
from tests.integration.navigator.test_memory_and_cache import DOCS, EDGES


async def counts(owner: asyncpg.Connection, tenant: uuid.UUID, corpus: str) -> tuple[int, int]:
    async with owner.transaction():
        await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
        outcomes = await owner.fetchval(
            "SELECT count(*) FROM mnemo.nav_outcomes WHERE corpus_id = $1", corpus
        )
        audits = await owner.fetchval(
            "SELECT count(*) FROM mnemo.outbox WHERE topic = 'mnemo.audit.v1'"
        )
    return int(outcomes), int(audits)


async def test_a_redelivered_request_is_answered_again_but_remembered_once(
    declare: Declare, new_tenant: NewTenant, app_dsn: str, owner_connection: asyncpg.Connection
) -> None:
    arena = await declare(adaptive=True)
    tenant = await new_tenant()
    await arena.write(tenant, DOCS, EDGES)
    settings = Settings(database_url=navigator_dsn(app_dsn), consume_requests=False)
    pool = await asyncpg.create_pool(
        settings.database_url.get_secret_value(), max_size=settings.pool_size
    )
    try:
        navigator = build_navigator(
            settings, PostgresTransactions(Store(pool)), PostgresCatalogue(pool), {}
        )
        caller = Caller(Principal(tenant=tenant, subject="kafka:test", scopes=frozenset({"read"})))
        request = NavigateRequest(query="alpha beta gamma", seed="a", budget=2)
        claim = Claim(CONSUMER, uuid.uuid4())
        first = await navigator.navigate(caller, arena.name, request, claim=claim)
        again = await navigator.navigate(caller, arena.name, request, claim=claim)
        assert first.remembered
        assert not again.remembered
        assert again.navigation.path == first.navigation.path
        assert await counts(owner_connection, tenant, arena.name) == (1, 1)
        # Two deliveries at once: one of them remembers, the other waits for it and does not.
        racing = Claim(CONSUMER, uuid.uuid4())
        both = await asyncio.gather(
            *(navigator.navigate(caller, arena.name, request, claim=racing) for _ in range(2))
        )
        assert sorted(r.remembered for r in both) == [False, True]
        assert await counts(owner_connection, tenant, arena.name) == (2, 2)
    finally:
        await pool.close()
