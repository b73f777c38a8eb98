"""Ingest's persist handler under sampling: a record whose trace is not sampled is written with no
`mnemo.persist` span, and its command still carries the record's trace id (for the audit row) and
`traceparent` (for the events the row causes); a sampled one is traced as before."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import cast

import pytest
from mnemo_events import PersistRow, new_envelope
from mnemo_events.consumer import Received
from mnemo_events.dead_letters import Delivery
from mnemo_events.tracing import context_from_headers
from mnemo_ingest.subscribers import persist_handler
from mnemo_ingest.use_cases import Command, Ingest, Refusal
from mnemo_telemetry import tracing
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import DEFAULT_ON

TENANT = uuid.uuid4()
TRACE_ID = "0af7651916cd43dd8448eb211c80319c"


class FakeIngest:
    def __init__(self) -> None:
        self.commands: list[Command] = []

    async def persist(self, commands: Sequence[Command]) -> list[Refusal]:
        self.commands.extend(commands)
        return []


def received(flags: str) -> Received[PersistRow]:
    traceparent = f"00-{TRACE_ID}-b7ad6b7169203331-{flags}"
    envelope = new_envelope(
        PersistRow(store="Docs", values={"title": "t"}),
        tenant=TENANT,
        producer="test",
        event_type="mnemo.persist.v1",
        trace=traceparent,
    )
    delivery = Delivery(topic="persist", partition=0, offset=0, key=None, value=b"")
    return Received(
        envelope=envelope, delivery=delivery, context=context_from_headers((), traceparent)
    )


@pytest.mark.parametrize("sampled", [False, True])
async def test_a_record_is_written_with_its_trace_whether_sampled_or_not(sampled: bool) -> None:
    exporter = InMemorySpanExporter()
    tracing.configure_tracing(
        "ingest",
        None,
        processor=SimpleSpanProcessor(exporter),
        sampler=tracing.sampler_from("parentbased_traceidratio", "0.01"),
    )
    try:
        ingest = FakeIngest()
        handle = persist_handler(cast(Ingest, ingest))
        assert await handle([received("01" if sampled else "00")]) == []
        [command] = ingest.commands
        assert command.trace_id == TRACE_ID
        assert command.traceparent is not None
        assert command.traceparent.startswith(f"00-{TRACE_ID}-")
        spans = exporter.get_finished_spans()
        if sampled:
            [span] = spans
            assert span.name == "mnemo.persist"
            assert span.attributes is not None
            assert span.attributes["mnemo.tenant"] == str(TENANT)
            assert command.traceparent == f"00-{TRACE_ID}-{span.context.span_id:016x}-01"
        else:
            assert spans == ()
            assert command.traceparent == f"00-{TRACE_ID}-b7ad6b7169203331-00"
    finally:
        tracing.configure_tracing("test", None, sampler=DEFAULT_ON)
