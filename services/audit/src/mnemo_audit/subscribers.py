"""The Kafka side: `mnemo.audit.v1` records, decoded by the events runtime, to the use case.

An event whose producer may not write its record's kind (`mnemo_audit.producers`) is refused
here, before the use case sees it, and dead-lettered with the reason."""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set

import structlog
from mnemo_events import AuditRecorded
from mnemo_events.consumer import BatchHandler, Received, Rejection
from mnemo_telemetry.tracing import start_span, use_span

from mnemo_audit.producers import DEFAULT_PRODUCERS, producer_refusal
from mnemo_audit.use_cases import AppendAuditEvents, Incoming

log = structlog.get_logger("mnemo_audit.subscribers")

AUDIT_APPEND = "mnemo.audit.append"


def audit_handler(
    append: AppendAuditEvents, producers: Mapping[str, Set[str]] = DEFAULT_PRODUCERS
) -> BatchHandler[AuditRecorded]:
    """A batch handler: the whole batch in one call, refusals dead-lettered with their reasons.
    `producers`: the allow-list of producers and the record kinds each may write."""

    async def handle(received: Sequence[Received[AuditRecorded]]) -> Sequence[Rejection]:
        refused: list[Rejection] = []
        items: list[Received[AuditRecorded]] = []
        for item in received:
            envelope = item.envelope
            why = producer_refusal(envelope.producer, envelope.data.record.kind, producers)
            if why is None:
                items.append(item)
                continue
            log.warning(
                "audit_event_refused",
                tenant=str(envelope.tenant),
                event_id=str(envelope.event_id),
                reason=why,
            )
            refused.append(Rejection(item.delivery, why))
        if not items:
            return refused
        # One `mnemo.audit.append` span per event, in its producer's trace; the batch appends
        # once, with the first event's span current.
        spans = [
            start_span(
                AUDIT_APPEND,
                parent=item.context,
                tenant=str(item.envelope.tenant),
                event_id=str(item.envelope.event_id),
            )
            for item in items
        ]
        try:
            with use_span(spans[0]):
                refusals = await append(
                    [
                        Incoming(ref=index, envelope=item.envelope)
                        for index, item in enumerate(items)
                    ]
                )
        except BaseException as error:
            for span in spans:
                span.fail(f"not appended: {type(error).__name__}")
                span.end()
            raise
        for refusal in refusals:
            spans[refusal.ref].fail(refusal.reason[:500])
        for span in spans:
            span.end()
        for refusal in refusals:
            item = items[refusal.ref]
            log.warning(
                "audit_event_refused",
                tenant=str(item.envelope.tenant),
                event_id=str(item.envelope.event_id),
                reason=refusal.reason,
            )
        log.debug("audit_batch", records=len(items), refused=len(refusals))
        return refused + [Rejection(items[r.ref].delivery, r.reason) for r in refusals]

    return handle
