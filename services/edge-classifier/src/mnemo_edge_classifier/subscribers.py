"""`mnemo.document.persisted.v1` → `ClassifyDocument` → `mnemo.persist.v1` (thin: decode, bind the
log context, call the use case, publish). The offset commits after the publishes returned.

A document of a corpus that is not published is skipped: counted
(`mnemo_classifier_documents_total{outcome="skipped_unpublished"}`), logged with the corpus's
status, its offset committed like any other."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import structlog
from mnemo_events import DocumentPersisted, Envelope, PersistRow
from mnemo_events.consumer import Received
from mnemo_events.errors import Rejected
from mnemo_events.tracing import current_traceparent
from mnemo_telemetry.tracing import classify_span
from prometheus_client import Counter

from mnemo_edge_classifier.errors import CorpusNotPublishedError, DocumentRefusedError
from mnemo_edge_classifier.use_cases import ClassifyDocument

log = structlog.get_logger("mnemo_edge_classifier")

DOCUMENTS = Counter(
    "mnemo_classifier_documents_total",
    "documents.persisted events handled: classified, refused, skipped_unpublished",
    ["outcome"],
)
for _outcome in ("classified", "refused", "skipped_unpublished"):
    DOCUMENTS.labels(_outcome)
EDGES = Counter("mnemo_classifier_edges_total", "edges published to ingest")
REFUSED_DECISIONS = Counter(
    "mnemo_classifier_decisions_refused_total", "classifier decisions refused before persist"
)

Publish = Callable[[Envelope[PersistRow]], Awaitable[None]]


def document_handler(
    use_case: ClassifyDocument, publish: Publish
) -> Callable[[Received[DocumentPersisted]], Awaitable[None]]:
    async def handle(item: Received[DocumentPersisted]) -> None:
        envelope = item.envelope
        bound = structlog.contextvars.bound_contextvars(
            tenant=str(envelope.tenant),
            corpus=envelope.data.corpus,
            event_id=str(envelope.event_id),
        )
        with (
            bound,
            classify_span(
                tenant=str(envelope.tenant),
                corpus=envelope.data.corpus,
                event_id=str(envelope.event_id),
            ) as span,
        ):
            try:
                commands, refused = await use_case.edges_for(envelope, trace=current_traceparent())
            except CorpusNotPublishedError as error:
                DOCUMENTS.labels("skipped_unpublished").inc()
                log.info("document_skipped", status=error.status, reason=str(error))
                return
            except DocumentRefusedError as error:
                DOCUMENTS.labels("refused").inc()
                span.fail(str(error)[:500])
                raise Rejected(str(error)) from error
            span.set(edges_proposed=len(commands))
            for reason in refused:
                log.info("decision_refused", reason=reason)
            REFUSED_DECISIONS.inc(len(refused))
            for command in commands:
                await publish(command)
            EDGES.inc(len(commands))
            DOCUMENTS.labels("classified").inc()
            log.debug("document_classified", edges=len(commands))

    return handle
