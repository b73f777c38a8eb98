"""W3C trace context in and out of Kafka headers, through OpenTelemetry's propagator API.

Producers call `outgoing_headers()` to stamp the current span's `traceparent` (and `tracestate`)
on a message; consumers call `context_from_headers()` and attach the result while they work, so the
consumer's spans join the producer's trace. With no tracer provider installed these are cheap
no-ops (the API's default); installing one is the telemetry set-up's job, not this module's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace

TRACEPARENT = "traceparent"


def outgoing_headers(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """`extra` plus the W3C trace headers of the current context (none when nothing is traced)."""
    carrier: dict[str, str] = dict(extra or {})
    propagate.inject(carrier)
    return carrier


def current_traceparent() -> str | None:
    """The current context's `traceparent` value, for the envelope's `trace` field."""
    return outgoing_headers().get(TRACEPARENT)


def context_from_headers(
    headers: Iterable[tuple[str, bytes]], fallback_traceparent: str | None = None
) -> otel_context.Context:
    """The trace context a message carries: its `traceparent` header, else `fallback_traceparent`
    (the envelope's `trace` field), else an empty context."""
    carrier = {name.lower(): value.decode("latin-1") for name, value in headers}
    if TRACEPARENT not in carrier and fallback_traceparent:
        carrier[TRACEPARENT] = fallback_traceparent
    return propagate.extract(carrier)


def trace_id_of(ctx: otel_context.Context) -> str | None:
    """The 32-hex trace id in `ctx`, or None when it carries no valid span."""
    span_context = trace.get_current_span(ctx).get_span_context()
    if not span_context.is_valid:
        return None
    return format(span_context.trace_id, "032x")
