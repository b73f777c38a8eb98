"""`create_app()`: the one place that reads settings and wires the audit service together: the
audit log opened in the lifespan, the consumer and the API built over it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from mnemo_auth import TokenVerifier
from mnemo_events import AuditRecorded
from mnemo_events.audit_checkpoints import ensure_checkpoint_topic
from mnemo_service import Composition
from mnemo_store.audit_log import AuditLog
from mnemo_telemetry.service import ServiceRuntime

from mnemo_audit.adapters import KafkaCheckpoints, WatchedAuditLog
from mnemo_audit.routes import audit_router
from mnemo_audit.settings import Settings
from mnemo_audit.subscribers import audit_handler
from mnemo_audit.use_cases import AppendAuditEvents, PublishCheckpoints

SERVICE = "audit"


def create_app(settings: Settings | None = None) -> ServiceRuntime:
    settings = settings or Settings()
    verifier = TokenVerifier(settings.token_keys())
    kit = Composition(SERVICE, settings)
    kit.http_app(title="mnemo audit", version="1")

    @asynccontextmanager
    async def lifespan(kit: Composition) -> AsyncIterator[None]:
        await kit.ensure_topics(settings.topic)
        await ensure_checkpoint_topic(settings.kafka, settings.checkpoint_topic)
        audit_log = AuditLog(await kit.pool(settings.database_url, max_size=settings.pool_size))
        checkpoints = PublishCheckpoints(
            audit_log, KafkaCheckpoints(kit.broker, settings.checkpoint_topic)
        )
        kit.consume(
            topic=settings.topic,
            group=settings.group,
            data_model=AuditRecorded,
            handler=audit_handler(
                AppendAuditEvents(WatchedAuditLog(audit_log, checkpoints.grew)),
                settings.producers,
            ),
            batch=True,
        )
        kit.background(
            "checkpoints",
            lambda stopping: checkpoints.run(stopping, settings.checkpoint_interval_seconds),
        )
        kit.include(audit_router(verifier, lambda: audit_log, settings.page_limit))
        yield

    return kit.runtime(lifespan)


__all__ = ["create_app"]
