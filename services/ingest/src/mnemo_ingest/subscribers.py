"""`mnemo.persist.v1` → `Ingest.persist` and `mnemo.forget.v1` → `Forget.forget`: decode (the
runtime already validated the envelope and its key), call the use case, hand refusals back to be
dead-lettered."""

from __future__ import annotations

from collections.abc import Sequence

import asyncpg
import structlog
from mnemo_events import PersistRow
from mnemo_events.consumer import Received, Rejection
from mnemo_events.models import ForgetRow
from mnemo_telemetry.tracing import SpanHandle, start_persist_span, use_span
from prometheus_client import Counter

from mnemo_ingest.use_cases import Command, Forget, ForgetCommand, Ingest

log = structlog.get_logger("mnemo_ingest")

ROWS = Counter("mnemo_ingest_messages_total", "persist messages handled", ["outcome"])
FORGOTTEN = Counter("mnemo_ingest_forget_messages_total", "forget messages handled", ["outcome"])

# A database verdict on one row (a duplicate key, a value the column's constraints refuse) can
# never succeed on a retry: alone in its batch, such a row is refused with the database's reason.
ROW_VERDICTS = (asyncpg.IntegrityConstraintViolationError, asyncpg.DataError)


def persist_handler(ingest: Ingest):  # type: ignore[no-untyped-def]  # returns a BatchHandler
    async def handle(items: Sequence[Received[PersistRow]]) -> Sequence[Rejection]:
        # One `mnemo.persist` span per record, in that record's trace; the batch is written once,
        # with the first record's span current (its SQL spans go there). A record the sampler
        # dropped gets no span: its handle carries the record's context (and traceparent) alone.
        spans = [
            start_persist_span(
                item.context,
                tenant=item.envelope.tenant,
                store=item.envelope.data.store,
                event_id=item.envelope.event_id,
            )
            for item in items
        ]
        commands = []
        for item, span in zip(items, spans, strict=True):
            traceparent = span.traceparent
            commands.append(
                Command(
                    ref=item.delivery,
                    event_id=item.envelope.event_id,
                    tenant=item.envelope.tenant,
                    store=item.envelope.data.store,
                    values=item.envelope.data.values,
                    producer=item.envelope.producer,
                    # The persist span is in the record's trace: its trace id is the record's.
                    trace_id=traceparent[3:35] if traceparent else item.trace_id,
                    traceparent=traceparent,
                )
            )
        try:
            with use_span(spans[0]):
                refusals = await ingest.persist(commands)
        except ROW_VERDICTS as error:
            if len(items) > 1:
                _end(spans, f"batch failed: {type(error).__name__}")
                raise
            refusals = []
            reason = f"the database refused the row: {type(error).__name__}: {error}"
            ROWS.labels("refused").inc()
            _end(spans, reason)
            return [Rejection(items[0].delivery, reason)]
        except BaseException as error:
            _end(spans, f"not written: {type(error).__name__}")
            raise
        refused = {id(refusal.ref): refusal.reason for refusal in refusals}
        for item, span in zip(items, spans, strict=True):
            why = refused.get(id(item.delivery))
            if why is not None:
                span.fail(why[:500])
            span.end()
        ROWS.labels("refused").inc(len(refusals))
        ROWS.labels("written_or_duplicate").inc(len(items) - len(refusals))
        for refusal in refusals:
            log.info("row_refused", reason=refusal.reason, offset=refusal.ref.offset)
        return [Rejection(refusal.ref, refusal.reason) for refusal in refusals]

    return handle


def _end(spans: Sequence[SpanHandle], reason: str) -> None:
    for span in spans:
        span.fail(reason[:500])
        span.end()


def forget_handler(forget: Forget):  # type: ignore[no-untyped-def]  # returns a BatchHandler
    async def handle(items: Sequence[Received[ForgetRow]]) -> Sequence[Rejection]:
        commands = [
            ForgetCommand(
                ref=item.delivery,
                event_id=item.envelope.event_id,
                tenant=item.envelope.tenant,
                store=item.envelope.data.store,
                document_id=item.envelope.data.id,
                producer=item.envelope.producer,
                match=item.envelope.data.match,
                trace_id=item.trace_id,
                traceparent=item.envelope.trace,
            )
            for item in items
        ]
        done, refusals = await forget.forget(commands)
        FORGOTTEN.labels("forgotten").inc(len(done))
        FORGOTTEN.labels("refused").inc(len(refusals))
        FORGOTTEN.labels("duplicate").inc(len(items) - len(done) - len(refusals))
        for item in done:
            log.info(
                "document_forgotten",
                store=item.store,
                event_id=str(item.event_id),
                edges=item.edges,
                pending=item.pending,
                outcomes=item.outcomes,
            )
        for refusal in refusals:
            log.info("forget_refused", reason=refusal.reason, offset=refusal.ref.offset)
        return [Rejection(refusal.ref, refusal.reason) for refusal in refusals]

    return handle
