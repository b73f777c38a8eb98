"""`context_from_headers` and `outgoing_headers` read and write the `traceparent` themselves when
Mnemo's W3C propagator is in place: what they return must be what OpenTelemetry's propagator
returns for the same headers, valid or not, with or without `tracestate` and `baggage`."""

from __future__ import annotations

import pytest
from mnemo_events.tracing import context_from_headers, outgoing_headers
from mnemo_telemetry import tracing
from opentelemetry import baggage, propagate, trace
from opentelemetry import context as otel_context
from opentelemetry.baggage.propagation import W3CBaggagePropagator
from opentelemetry.propagators.composite import CompositePropagator
from opentelemetry.sdk.trace.sampling import DEFAULT_ON
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
SPAN_ID = "00f067aa0ba902b7"

TRACEPARENTS = [
    f"00-{TRACE_ID}-{SPAN_ID}-00",
    f"00-{TRACE_ID}-{SPAN_ID}-01",
    f"00-{TRACE_ID}-{SPAN_ID}-02",
    f"00-{TRACE_ID}-{SPAN_ID}-ff",
    f"  00-{TRACE_ID}-{SPAN_ID}-01 \t",
    f"01-{TRACE_ID}-{SPAN_ID}-01-and-more",
    f"00-{TRACE_ID}-{SPAN_ID}-01-and-more",
    f"ff-{TRACE_ID}-{SPAN_ID}-01",
    f"00-{'0' * 32}-{SPAN_ID}-01",
    f"00-{TRACE_ID}-{'0' * 16}-01",
    f"00-{TRACE_ID.upper()}-{SPAN_ID}-01",
    f"00-{TRACE_ID[:-1]}-{SPAN_ID}-01",
    f"00-{TRACE_ID}-{SPAN_ID}-1",
    f"00-{TRACE_ID}-{SPAN_ID}-01" + " " * 600,
    "",
    "garbage",
]


@pytest.fixture(autouse=True)
def _mnemo_propagator() -> None:
    tracing.configure_tracing("test", None, sampler=DEFAULT_ON)
    assert propagate.get_global_textmap() is tracing.W3C_PROPAGATOR


def _reference_extract(carrier: dict[str, str]) -> otel_context.Context:
    reference = CompositePropagator([TraceContextTextMapPropagator(), W3CBaggagePropagator()])
    return reference.extract(carrier)


def _described(ctx: otel_context.Context) -> tuple[object, ...]:
    span_context = trace.get_current_span(ctx).get_span_context()
    return (
        span_context,
        type(trace.get_current_span(ctx)).__name__,
        dict(baggage.get_all(ctx)),
        sorted(ctx.keys()),
    )


@pytest.mark.parametrize("traceparent", TRACEPARENTS)
@pytest.mark.parametrize(
    "others",
    [{}, {"content-type": "application/json"}, {"tracestate": "a=1,b=2"}, {"baggage": "k=v"}],
)
def test_a_context_read_from_headers_is_the_propagators_own(
    traceparent: str, others: dict[str, str]
) -> None:
    carrier = {"traceparent": traceparent, **others}
    headers = [
        (name.upper() if name == "traceparent" else name, v.encode()) for name, v in carrier.items()
    ]
    assert _described(context_from_headers(headers)) == _described(_reference_extract(carrier))


@pytest.mark.parametrize("fallback", [None, "", f"00-{TRACE_ID}-{SPAN_ID}-01"])
def test_the_envelopes_trace_stands_in_only_for_a_missing_header(fallback: str | None) -> None:
    carrier = {"traceparent": fallback} if fallback else {}
    assert _described(context_from_headers([], fallback)) == _described(_reference_extract(carrier))
    sampled = f"00-{TRACE_ID}-{SPAN_ID}-00"
    from_header = context_from_headers([("traceparent", sampled.encode())], fallback)
    assert _described(from_header) == _described(_reference_extract({"traceparent": sampled}))


@pytest.mark.parametrize("traceparent", TRACEPARENTS)
@pytest.mark.parametrize("with_baggage", [False, True])
def test_headers_written_are_the_propagators_own(traceparent: str, with_baggage: bool) -> None:
    carrier = {"traceparent": traceparent, "tracestate": "a=1,b=2"}
    ctx = _reference_extract(carrier)
    if with_baggage:
        ctx = baggage.set_baggage("k", "v", ctx)
    token = otel_context.attach(ctx)
    try:
        written = outgoing_headers({"content-type": "application/json"})
    finally:
        otel_context.detach(token)
    expected = {"content-type": "application/json"}
    propagate.get_global_textmap().inject(expected, context=ctx)
    CompositePropagator([TraceContextTextMapPropagator(), W3CBaggagePropagator()]).inject(
        reference := {"content-type": "application/json"}, context=ctx
    )
    assert written == expected == reference


def test_another_propagator_in_place_is_used_as_it_is() -> None:
    only_trace = TraceContextTextMapPropagator()
    propagate.set_global_textmap(only_trace)
    try:
        ctx = context_from_headers([("traceparent", f"00-{TRACE_ID}-{SPAN_ID}-01".encode())])
        token = otel_context.attach(baggage.set_baggage("k", "v", ctx))
        try:
            assert outgoing_headers() == {"traceparent": f"00-{TRACE_ID}-{SPAN_ID}-01"}
        finally:
            otel_context.detach(token)
    finally:
        propagate.set_global_textmap(tracing.W3C_PROPAGATOR)
