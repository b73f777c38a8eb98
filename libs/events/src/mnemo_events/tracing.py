"""W3C trace context in and out of Kafka headers, through OpenTelemetry's propagator API.

Producers call `outgoing_headers()` to stamp the current span's `traceparent` (and `tracestate`)
on a message; consumers call `context_from_headers()` and attach the result while they work, so the
consumer's spans join the producer's trace. With no tracer provider installed these are cheap
no-ops (the API's default); installing one is the telemetry set-up's job, not this module's.

Both run once per record on the write path (ingest reads one context per record and its relay one
more per outbox event). When the propagator in place is the one `configure_tracing` installs
(`mnemo_telemetry.tracing.W3C_PROPAGATOR`) and a record carries neither `tracestate` nor
`baggage`, they read and write the `traceparent` directly, by the same rules as OpenTelemetry's
W3C propagator (a unit test holds the two equal); anything else goes through the propagator.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from mnemo_telemetry.tracing import W3C_PROPAGATOR, skips_unsampled_children
from opentelemetry import baggage, propagate, trace
from opentelemetry import context as otel_context

TRACEPARENT = "traceparent"
TRACESTATE = "tracestate"
BAGGAGE = "baggage"

_TRACEPARENT_FORMAT = re.compile(
    r"^[ \t]*([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(?:(-.*)|[ \t]*)$"
)
"""The W3C propagator's own pattern: version, trace id, span id, flags, anything after them."""
_TRACEPARENT_MAX_LENGTH = 512
_ZERO_TRACE = "0" * 32
_ZERO_SPAN = "0" * 16


def outgoing_headers(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """`extra` plus the W3C trace headers of the current context (none when nothing is traced)."""
    carrier: dict[str, str] = dict(extra or {})
    if propagate.get_global_textmap() is not W3C_PROPAGATOR or baggage.get_all():
        propagate.inject(carrier)
        return carrier
    span_context = trace.get_current_span().get_span_context()
    if span_context == trace.INVALID_SPAN_CONTEXT:
        return carrier
    carrier[TRACEPARENT] = (
        f"00-{span_context.trace_id:032x}-{span_context.span_id:016x}-"
        f"{span_context.trace_flags:02x}"
    )
    if span_context.trace_state:
        carrier[TRACESTATE] = span_context.trace_state.to_header()
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
    header = carrier.get(TRACEPARENT)
    if (
        propagate.get_global_textmap() is not W3C_PROPAGATOR
        or TRACESTATE in carrier
        or BAGGAGE in carrier
        or (header is not None and len(header) > _TRACEPARENT_MAX_LENGTH)  # it logs a warning
    ):
        return propagate.extract(carrier)
    empty = otel_context.Context()
    if not header:
        return empty
    match = _TRACEPARENT_FORMAT.search(header)
    if match is None:
        return empty
    version, trace_id, span_id, flags, rest = match.groups()
    if trace_id == _ZERO_TRACE or span_id == _ZERO_SPAN or version == "ff":
        return empty
    if version == "00" and rest:
        return empty
    span_context = trace.SpanContext(
        trace_id=int(trace_id, 16),
        span_id=int(span_id, 16),
        is_remote=True,
        trace_flags=trace.TraceFlags(int(flags, 16)),
        trace_state=None,
    )
    return trace.set_span_in_context(trace.NonRecordingSpan(span_context), empty)


_UNSAMPLED_TRACEPARENT = re.compile(
    r"00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f][02468ace]"
)
"""Version 00, valid ids, the sampled flag (bit 0) clear: other flags may be set, e.g. the W3C
level-2 `random` flag (02) that the SDK sets on every trace it starts."""


def unsampled_as_is(headers: Mapping[str, str]) -> bool:
    """Whether sending under the context of the stored `headers` (`context_from_headers`, a
    producer span, `outgoing_headers`) would make no span and send `headers` unchanged: their
    `traceparent` is a canonical W3C one with the sampled flag clear, they carry no `tracestate`
    or `baggage`, the propagator is Mnemo's and the sampler follows the parent. An outbox relay
    then hands the stored headers on without those calls (one per event on the write path)."""
    header = headers.get(TRACEPARENT)
    if header is None or _UNSAMPLED_TRACEPARENT.fullmatch(header) is None:
        return False
    for name in headers:
        lowered = name.lower()
        if lowered in (TRACESTATE, BAGGAGE) or (lowered == TRACEPARENT and name != TRACEPARENT):
            return False
    return propagate.get_global_textmap() is W3C_PROPAGATOR and skips_unsampled_children()


def trace_id_of(ctx: otel_context.Context) -> str | None:
    """The 32-hex trace id in `ctx`, or None when it carries no valid span."""
    span_context = trace.get_current_span(ctx).get_span_context()
    if not span_context.is_valid:
        return None
    return format(span_context.trace_id, "032x")
