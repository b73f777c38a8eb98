"""`mnemo.document.persisted.v1` → `ClassifyDocument` → `mnemo.persist.v1` (thin: decode, bind the
log context, call the use case, publish). Events come in batches; a batch's edges are published
together and its offsets commit after the publishes returned.

A document of a corpus that is not published is skipped: counted
(`mnemo_classifier_documents_total{outcome="skipped_unpublished"}`), logged with the corpus's
status, its offset committed like any other."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

import structlog
from mnemo_events import DocumentPersisted, Envelope, PersistRow
from mnemo_events.consumer import Received, Rejection, single
from mnemo_events.errors import Rejected
from mnemo_events.tracing import current_traceparent
from mnemo_telemetry.tracing import classify_span
from opentelemetry import context as otel_context
from prometheus_client import Counter

from mnemo_edge_classifier.errors import CorpusNotPublishedError, DocumentRefusedError
from mnemo_edge_classifier.use_cases import ClassifyDocument, EdgePublisher

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


def documents_handler(
    use_case: ClassifyDocument, publisher: EdgePublisher
) -> Callable[[Sequence[Received[DocumentPersisted]]], Awaitable[Sequence[Rejection]]]:
    """A batch of events classified together, a tenant at a time (the candidate source checks each
    tenant's freshness once for the batch), then every edge of the batch published together; the
    offsets commit after that. A refused event is dead-lettered alone."""

    async def handle(items: Sequence[Received[DocumentPersisted]]) -> Sequence[Rejection]:
        use_case.new_batch()
        # Each event's commands with the context they were made in: published together after the
        # batch, each still in its own event's trace (the producer span and the headers ingest
        # continues from), not in whatever context the batch ends in.
        outgoing: list[tuple[otel_context.Context, Envelope[PersistRow]]] = []
        classified = 0

        async def one(item: Received[DocumentPersisted]) -> None:
            nonlocal classified
            commands = await _classify(use_case, item)
            if commands is not None:
                made_in = otel_context.get_current()
                outgoing.extend((made_in, command) for command in commands)
                classified += 1

        ordered = sorted(items, key=lambda item: item.envelope.tenant.bytes)
        rejections = await single(one)(ordered)  # each in its trace context; refusals collected
        # Queued one after the other, then awaited together: sent concurrently, thousands of
        # commands all waited on each full producer batch and all woke when it drained.
        delivered: list[Awaitable[object]] = []
        for made_in, command in outgoing:
            token = otel_context.attach(made_in)
            try:
                delivered.append(await publisher.enqueue(command))
            finally:
                otel_context.detach(token)
        await asyncio.gather(*delivered)
        EDGES.inc(len(outgoing))
        DOCUMENTS.labels("classified").inc(classified)
        return rejections

    return handle


async def _classify(
    use_case: ClassifyDocument, item: Received[DocumentPersisted]
) -> list[Envelope[PersistRow]] | None:
    """The event's persist commands (None: skipped, its corpus is not published); raises
    `Rejected` for an event that can never be classified."""
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
            return None
        except DocumentRefusedError as error:
            DOCUMENTS.labels("refused").inc()
            span.fail(str(error)[:500])
            raise Rejected(str(error)) from error
        span.set(edges_proposed=len(commands))
        for reason in refused:
            log.info("decision_refused", reason=reason)
        REFUSED_DECISIONS.inc(len(refused))
        log.debug("document_classified", edges=len(commands))
        return commands
