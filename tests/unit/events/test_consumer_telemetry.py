"""The events runtime's telemetry over in-memory records: each record is processed in a span of
its producer's trace, handler spans join it, dead letters fail their span and count by reason."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence

import pytest
from mnemo_events import PersistRow, new_envelope
from mnemo_events.consumer import Consumer, Received, Rejection, RetryPolicy, reason_code
from mnemo_events.dead_letters import DeadLetter, Delivery
from mnemo_telemetry import metrics, tracing
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

TENANT = uuid.uuid4()
TOPIC = f"t-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def exported() -> InMemorySpanExporter:
    exporter = InMemorySpanExporter()
    tracing.configure_tracing("ingest", None, processor=SimpleSpanProcessor(exporter))
    return exporter


def delivery(offset: int, title: str, traceparent: str | None = None) -> Delivery:
    envelope = new_envelope(
        PersistRow(store="Docs", values={"title": title}),
        tenant=TENANT,
        producer="test",
        event_type="mnemo.persist.v1",
    )
    headers = (("traceparent", traceparent.encode()),) if traceparent else ()
    return Delivery(
        topic=TOPIC,
        partition=0,
        offset=offset,
        key=str(TENANT).encode(),
        value=envelope.model_dump_json().encode(),
        headers=headers,
    )


async def test_each_record_is_processed_in_a_span_of_its_producers_trace(
    exported: InMemorySpanExporter,
) -> None:
    with tracing.producer_span("persist") as first:
        first_parent = first.traceparent
    with tracing.producer_span("persist") as second:
        second_parent = second.traceparent
    letters: list[DeadLetter] = []

    async def handle(items: Sequence[Received[PersistRow]]) -> Sequence[Rejection]:
        for item in items:  # a handler's own span per record, under the record's context
            with tracing.mnemo_span("work", parent=item.context):
                pass
        return [Rejection(items[1].delivery, "unknown store 'Docs'")]

    async def dead_letter(batch: Sequence[DeadLetter]) -> None:
        letters.extend(batch)

    subject = Consumer(
        topic=TOPIC,
        group="mnemo.ingest",
        data_model=PersistRow,
        handler=handle,
        dead_letters=dead_letter,
        retry=RetryPolicy(max_attempts=1),
        stopping=asyncio.Event(),
    )
    await subject.process([delivery(0, "a", first_parent), delivery(1, "b", second_parent)])

    spans = exported.get_finished_spans()
    processed = [s for s in spans if s.name == f"process {TOPIC}"]
    producers = [s for s in spans if s.name == "send persist"]
    work = [s for s in spans if s.name == "work"]
    assert len(processed) == 2
    for consumed, produced, done in zip(processed, producers, work, strict=True):
        assert consumed.kind is SpanKind.CONSUMER
        assert consumed.context.trace_id == produced.context.trace_id
        assert consumed.parent is not None
        assert consumed.parent.span_id == produced.context.span_id
        assert done.parent is not None
        assert done.parent.span_id == consumed.context.span_id
        assert consumed.attributes is not None
        assert consumed.attributes["mnemo.tenant"] == str(TENANT)
    assert processed[0].status.status_code is StatusCode.UNSET
    assert processed[1].status.status_code is StatusCode.ERROR
    assert "rejected" in (processed[1].status.description or "")
    assert [letter.reason for letter in letters] == ["unknown store 'Docs'"]
    assert metrics.DEAD_LETTERS.labels("ingest", TOPIC, "rejected")._value.get() == 1
    assert metrics.MESSAGES.labels("ingest", TOPIC, "ok")._value.get() == 1


def test_dead_letter_reasons_become_short_codes() -> None:
    assert reason_code("invalid envelope: data.store: field required") == "invalid_envelope"
    assert reason_code("key mismatch: the key 'x' is not the envelope's tenant") == "key_mismatch"
    assert reason_code("message has no key; the key must be …") == "key_mismatch"
    assert reason_code("failed after 5 attempts: ValueError: boom") == "attempts_exhausted"
    assert reason_code("unknown tenant 42") == "rejected"
