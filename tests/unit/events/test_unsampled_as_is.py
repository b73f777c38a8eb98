"""`unsampled_as_is` lets the outbox relay skip the trace calls for an event whose trace was
dropped: whenever it says so, the full path (context from the stored headers, a producer span,
headers written under it) records nothing and writes back exactly the stored headers."""

from __future__ import annotations

import pytest
from mnemo_events.tracing import context_from_headers, outgoing_headers, unsampled_as_is
from mnemo_telemetry import tracing
from opentelemetry import context as otel_context
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_ON, DEFAULT_ON

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
SPAN_ID = "00f067aa0ba902b7"
JSON = {"content-type": "application/json"}

HEADERS = [
    {**JSON, "traceparent": f"00-{TRACE_ID}-{SPAN_ID}-00"},
    {**JSON, "traceparent": f"00-{TRACE_ID}-{SPAN_ID}-01"},
    {**JSON, "traceparent": f"00-{TRACE_ID}-{SPAN_ID}-02"},
    {**JSON, "traceparent": f"00-{TRACE_ID}-{SPAN_ID}-03"},
    {**JSON, "traceparent": f"00-{TRACE_ID}-{SPAN_ID}-fe"},
    {**JSON, "traceparent": f"00-{TRACE_ID}-{SPAN_ID}-0G"},
    {**JSON, "traceparent": f"00-{TRACE_ID.upper()}-{SPAN_ID}-00"},
    {**JSON, "traceparent": f" 00-{TRACE_ID}-{SPAN_ID}-00"},
    {**JSON, "traceparent": f"01-{TRACE_ID}-{SPAN_ID}-00"},
    {**JSON, "traceparent": f"00-{'0' * 32}-{SPAN_ID}-00"},
    {**JSON, "traceparent": f"00-{TRACE_ID}-{'0' * 16}-00"},
    {**JSON, "traceparent": f"00-{TRACE_ID}-{SPAN_ID}-00", "tracestate": "k=v"},
    {**JSON, "traceparent": f"00-{TRACE_ID}-{SPAN_ID}-00", "baggage": "k=v"},
    {**JSON, "Traceparent": f"00-{TRACE_ID}-{SPAN_ID}-00"},
    {**JSON, "traceparent": f"00-{TRACE_ID}-{SPAN_ID}-00", "x-other": "kept"},
    JSON,
    {},
]


def _full_path(stored: dict[str, str]) -> tuple[dict[str, str], bool]:
    """What the relay sends without the shortcut, and whether its span records."""
    parent = context_from_headers([(k, v.encode()) for k, v in stored.items()])
    token = otel_context.attach(parent)
    try:
        with tracing.producer_span("mnemo.document.persisted.v1") as handle:
            return outgoing_headers(stored), handle.recording
    finally:
        otel_context.detach(token)


@pytest.mark.parametrize("stored", HEADERS)
@pytest.mark.parametrize(
    "sampler", [tracing.sampler_from("parentbased_traceidratio", "0.01"), DEFAULT_ON, ALWAYS_ON]
)
def test_headers_passed_on_as_is_are_what_the_full_path_sends_with_no_span(
    stored: dict[str, str], sampler: object
) -> None:
    exporter = InMemorySpanExporter()
    tracing.configure_tracing(
        "test",
        None,
        sampler=sampler,  # type: ignore[arg-type]
        processor=SimpleSpanProcessor(exporter),
    )
    if unsampled_as_is(stored):
        sent, recording = _full_path(dict(stored))
        assert sent == stored
        assert not recording
        assert exporter.get_finished_spans() == ()


def test_an_unsampled_canonical_traceparent_is_passed_on_under_a_parent_based_sampler() -> None:
    tracing.configure_tracing("test", None, sampler=DEFAULT_ON)
    assert unsampled_as_is({**JSON, "traceparent": f"00-{TRACE_ID}-{SPAN_ID}-00"})
    assert not unsampled_as_is({**JSON, "traceparent": f"00-{TRACE_ID}-{SPAN_ID}-01"})
    assert not unsampled_as_is(JSON)


def test_a_sampler_that_ignores_the_parent_always_takes_the_full_path() -> None:
    tracing.configure_tracing("test", None, sampler=ALWAYS_ON)
    assert not unsampled_as_is({**JSON, "traceparent": f"00-{TRACE_ID}-{SPAN_ID}-00"})


def test_a_trace_the_sdk_started_and_dropped_is_passed_on_as_is() -> None:
    """The SDK sets the W3C `random` flag (02) on the traces it starts; the sampled bit decides."""
    tracing.configure_tracing(
        "test", None, sampler=tracing.sampler_from("parentbased_traceidratio", "0")
    )
    started = tracing.start_consumer_span("mnemo.persist.v1", otel_context.Context())
    stored = {**JSON, "traceparent": started.traceparent or ""}
    assert stored["traceparent"].endswith("-02")
    assert unsampled_as_is(stored)
    assert not unsampled_as_is({**JSON, "traceparent": f"00-{TRACE_ID}-{SPAN_ID}-03"})
