"""`create_app()`: reads the settings, builds the broker, the pool and the classifier, and returns
the service runtime (probes on port 8082, SIGTERM handling)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import asyncpg
from mnemo_events import TOPICS, DocumentPersisted, Envelope, PersistRow
from mnemo_events.broker import create_broker, publish
from mnemo_events.consumer import Received, Rejection, build_consumer
from mnemo_events.provisioning import ensure_topics
from mnemo_events.readiness import broker_reachable, partitions_ready
from mnemo_mdn.edge_classification import ClassifierOptions
from mnemo_store import Store
from mnemo_telemetry.service import ServiceRuntime
from mnemo_telemetry.sql import trace_queries
from mnemo_telemetry.tracing import configure_tracing_from

from mnemo_edge_classifier.adapters import IndexedCandidates, RegistryCorpora, StoreCandidates
from mnemo_edge_classifier.llm_classifier import ChatClassifier, ChatSettings
from mnemo_edge_classifier.settings import ClassifierSettings
from mnemo_edge_classifier.subscribers import documents_handler
from mnemo_edge_classifier.use_cases import (
    CandidateSource,
    ClassifyDocument,
    EdgeClassifier,
    KeysCache,
    LexicalClassifier,
)

TRANSIENT = (
    OSError,
    ConnectionError,
    asyncpg.PostgresConnectionError,
    asyncpg.InterfaceError,
    asyncpg.CannotConnectNowError,
)


def create_app(settings: ClassifierSettings | None = None) -> ServiceRuntime:
    settings = settings or ClassifierSettings()
    tracing = configure_tracing_from("edge-classifier", settings.tracing)
    broker = create_broker(settings.kafka, client_id=settings.group)
    stopping = asyncio.Event()
    pools: list[asyncpg.Pool] = []
    chat: list[ChatClassifier] = []
    handlers: list[object] = []

    async def handle(items: Sequence[Received[DocumentPersisted]]) -> Sequence[Rejection]:
        if not handlers:
            raise ConnectionError("the service has not started yet")
        return await handlers[0](items)  # type: ignore[operator, no-any-return]  # wired in start()

    _, subscriber = build_consumer(
        broker,
        topic=settings.topic,
        group=settings.group,
        data_model=DocumentPersisted,
        handler=handle,
        settings=settings.kafka,
        stopping=stopping,
        transient=TRANSIENT,
        batch=True,
    )

    async def send(command: Envelope[PersistRow]) -> None:
        await publish(broker, settings.persist_topic, command)  # type: ignore[arg-type]  # Envelope is covariant in use

    async def start() -> None:
        await ensure_topics(
            settings.kafka, sorted({*TOPICS, settings.topic, settings.persist_topic})
        )
        pool = await asyncpg.create_pool(
            settings.database_url, min_size=1, max_size=settings.pool_size, init=trace_queries
        )
        pools.append(pool)
        options = ClassifierOptions(max_links=settings.max_links)
        classifier: EdgeClassifier
        if settings.classifier == "llm":
            chat.append(
                ChatClassifier(
                    ChatSettings(
                        settings.llm_base_url,
                        settings.llm_model,
                        settings.llm_api_key.get_secret_value(),
                        settings.llm_timeout_seconds,
                    )
                )
            )
            classifier = chat[0]
        else:
            classifier = LexicalClassifier(options)
        store = Store(pool)
        per_event = StoreCandidates(store, settings.candidate_limit, options)
        source: CandidateSource = per_event
        if settings.index_max_bytes > 0:
            source = IndexedCandidates(
                store, per_event, settings.candidate_limit, options, settings.index_max_bytes
            )
        use_case = ClassifyDocument(
            RegistryCorpora(pool), source, classifier, KeysCache(settings.keys_cache_size)
        )
        handlers.append(documents_handler(use_case, send))
        await broker.start()

    async def stop() -> None:
        stopping.set()
        await broker.stop()
        for client in chat:
            await client.close()
        for pool in pools:
            await pool.close()
        tracing.shutdown()

    async def database() -> str | None:
        if not pools:
            return "not connected yet"
        await pools[0].fetchval("SELECT 1")
        return None

    return ServiceRuntime(
        name="edge-classifier",
        host=settings.host,
        port=settings.port,
        start=start,
        stop=stop,
        stopping=stopping,
        checks={
            "database": database,
            "kafka": broker_reachable(broker),
            "partitions": partitions_ready([subscriber]),
        },
    )
