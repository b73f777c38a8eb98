"""`create_app()`: reads the settings and returns the service runtime (probes on port 8081,
SIGTERM handling); its lifespan opens the pools, builds the adapters and the ingest and forget use
cases, subscribes the persist and forget consumers and runs the outbox relay and the pending-edge
sweep."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta

import structlog
from mnemo_events import TOPICS, PersistRow
from mnemo_events.models import ForgetRow
from mnemo_service import Background, Composition
from mnemo_store import Store
from mnemo_telemetry.service import ServiceRuntime

from mnemo_ingest.adapters import KafkaDeadLetters, PostgresDirectory, PostgresIngestStore
from mnemo_ingest.settings import Settings
from mnemo_ingest.subscribers import forget_handler, persist_handler
from mnemo_ingest.use_cases import Forget, Ingest

SERVICE = "ingest"
log = structlog.get_logger("mnemo_ingest")

INBOX_CONSUMER = "mnemo.ingest"
"""The inbox name: one per service, so every consumer group of ingest deduplicates together."""


def create_app(settings: Settings | None = None) -> ServiceRuntime:
    settings = settings or Settings()
    kit = Composition(SERVICE, settings, client_id=settings.group)
    written = (*TOPICS, settings.persisted_topic, settings.audit_topic)

    @asynccontextmanager
    async def lifespan(kit: Composition) -> AsyncIterator[None]:
        await kit.ensure_topics(*written, settings.topic, settings.forget_topic)
        pool = await kit.pool(settings.database_url, min_size=2, max_size=settings.pool_size)
        store = PostgresIngestStore(Store(pool))
        directory = PostgresDirectory(pool)
        ingest = Ingest(
            store,
            directory,
            KafkaDeadLetters(kit.broker, settings.group, settings.topic),
            consumer=INBOX_CONSUMER,
            persisted_topic=settings.persisted_topic,
            audit_topic=settings.audit_topic,
        )
        kit.consume(
            topic=settings.topic,
            group=settings.group,
            data_model=PersistRow,
            handler=persist_handler(ingest),
            batch=True,
            watch_outages=True,
        )
        kit.consume(
            topic=settings.forget_topic,
            group=f"{settings.group}.forget",
            data_model=ForgetRow,
            handler=forget_handler(
                Forget(store, directory, consumer=INBOX_CONSUMER, audit_topic=settings.audit_topic)
            ),
            batch=True,
            watch_outages=True,
        )
        await kit.relay(settings, written)
        kit.background(
            "sweep",
            _sweep(
                ingest,
                timedelta(seconds=settings.pending_hold_seconds),
                settings.pending_sweep_seconds,
            ),
        )
        yield

    return kit.runtime(lifespan)


def _sweep(ingest: Ingest, hold: timedelta, every: float) -> Background:
    """Dead-letter the edges parked longer than `hold`, every `every` seconds."""

    async def sweep(stopping: asyncio.Event) -> None:
        while not stopping.is_set():
            try:
                expired = await ingest.sweep_expired(hold)
                if expired:
                    log.info("pending_edges_dead_lettered", count=expired)
            except Exception as error:
                log.warning("sweep_failed", error=repr(error))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), every)

    return sweep
