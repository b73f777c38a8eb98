"""`create_app()`: the one place that reads settings and wires the audit service together."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence

import asyncpg
import structlog
from fastapi import FastAPI
from mnemo_auth import TokenVerifier
from mnemo_events import AuditRecorded
from mnemo_events.broker import create_broker
from mnemo_events.consumer import build_consumer
from mnemo_events.provisioning import ensure_topics
from mnemo_events.readiness import broker_reachable, partitions_ready
from mnemo_store.audit_log import AuditLog, NewAuditEvent
from mnemo_telemetry.asgi import HttpMetricsMiddleware, fastapi_telemetry
from mnemo_telemetry.metrics import AUDIT_CHAIN_REGRESSIONS, AUDIT_ROWS_APPENDED
from mnemo_telemetry.probes import probe_router
from mnemo_telemetry.service import ServiceRuntime
from mnemo_telemetry.sql import trace_queries
from mnemo_telemetry.tracing import configure_tracing_from

from mnemo_audit.routes import audit_router
from mnemo_audit.settings import Settings
from mnemo_audit.subscribers import audit_handler
from mnemo_audit.use_cases import AppendAuditEvents, AuditReader, ChainHeads

SERVICE = "audit"
log = structlog.get_logger("mnemo_audit")


class _Appender:
    """Forwards to the pool opened at start (the use case is built before anything connects)."""

    def __init__(self) -> None:
        self.log: AuditLog | None = None
        self._heads = ChainHeads()

    def _open(self) -> AuditLog:
        if self.log is None:
            raise ConnectionError("the audit log is not connected yet")
        return self.log

    async def tenant_exists(self, tenant: uuid.UUID) -> bool:
        return await self._open().tenant_exists(tenant)

    async def append(
        self, tenant: uuid.UUID, events: Sequence[NewAuditEvent]
    ) -> dict[uuid.UUID, int]:
        appended = await self._open().append(tenant, events)
        # Metrics are served without authentication: counts of every tenant together, never a
        # tenant id. Which tenant lost rows goes to the log only.
        AUDIT_ROWS_APPENDED.inc(len(appended))
        seen = self._heads.advance(tenant, list(appended.values()))
        if seen is not None:
            AUDIT_CHAIN_REGRESSIONS.inc()
            log.error(
                "audit chain lost rows at its end: run `mnemo audit verify` for the tenant",
                tenant=str(tenant),
                head_seen=seen,
                appended_from=min(appended.values()),
            )
        return appended


def create_app(settings: Settings | None = None) -> ServiceRuntime:
    settings = settings or Settings()
    tracing = configure_tracing_from(SERVICE, settings.tracing)
    broker = create_broker(settings.kafka, client_id=f"mnemo.{SERVICE}")
    stopping = asyncio.Event()
    holder = _Appender()
    _consumer, subscriber = build_consumer(
        broker,
        topic=settings.topic,
        group=settings.group,
        data_model=AuditRecorded,
        handler=audit_handler(AppendAuditEvents(holder), settings.producers),
        settings=settings.kafka,
        stopping=stopping,
        transient=(
            OSError,
            ConnectionError,
            asyncpg.PostgresConnectionError,
            asyncpg.InterfaceError,
        ),
        batch=True,
    )

    def reader() -> AuditReader | None:
        return holder.log

    async def database() -> str | None:
        if holder.log is None:
            return "not connected to Postgres yet"
        await holder.log.ping()
        return None

    checks = {
        "database": database,
        "kafka": broker_reachable(broker),
        "partitions": partitions_ready([subscriber]),
    }
    verifier = TokenVerifier(settings.token_keys())
    http = FastAPI(title="mnemo audit", version="1", telemetry=fastapi_telemetry(tracing))
    http.add_middleware(HttpMetricsMiddleware, service=SERVICE)
    http.include_router(probe_router(SERVICE, checks, stopping))
    http.include_router(audit_router(verifier, reader, settings.page_limit))

    async def start() -> None:
        await ensure_topics(settings.kafka, [settings.topic])
        holder.log = AuditLog(
            await asyncpg.create_pool(
                settings.database_url, min_size=1, max_size=settings.pool_size, init=trace_queries
            )
        )
        await broker.start()

    async def stop() -> None:
        await broker.stop()
        if holder.log is not None:
            await holder.log.close()
        tracing.shutdown()

    return ServiceRuntime(
        name=SERVICE,
        host=settings.host,
        port=settings.port,
        start=start,
        stop=stop,
        stopping=stopping,
        checks=checks,
        app=http,
    )


__all__ = ["create_app"]
