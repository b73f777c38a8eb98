"""`create_app()`: reads the settings and returns the service runtime (probes on port 8082,
SIGTERM handling); its lifespan opens the pool, builds the candidate sources, the classifier and
the use case, and subscribes the document consumer over them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from mnemo_events import TOPICS, DocumentPersisted
from mnemo_mdn.edge_classification import ClassifierOptions
from mnemo_service import Composition
from mnemo_store import Store
from mnemo_telemetry.service import ServiceRuntime

from mnemo_edge_classifier.adapters import (
    IndexedCandidates,
    KafkaEdgePublisher,
    RegistryCorpora,
    StoreCandidates,
)
from mnemo_edge_classifier.llm_classifier import ChatClassifier, ChatSettings
from mnemo_edge_classifier.settings import Settings
from mnemo_edge_classifier.subscribers import documents_handler
from mnemo_edge_classifier.use_cases import (
    CandidateSource,
    ClassifyDocument,
    EdgeClassifier,
    KeysCache,
    LexicalClassifier,
)

SERVICE = "edge-classifier"


def create_app(settings: Settings | None = None) -> ServiceRuntime:
    settings = settings or Settings()
    kit = Composition(SERVICE, settings, client_id=settings.group)

    @asynccontextmanager
    async def lifespan(kit: Composition) -> AsyncIterator[None]:
        await kit.ensure_topics(*TOPICS, settings.topic, settings.persist_topic)
        pool = await kit.pool(settings.database_url, max_size=settings.pool_size)
        options = ClassifierOptions(max_links=settings.max_links)
        chat: ChatClassifier | None = None
        classifier: EdgeClassifier
        if settings.classifier == "llm":
            chat = ChatClassifier(
                ChatSettings(
                    settings.llm_base_url,
                    settings.llm_model,
                    settings.llm_api_key.get_secret_value(),
                    settings.llm_timeout_seconds,
                )
            )
            classifier = chat
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
        kit.consume(
            topic=settings.topic,
            group=settings.group,
            data_model=DocumentPersisted,
            handler=documents_handler(
                use_case, KafkaEdgePublisher(kit.broker, settings.persist_topic)
            ),
            batch=True,
        )
        try:
            yield
        finally:
            if chat is not None:
                await chat.close()

    return kit.runtime(lifespan)
