"""One composition root shape for every service: a `Composition` holds what every service has
(tracing, the stop signal, the broker, the readiness checks, the HTTP app) and runs the service's
lifespan, the one place its resources are opened and its handlers built from them.

    @asynccontextmanager
    async def lifespan(kit: Composition) -> AsyncIterator[None]:
        await kit.ensure_topics(settings.topic)          # open
        pool = await kit.pool(settings.database_url, max_size=settings.pool_size)
        use_case = AppendAuditEvents(AuditLog(pool))     # adapters, then handlers from them
        kit.consume(topic=settings.topic, group=..., data_model=..., handler=...)
        yield                                            # serve
        ...                                              # close what the kit does not

    kit = Composition("audit", settings)
    return kit.runtime(lifespan)                         # a `ServiceRuntime`

On start the lifespan runs to its `yield`, then the broker starts, then the background tasks
(`background`, `relay`). On stop: `stopping` is set, the background tasks finish their round, the
broker stops (waiting for the batch in hand, which commits), the lifespan resumes after its
`yield`, the pools close and the spans are flushed. Until the lifespan has yielded, the HTTP app
answers its probes, and every other path with 503.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from typing import Any

import asyncpg
import structlog
from fastapi import APIRouter, FastAPI
from mnemo_events.broker import create_broker
from mnemo_events.consumer import BatchHandler, Consumer, assigned_partitions, build_consumer
from mnemo_events.provisioning import ensure_topics
from mnemo_events.readiness import broker_reachable, consumer_healthy, partitions_ready
from mnemo_store import OutboxRelay
from mnemo_store.pools import open_pool
from mnemo_telemetry import metrics
from mnemo_telemetry.asgi import HttpMetricsMiddleware, fastapi_telemetry
from mnemo_telemetry.probes import ReadinessCheck, probe_router
from mnemo_telemetry.service import ServiceRuntime
from mnemo_telemetry.sql import trace_queries
from mnemo_telemetry.tracing import configure_tracing_from
from pydantic import SecretStr
from starlette.types import ASGIApp, Receive, Scope, Send

from mnemo_service.relay import KafkaPublisher
from mnemo_service.settings import RelaySettings, ServiceSettings
from mnemo_service.transient import TRANSIENT

log = structlog.get_logger("mnemo_service")

Lifespan = Callable[["Composition"], AbstractAsyncContextManager[None]]
Background = Callable[[asyncio.Event], Awaitable[None]]

PROBE_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})
PARTITIONS_REPORT_SECONDS = 5.0
"""How often `mnemo_consumer_partitions_assigned` is refreshed."""
BACKGROUND_STOP_SECONDS = 3.0


class Composition:
    """What a service is built from; see the module docstring. `broker=False`: no Kafka at all."""

    def __init__(
        self,
        name: str,
        settings: ServiceSettings,
        *,
        broker: bool = True,
        client_id: str | None = None,
    ) -> None:
        self.name = name
        self.settings = settings
        self.tracing = configure_tracing_from(name, settings.tracing)
        self.stopping = asyncio.Event()
        self.broker: Any = (
            create_broker(settings.kafka, client_id=client_id or f"mnemo.{name}")
            if broker
            else None
        )
        self._pool: asyncpg.Pool | None = None
        self.checks: dict[str, ReadinessCheck] = {
            "started": self._start_finished,
            "database": self._database,
        }
        """Readiness: what the service needs to serve (the broker too for a consumer-only service;
        `http_app` moves it to the consumer checks of a service with an HTTP API)."""
        self.consumer_checks: dict[str, ReadinessCheck] = {}
        """Never readiness: `/readyz?consumers=true` only (partitions need not be assigned for a
        replica to serve)."""
        self._subscribers: list[Any] = []
        self._watched: list[Consumer[Any]] = []
        self.app: FastAPI | None = None
        self._background: list[tuple[str, Background]] = []
        if self.broker is not None:
            self.checks["kafka"] = broker_reachable(self.broker)
            self.consumer_checks["partitions"] = partitions_ready(self._subscribers)
            self.background("consumer-partitions", self._report_partitions)
        self._tasks: list[asyncio.Task[None]] = []
        self._stack = AsyncExitStack()
        self._broker_started = False
        self._started = False

    # -- what a lifespan calls --------------------------------------------------------------

    def http_app(self, **fastapi: Any) -> FastAPI:
        """The service's HTTP app, with its probes, traced; metrics and the start gate are added
        outermost by `runtime`. Call it once, before `runtime`."""
        self.app = FastAPI(telemetry=fastapi_telemetry(self.tracing), **fastapi)
        # An HTTP API serves from Postgres with Kafka away (audit events wait in the outbox).
        if "kafka" in self.checks:
            self.consumer_checks["kafka"] = self.checks.pop("kafka")
        self.app.include_router(
            probe_router(
                self.name, self.checks, self.stopping, consumer_checks=self.consumer_checks
            )
        )
        return self.app

    def include(self, router: APIRouter) -> None:
        """Serve `router` (built in the lifespan, from the opened resources)."""
        if self.app is None:
            raise RuntimeError(f"{self.name}: call http_app() before including a router")
        self.app.include_router(router)

    async def ensure_topics(self, *topics: str) -> None:
        """Create the missing ones of `topics` (nothing when `MNEMO_KAFKA_PROVISION_TOPICS` is off:
        an operator made them, and the service's principal may not create topics)."""
        if self.settings.kafka.provision_topics:
            await ensure_topics(self.settings.kafka, sorted(set(topics)))

    async def pool(
        self, dsn: SecretStr, *, max_size: int, min_size: int = 1, **kw: Any
    ) -> asyncpg.Pool:
        """A Postgres pool, closed after the lifespan; the first one is the `database` check's."""
        pool = await open_pool(
            dsn.get_secret_value(), min_size=min_size, max_size=max_size, init=trace_queries, **kw
        )
        self._stack.push_async_callback(pool.close)
        if self._pool is None:
            self._pool = pool
        return pool

    def consume(
        self,
        *,
        topic: str,
        group: str,
        data_model: type[Any],
        handler: BatchHandler[Any],
        batch: bool = False,
        watch_outages: bool = False,
    ) -> Consumer[Any]:
        """Subscribe `handler` on the broker (started after the lifespan yields); its partitions
        join the readiness checks, and with `watch_outages` so does its transient-failure state."""
        consumer, subscriber = build_consumer(
            self.broker,
            topic=topic,
            group=group,
            data_model=data_model,
            handler=handler,
            settings=self.settings.kafka,
            stopping=self.stopping,
            transient=TRANSIENT,
            batch=batch,
        )
        self._subscribers.append(subscriber)
        if watch_outages:
            if not self._watched:
                self.checks["consumer"] = consumer_healthy(self._watched)
            self._watched.append(consumer)
        return consumer

    def background(self, name: str, run: Background) -> None:
        """Run `run(stopping)` once the broker has started, again after any failure."""
        self._background.append((name, run))

    async def relay(self, settings: RelaySettings, topics: Sequence[str]) -> OutboxRelay | None:
        """The outbox relay of `topics` (a service relays what it writes), over the broker; None
        when `relay_outbox` is off (another process relays)."""
        if not settings.relay_outbox:
            return None
        if self.broker is None:
            raise RuntimeError(f"{self.name}: the outbox relay needs a broker")
        pool = await self.pool(settings.relay_database_url, max_size=2)
        relay = OutboxRelay(
            pool,
            KafkaPublisher(self.broker),
            batch_size=settings.relay_batch_size,
            topics=topics,
        )
        self.background("relay", relay.run)
        return relay

    # -- the process ------------------------------------------------------------------------

    def runtime(self, lifespan: Lifespan) -> ServiceRuntime:
        """The process: probes served at once, `lifespan` run on start and closed on stop."""

        async def start() -> None:
            await self._stack.enter_async_context(lifespan(self))
            if self.broker is not None:
                await self.broker.start()
                self._broker_started = True
            for name, run in self._background:
                self._tasks.append(asyncio.create_task(_forever(name, run, self.stopping)))
            self._started = True

        async def stop() -> None:
            self.stopping.set()
            # Background tasks publish through the broker's producer: they finish first.
            for task in self._tasks:
                with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                    await asyncio.wait_for(task, BACKGROUND_STOP_SECONDS)
            if self._broker_started:
                await self.broker.stop()
            await self._stack.aclose()
            self.tracing.shutdown()

        if self.app is not None:
            self.app.add_middleware(_StartGate, service=self.name, started=lambda: self._started)
            self.app.add_middleware(HttpMetricsMiddleware, service=self.name)
        return ServiceRuntime(
            name=self.name,
            host=self.settings.host,
            port=self.settings.port,
            start=start,
            stop=stop,
            stopping=self.stopping,
            checks=self.checks,
            consumer_checks=self.consumer_checks,
            app=self.app,
            http=self.settings.http,
        )

    async def _report_partitions(self, stopping: asyncio.Event) -> None:
        """`mnemo_consumer_partitions_assigned` of every subscriber, until the service stops."""
        while not stopping.is_set():
            for subscriber in self._subscribers:
                held = assigned_partitions(subscriber)
                for topic in subscriber.topics:
                    metrics.CONSUMER_PARTITIONS.labels(self.name, topic.name).set(held)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), PARTITIONS_REPORT_SECONDS)

    async def _start_finished(self) -> str | None:
        # Without it, /readyz would pass while the start gate still answers 503 (the pool opens
        # in the lifespan, before the broker has started).
        return None if self._started else "starting: resources or the broker not started yet"

    async def _database(self) -> str | None:
        if self._pool is None:
            return "not connected to Postgres yet"
        await self._pool.fetchval("SELECT 1")
        return None


class _StartGate:
    """503 for everything but the probes until the service has started (its routes are built
    from resources the lifespan opens)."""

    def __init__(self, app: ASGIApp, *, service: str, started: Callable[[], bool]) -> None:
        self._app = app
        self._service = service
        self._started = started

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self._started() or scope["path"] in PROBE_PATHS:
            await self._app(scope, receive, send)
            return
        body = (
            f'{{"detail":"the {self._service} service is starting: '
            'not connected to its database yet, try again shortly"}'
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 503,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"retry-after", b"1"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


async def _forever(name: str, run: Background, stopping: asyncio.Event) -> None:
    """Run `run(stopping)` again after any failure (the relay resumes where it stopped)."""
    while not stopping.is_set():
        try:
            await run(stopping)
        except Exception as error:
            log.warning(f"{name}_failed", error=repr(error))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), 1.0)
