"""`create_app()`: reads the settings, builds the broker, pools, consumer and relay, and returns
the service runtime (probes on port 8081, SIGTERM handling)."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Awaitable
from datetime import timedelta

import asyncpg
import structlog
from faststream.kafka import KafkaBroker
from mnemo_events import PERSIST, TOPICS, PersistRow, new_envelope
from mnemo_events.broker import create_broker
from mnemo_events.consumer import build_consumer
from mnemo_events.dead_letters import DeadLetter, Delivery, publish_dead_letter
from mnemo_events.provisioning import ensure_topics
from mnemo_events.readiness import broker_reachable, consumer_healthy, partitions_ready
from mnemo_events.tracing import context_from_headers, outgoing_headers
from mnemo_store import OutboxMessage, OutboxRelay, Store
from mnemo_store.ingest_writes import PendingEdge
from mnemo_telemetry.service import ServiceRuntime
from mnemo_telemetry.sql import trace_queries
from mnemo_telemetry.tracing import configure_tracing_from, producer_span
from opentelemetry import context as otel_context

from mnemo_ingest.directory import PostgresDirectory
from mnemo_ingest.settings import IngestSettings
from mnemo_ingest.subscribers import persist_handler
from mnemo_ingest.use_cases import PRODUCER, Ingest

log = structlog.get_logger("mnemo_ingest")

INBOX_CONSUMER = "mnemo.ingest"
"""The inbox name: one per service, so every consumer group of ingest deduplicates together."""

TRANSIENT = (
    # A missing grant is a deployment fault, not a poison message: retried until fixed.
    asyncpg.InsufficientPrivilegeError,
    OSError,
    ConnectionError,
    asyncpg.PostgresConnectionError,
    asyncpg.InterfaceError,
    asyncpg.CannotConnectNowError,
    # The server shutting down or restarting (AdminShutdownError and its kin): an outage too.
    asyncpg.OperatorInterventionError,
    asyncpg.DeadlockDetectedError,
    asyncpg.SerializationError,
)


class KafkaPublisher:
    """The relay's publisher port over the service's broker: a batch is sent in order and its
    acknowledgements awaited together (`PipelinedPublisher`)."""

    def __init__(self, broker: KafkaBroker) -> None:
        self._broker = broker

    async def publish(self, message: OutboxMessage) -> None:
        await (await self.enqueue(message))

    async def enqueue(self, message: OutboxMessage) -> Awaitable[object]:
        # The record continues the trace of the transaction that wrote it (its stored headers).
        stored = dict(message.headers)
        parent = context_from_headers([(k, v.encode()) for k, v in stored.items()])
        token = otel_context.attach(parent)
        try:
            with producer_span(message.topic):
                headers = outgoing_headers(stored)
                return await self._broker.publish(
                    message.payload.encode(),
                    topic=message.topic,
                    key=message.key,
                    headers=headers,
                    no_confirm=True,
                )
        finally:
            otel_context.detach(token)


class KafkaDeadLetters:
    """Parked edges that can never be applied go to `mnemo.persist.v1.dlt` as a persist envelope
    rebuilt from what was parked (same event id), with the reason."""

    def __init__(self, broker: KafkaBroker, group: str, topic: str) -> None:
        self._broker = broker
        self._group = group
        self._topic = topic

    async def dead_letter_edge(self, tenant: uuid.UUID, edge: PendingEdge, reason: str) -> None:
        envelope = new_envelope(
            PersistRow(store=edge.store, values=edge.values),
            tenant=tenant,
            producer=PRODUCER,
            event_type=PERSIST,
            event_id=edge.event_id,
        )
        delivery = Delivery(
            topic=self._topic,
            partition=-1,
            offset=-1,
            key=str(tenant).encode(),
            value=envelope.model_dump_json().encode(),
            headers=(("mnemo-pending-since", edge.received_at.isoformat().encode()),),
        )
        await publish_dead_letter(self._broker, DeadLetter(delivery, reason, 1), self._group)


def create_app(settings: IngestSettings | None = None) -> ServiceRuntime:
    settings = settings or IngestSettings()
    tracing = configure_tracing_from("ingest", settings.tracing)
    broker = create_broker(settings.kafka, client_id=settings.group)
    stopping = asyncio.Event()
    state: dict[str, object] = {}
    tasks: list[asyncio.Task[None]] = []

    async def handle(items):  # type: ignore[no-untyped-def]  # delegates to the wired handler
        return await state["handler"](items)  # type: ignore[operator]

    consumer, subscriber = build_consumer(
        broker,
        topic=settings.topic,
        group=settings.group,
        data_model=PersistRow,
        handler=handle,
        settings=settings.kafka,
        stopping=stopping,
        transient=TRANSIENT,
        batch=True,
    )

    async def start() -> None:
        await ensure_topics(
            settings.kafka,
            (*TOPICS, settings.topic, settings.persisted_topic, settings.audit_topic),
        )
        pool = await asyncpg.create_pool(
            settings.database_url, min_size=2, max_size=settings.pool_size, init=trace_queries
        )
        relay_pool = await asyncpg.create_pool(
            settings.relay_database_url, min_size=1, max_size=2, init=trace_queries
        )
        state["pool"], state["relay_pool"] = pool, relay_pool
        directory = PostgresDirectory(pool)
        ingest = Ingest(
            Store(pool),
            directory,
            KafkaDeadLetters(broker, settings.group, settings.topic),
            consumer=INBOX_CONSUMER,
            persisted_topic=settings.persisted_topic,
            audit_topic=settings.audit_topic,
        )
        state["handler"] = persist_handler(ingest)
        await broker.start()
        relay = OutboxRelay(
            relay_pool,
            KafkaPublisher(broker),
            batch_size=settings.relay_batch_size,
            topics=(*TOPICS, settings.persisted_topic, settings.audit_topic),
        )
        tasks.append(asyncio.create_task(_forever("relay", relay.run, stopping)))
        tasks.append(
            asyncio.create_task(
                _sweep(
                    ingest,
                    timedelta(seconds=settings.pending_hold_seconds),
                    settings.pending_sweep_seconds,
                    stopping,
                )
            )
        )

    async def stop() -> None:
        stopping.set()
        # The relay and the sweep finish their round first (they publish through the broker's
        # producer); then the broker stops, waiting for the batch in hand, which commits.
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(task, 3)
        await broker.stop()
        for name in ("pool", "relay_pool"):
            pool = state.get(name)
            if isinstance(pool, asyncpg.Pool):
                await pool.close()
        tracing.shutdown()

    async def database() -> str | None:
        pool = state.get("pool")
        if not isinstance(pool, asyncpg.Pool):
            return "not connected yet"
        await pool.fetchval("SELECT 1")
        return None

    return ServiceRuntime(
        name="ingest",
        host=settings.host,
        port=settings.port,
        start=start,
        stop=stop,
        stopping=stopping,
        checks={
            "database": database,
            "kafka": broker_reachable(broker),
            "partitions": partitions_ready([subscriber]),
            "consumer": consumer_healthy([consumer]),
        },
    )


async def _forever(name: str, run, stopping: asyncio.Event) -> None:  # type: ignore[no-untyped-def]
    """Run `run(stopping)` again after any failure (the relay resumes where it stopped)."""
    while not stopping.is_set():
        try:
            await run(stopping)
        except Exception as error:
            log.warning(f"{name}_failed", error=repr(error))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), 1.0)


async def _sweep(ingest: Ingest, hold: timedelta, every: float, stopping: asyncio.Event) -> None:
    while not stopping.is_set():
        try:
            expired = await ingest.sweep_expired(hold)
            if expired:
                log.info("pending_edges_dead_lettered", count=expired)
        except Exception as error:
            log.warning("sweep_failed", error=repr(error))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stopping.wait(), every)
