"""`create_app()`: the only place that reads settings, builds the pool, the broker, the cache and
the HTTP app, and wires the adapters into the use cases. Nothing connects until `start`."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import asyncpg
from fastapi import FastAPI
from mnemo_auth import TokenVerifier
from mnemo_events.broker import create_broker
from mnemo_events.consumer import build_consumer, single
from mnemo_events.models import NavigateRequested
from mnemo_events.provisioning import ensure_topics
from mnemo_events.readiness import broker_reachable, partitions_ready
from mnemo_events.topics import TOPICS
from mnemo_store import LoadLimits, Store, TenantTransaction
from mnemo_store.graph_cache import GraphCache
from mnemo_telemetry.asgi import HttpMetricsMiddleware, fastapi_telemetry
from mnemo_telemetry.http_limits import BodyLimitMiddleware
from mnemo_telemetry.probes import ReadinessCheck, probe_router
from mnemo_telemetry.service import ServiceRuntime
from mnemo_telemetry.sql import trace_queries
from mnemo_telemetry.tracing import configure_tracing_from

from mnemo_navigator.routes import TokenFirstMiddleware, api_router, install_error_handlers
from mnemo_navigator.settings import Settings
from mnemo_navigator.subscribers import navigate_requested_handler
from mnemo_navigator.use_cases import CorpusEntry, Navigator, Policy

SERVICE = "navigator"
_UNAVAILABLE = (OSError, asyncpg.PostgresConnectionError, asyncpg.CannotConnectNowError)
_TENANT_EXISTS = "SELECT EXISTS (SELECT FROM mnemo.tenants WHERE tenant_id = $1)"


class Postgres:
    """The pool, opened by `start`; the store adapter and the registry reader over it."""

    def __init__(self, dsn: str, size: int) -> None:
        self._dsn = dsn
        self._size = size
        self._store: Store | None = None
        self._pool: asyncpg.Pool | None = None

    async def open(self) -> None:
        self._pool = await asyncpg.create_pool(
            self._dsn, min_size=1, max_size=self._size, command_timeout=60, init=trace_queries
        )
        self._store = Store(self._pool)

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.close()

    def _opened(self) -> tuple[asyncpg.Pool, Store]:
        if self._pool is None or self._store is None:
            raise ConnectionRefusedError("the navigator has not connected to Postgres yet")
        return self._pool, self._store

    @asynccontextmanager
    async def tenant(
        self, tenant_id: uuid.UUID, *, read_only: bool = False
    ) -> AsyncIterator[TenantTransaction]:
        _, store = self._opened()
        async with store.tenant(tenant_id, read_only=read_only) as tx:
            yield tx

    async def corpus(self, corpus_id: str) -> CorpusEntry | None:
        pool, _ = self._opened()
        row = await pool.fetchrow(
            "SELECT corpus_id, status, kind, definition::text AS definition"
            " FROM mnemo.corpora WHERE corpus_id = $1",
            corpus_id,
        )
        if row is None:
            return None
        definition: dict[str, Any] = json.loads(row["definition"])
        return CorpusEntry(row["corpus_id"], row["status"], row["kind"], definition)

    async def tenant_exists(self, tenant: uuid.UUID) -> bool:
        pool, _ = self._opened()
        return bool(await pool.fetchval(_TENANT_EXISTS, tenant))

    async def ready(self) -> str | None:
        pool, _ = self._opened()
        await pool.fetchval("SELECT 1")
        return None


def build_navigator(
    settings: Settings, database: Postgres, pinned_scopes: Mapping[str, str] | None = None
) -> Navigator:
    policy = Policy(
        pinned_scopes=dict(settings.pinned_scopes) if pinned_scopes is None else pinned_scopes,
        audit_query_text=settings.audit_query_text == "text",
        audit_topic=settings.audit_topic,
        default_budget=settings.default_budget,
        limits=LoadLimits(max_documents=settings.max_documents, max_edges=settings.max_edges),
        tenant_cache_seconds=settings.tenant_cache_seconds,
    )
    cache = GraphCache(
        settings.cache_max_bytes,
        tenant_share=settings.cache_tenant_share,
        scopes_per_corpus=settings.cache_scopes_per_corpus,
    )
    return Navigator(database, database, cache, policy)


def create_app(
    settings: Settings | None = None, *, pinned_scopes: Mapping[str, str] | None = None
) -> ServiceRuntime:
    """The navigator process. `pinned_scopes` replaces the settings' table with a live mapping
    (tests pin scopes of corpora they declare while the service runs)."""
    settings = settings or Settings()
    tracing = configure_tracing_from(SERVICE, settings.tracing)
    stopping = asyncio.Event()
    database = Postgres(settings.database_url, settings.pool_size)
    navigator = build_navigator(settings, database, pinned_scopes)
    verifier = TokenVerifier(settings.token_keys())
    checks: dict[str, ReadinessCheck] = {"database": database.ready}

    broker = None
    if settings.consume_requests:
        broker = create_broker(settings.kafka, client_id="mnemo.navigator")
        _, subscriber = build_consumer(
            broker,
            topic=settings.requests_topic,
            group=settings.group,
            data_model=NavigateRequested,
            handler=single(navigate_requested_handler(navigator, broker)),
            settings=settings.kafka,
            stopping=stopping,
            transient=_UNAVAILABLE,
        )
        checks["kafka"] = broker_reachable(broker)
        checks["partitions"] = partitions_ready([subscriber])

    app = FastAPI(
        title="Mnemo navigator",
        version="1",
        description="Navigate, retrieve and search living knowledge graphs (bearer JWT).",
        telemetry=fastapi_telemetry(tracing),
    )
    # Outermost last: metrics see every answer; the token is checked, then the body bounded,
    # before anything reads the body.
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_body_bytes)
    app.add_middleware(TokenFirstMiddleware, verifier=verifier)
    app.add_middleware(HttpMetricsMiddleware, service=SERVICE)
    app.include_router(probe_router(SERVICE, checks, stopping))
    app.include_router(api_router(navigator, verifier))
    app.state.navigator = navigator  # its graph cache, for tests that look inside
    install_error_handlers(app, _UNAVAILABLE)

    async def start() -> None:
        await database.open()
        if broker is not None:
            await ensure_topics(settings.kafka, sorted({*TOPICS, settings.requests_topic}))
            await broker.start()

    async def stop() -> None:
        if broker is not None:
            await broker.stop()
        await database.close()
        tracing.shutdown()

    return ServiceRuntime(
        name=SERVICE,
        host=settings.host,
        port=settings.port,
        start=start,
        stop=stop,
        checks=checks,
        stopping=stopping,
        app=app,
        http=settings.http,
    )
