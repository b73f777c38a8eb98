"""OpenTelemetry tracing for a service: one tracer provider per process, OTLP export, W3C propagation,
and the spans Mnemo's work is made of, with fixed names and attribute keys.

    tracing = configure_tracing("navigator", settings.otlp_endpoint)   # in create_app(), once
    ...
    with navigate_span(tenant=t, corpus=c, mode="axon") as span:
        result = ...
        span.set(graph_documents=n, graph_edges=m, cache="hit", epr_iterations=k, hits=len(h))
    ...
    tracing.shutdown()                                                  # on the way out

One instrumentation per library: Kafka spans come from the events runtime (`consumer_span` /
`producer_span` here give them their names), SQL spans from the store (`sql_span`), HTTP server
spans from FastAPI's own instrumentation (configured by `mnemo_telemetry.asgi.fastapi_telemetry`).
Nothing here instruments a library automatically, so no hop is traced twice. With no endpoint the
spans still exist (their ids go into the log lines and onto the wire) but are exported nowhere.

Sampling is the standard `OTEL_TRACES_SAMPLER` / `OTEL_TRACES_SAMPLER_ARG` (`sampler_from_env`;
default `parentbased_always_on`: every span recorded). Work the sampler drops costs no span: when
a span's parent is valid but not sampled and the sampler follows its parent, the span helpers make
no span at all and hand back the parent's context (`SpanHandle.recording` is False), so the trace id
and the W3C `traceparent` (flag 00) still reach logs, audit rows and the events written on its behalf.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import urllib.parse
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Final, Literal

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.baggage.propagation import W3CBaggagePropagator
from opentelemetry.propagators.composite import CompositePropagator
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    ALWAYS_ON,
    DEFAULT_OFF,
    DEFAULT_ON,
    ParentBasedTraceIdRatio,
    Sampler,
    TraceIdRatioBased,
)
from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from mnemo_telemetry.errors import TelemetryConfigError

INSTRUMENTATION_NAME = "mnemo"
OTLP_TRACES_PATH = "/v1/traces"

log = logging.getLogger("mnemo_telemetry.tracing")

AttributeValue = str | bool | int | float
CacheResult = Literal["hit", "miss", "refresh"]

# Attribute keys: OpenTelemetry's semantic conventions where one exists, `mnemo.*` otherwise.
TENANT = "mnemo.tenant"
CORPUS = "mnemo.corpus"
STORE = "mnemo.store"
EVENT_ID = "mnemo.event_id"
MODE = "mnemo.navigate.mode"
GRAPH_DOCUMENTS = "mnemo.graph.documents"
GRAPH_EDGES = "mnemo.graph.edges"
CACHE_RESULT = "mnemo.graph.cache"
CACHE_HIT = "mnemo.graph.cache_hit"
EPR_ITERATIONS = "mnemo.epr.iterations"
HITS_RETURNED = "mnemo.hits.returned"
EDGES_PROPOSED = "mnemo.edges.proposed"
AUDIT_SEQ = "mnemo.audit.seq"
MESSAGING_SYSTEM = "messaging.system"
MESSAGING_DESTINATION = "messaging.destination.name"
MESSAGING_OPERATION = "messaging.operation.type"
MESSAGING_PARTITION = "messaging.destination.partition.id"
MESSAGING_OFFSET = "messaging.kafka.offset"
DB_SYSTEM = "db.system.name"
DB_OPERATION = "db.operation.name"
DB_COLLECTION = "db.collection.name"
HTTP_METHOD = "http.request.method"
HTTP_ROUTE = "http.route"
HTTP_STATUS = "http.response.status_code"


class TracingSettings(BaseSettings):
    """Where spans go and how many are kept, shared by every service.

    Mnemo's own variables: `MNEMO_OTLP_ENDPOINT` (an OTLP/HTTP collector base URL such as
    `http://127.0.0.1:4318`; unset exports nothing) and `MNEMO_DEPLOYMENT_ENVIRONMENT`. The standard
    OpenTelemetry ones beside them: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (the full traces URL, used
    as is) and `OTEL_EXPORTER_OTLP_ENDPOINT` (a base URL) when `MNEMO_OTLP_ENDPOINT` is unset,
    `OTEL_TRACES_EXPORTER` (`otlp`, or `none` to export nothing), `OTEL_EXPORTER_OTLP_PROTOCOL`
    (only `http/protobuf`), and `OTEL_TRACES_SAMPLER` / `OTEL_TRACES_SAMPLER_ARG`.

    A service's settings hold one: `tracing: TracingSettings = Field(default_factory=TracingSettings)`.
    """

    model_config = SettingsConfigDict(
        env_prefix="MNEMO_", frozen=True, extra="ignore", populate_by_name=True
    )

    otlp_endpoint: str | None = None
    deployment_environment: str | None = None
    otel_traces_endpoint: str | None = Field(None, alias="OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    otel_endpoint: str | None = Field(None, alias="OTEL_EXPORTER_OTLP_ENDPOINT")
    otel_traces_exporter: str | None = Field(None, alias="OTEL_TRACES_EXPORTER")
    otel_protocol: str | None = Field(None, alias="OTEL_EXPORTER_OTLP_PROTOCOL")
    traces_sampler: str | None = Field(None, alias="OTEL_TRACES_SAMPLER")
    traces_sampler_arg: str | None = Field(None, alias="OTEL_TRACES_SAMPLER_ARG")

    def traces_endpoint(self) -> str | None:
        """The OTLP/HTTP traces URL spans are exported to, or None to export nothing."""
        exporter = (self.otel_traces_exporter or "otlp").strip().lower()
        if exporter not in ("otlp", "none"):
            raise TelemetryConfigError(
                f"OTEL_TRACES_EXPORTER={self.otel_traces_exporter!r} is not supported: "
                "Mnemo exports traces with 'otlp' (OTLP/HTTP) or not at all ('none')"
            )
        protocol = (self.otel_protocol or "http/protobuf").strip().lower()
        if protocol != "http/protobuf":
            raise TelemetryConfigError(
                f"OTEL_EXPORTER_OTLP_PROTOCOL={self.otel_protocol!r} is not supported: Mnemo "
                "exports OTLP over HTTP ('http/protobuf', a collector's port 4318)"
            )
        if exporter == "none":
            return None
        if self.otlp_endpoint:
            return traces_url(self.otlp_endpoint)
        if self.otel_traces_endpoint:
            return _http_url(self.otel_traces_endpoint)
        if self.otel_endpoint:
            return traces_url(self.otel_endpoint)
        return None

    def sampler(self) -> Sampler:
        """The sampler `OTEL_TRACES_SAMPLER` / `OTEL_TRACES_SAMPLER_ARG` name (`sampler_from`)."""
        return sampler_from(self.traces_sampler, self.traces_sampler_arg)


W3C_PROPAGATOR: Final = CompositePropagator(
    [TraceContextTextMapPropagator(), W3CBaggagePropagator()]
)
"""The propagator `configure_tracing` installs (W3C `traceparent`/`tracestate`, then `baggage`).
One instance, so that `mnemo_events.tracing` can tell it is the one in place and read and write
the `traceparent` header directly on the per-record path."""


SAMPLERS: Mapping[str, Sampler | None] = {
    "always_on": ALWAYS_ON,
    "always_off": ALWAYS_OFF,
    "traceidratio": None,
    "parentbased_always_on": DEFAULT_ON,
    "parentbased_always_off": DEFAULT_OFF,
    "parentbased_traceidratio": None,
}
"""The `OTEL_TRACES_SAMPLER` values Mnemo accepts (the ratio ones are built from the argument)."""


def sampler_from(name: str | None, argument: str | None = None) -> Sampler:
    """The sampler an `OTEL_TRACES_SAMPLER` value and its `OTEL_TRACES_SAMPLER_ARG` name.

    Unset is `parentbased_always_on` (every span recorded, as before sampling existed);
    `parentbased_traceidratio` with `0.01` keeps 1 trace in 100, decided where the trace starts and
    followed by every service the trace reaches. The ratio samplers' argument is a number in
    [0, 1], 1.0 when unset. Unlike the OpenTelemetry SDK (which logs a warning and traces
    everything), a value that is not one of these is refused: a typo should not silently change
    what is traced, or what it costs."""
    key = (name or "parentbased_always_on").strip().lower()
    if key not in SAMPLERS:
        raise TelemetryConfigError(
            f"OTEL_TRACES_SAMPLER={name!r} is not a sampler Mnemo supports; use one of "
            f"{', '.join(SAMPLERS)}"
        )
    fixed = SAMPLERS[key]
    if fixed is not None:
        return fixed
    text = (argument or "").strip()
    try:
        ratio = float(text) if text else 1.0
    except ValueError:
        ratio = -1.0
    if not 0.0 <= ratio <= 1.0:
        raise TelemetryConfigError(
            f"OTEL_TRACES_SAMPLER_ARG={argument!r} is not a sampling ratio: {key} needs a number "
            "from 0 to 1, e.g. 0.01 to keep one trace in a hundred"
        )
    return (
        ParentBasedTraceIdRatio(ratio)
        if key.startswith("parentbased_")
        else TraceIdRatioBased(ratio)
    )


def sampler_from_env(environ: Mapping[str, str] | None = None) -> Sampler:
    """`sampler_from` of this process's `OTEL_TRACES_SAMPLER` / `OTEL_TRACES_SAMPLER_ARG`."""
    env = os.environ if environ is None else environ
    return sampler_from(env.get("OTEL_TRACES_SAMPLER"), env.get("OTEL_TRACES_SAMPLER_ARG"))


def drops_unsampled_children(sampler: Sampler) -> bool:
    """Whether `sampler` drops every span whose parent is not sampled (the parent-based ones do),
    so that such spans need not be made at all."""
    description = sampler.get_description()
    off = ALWAYS_OFF.get_description()
    return description.startswith("ParentBased{") and all(
        f"{which}ParentNotSampled:{off}" in description for which in ("remote", "local")
    )


@dataclass(frozen=True)
class Tracing:
    """What `configure_tracing` installed: the provider, and how to flush and stop it."""

    service: str
    endpoint: str | None
    provider: TracerProvider
    _tracer: trace.Tracer = field(init=False, repr=False, compare=False)
    _skips_unsampled: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Looked up once: `get_tracer` builds and compares an instrumentation scope on every call,
        # which cost more than the span itself on a per-record hot path.
        object.__setattr__(self, "_tracer", self.provider.get_tracer(INSTRUMENTATION_NAME))
        object.__setattr__(self, "_skips_unsampled", drops_unsampled_children(self.sampler))

    @property
    def sampler(self) -> Sampler:
        return self.provider.sampler

    def tracer(self) -> trace.Tracer:
        return self._tracer

    def force_flush(self, timeout_millis: int = 5_000) -> bool:
        return self.provider.force_flush(timeout_millis)

    def shutdown(self) -> None:
        """Export what is buffered and stop; call once when the service stops."""
        self.provider.shutdown()


_lock = threading.Lock()
_current: Tracing | None = None


def _http_url(endpoint: str) -> str:
    cleaned = endpoint.strip().rstrip("/")
    if not cleaned.startswith(("http://", "https://")):
        raise TelemetryConfigError(
            f"OTLP endpoint {endpoint!r} must be an http:// or https:// URL, e.g. http://127.0.0.1:4318"
        )
    return cleaned


def traces_url(endpoint: str) -> str:
    """The OTLP/HTTP traces URL for a collector base URL (`http://host:4318` → `…/v1/traces`)."""
    cleaned = _http_url(endpoint)
    if cleaned.endswith(OTLP_TRACES_PATH):
        return cleaned
    return cleaned + OTLP_TRACES_PATH


def configure_tracing(
    service: str,
    endpoint: str | None,
    *,
    version: str = "0.1.0",
    environment: str | None = None,
    processor: SpanProcessor | None = None,
    sampler: Sampler | None = None,
    traces_endpoint: str | None = None,
) -> Tracing:
    """Install this process's tracer provider; call it from `create_app()` only.

    `service` becomes `service.name` (`mnemo-<service>`; `OTEL_RESOURCE_ATTRIBUTES` adds others);
    `endpoint` is the OTLP/HTTP collector base URL from the service's settings (None exports
    nothing), `traces_endpoint` a full traces URL used as is instead. `processor` replaces the OTLP
    exporter (tests pass a `SimpleSpanProcessor(InMemorySpanExporter())`). `sampler` defaults to
    the one `OTEL_TRACES_SAMPLER` / `OTEL_TRACES_SAMPLER_ARG` name (`sampler_from_env`). The W3C
    `traceparent` and `baggage` propagators are installed for HTTP and Kafka headers.

    OpenTelemetry lets a process set its global provider once: the first call sets it, and a later
    call (tests building several apps) replaces the provider Mnemo's span helpers use.
    """
    global _current
    if not service:
        raise TelemetryConfigError("configure_tracing needs the service's name")
    attributes: dict[str, AttributeValue] = {
        "service.name": f"mnemo-{service}",
        "service.namespace": "mnemo",
        "service.version": version,
    }
    if environment:
        attributes["deployment.environment.name"] = environment
    provider = TracerProvider(
        resource=Resource.create(attributes),
        sampler=sampler if sampler is not None else sampler_from_env(),
    )
    if processor is not None:
        provider.add_span_processor(processor)
    elif traces_endpoint or endpoint:
        url = _http_url(traces_endpoint) if traces_endpoint else traces_url(endpoint or "")
        provider.add_span_processor(BatchSpanProcessor(_otlp_exporter(url)))
    propagate.set_global_textmap(W3C_PROPAGATOR)
    configured = Tracing(service=service, endpoint=endpoint, provider=provider)
    with _lock:
        if _current is None:
            trace.set_tracer_provider(provider)
        _current = configured
    return configured


def configure_tracing_from(service: str, settings: TracingSettings) -> Tracing:
    """`configure_tracing` with the endpoint, sampler and environment from a service's settings."""
    url = settings.traces_endpoint()
    named = settings.otlp_endpoint or settings.otel_traces_endpoint or settings.otel_endpoint
    return configure_tracing(
        service,
        named if url else None,
        traces_endpoint=url,
        environment=settings.deployment_environment,
        sampler=settings.sampler(),
    )


def _otlp_exporter(url: str) -> SpanExporter:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    # The OTLP exporter logs a warning per retry and an error per lost batch; TolerantExporter
    # says it once per outage instead.
    for name in (
        "opentelemetry.exporter.otlp.proto.http.trace_exporter",
        "opentelemetry.exporter.otlp.proto.http._common",
    ):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    # Headers, compression, certificates and a timeout come from the standard OTEL_EXPORTER_OTLP_*
    # variables, which the exporter reads itself; without a timeout there, 5 seconds.
    timeout_set = any(
        os.environ.get(f"OTEL_EXPORTER_OTLP_{part}TIMEOUT") for part in ("", "TRACES_")
    )
    exporter = (
        OTLPSpanExporter(endpoint=url) if timeout_set else OTLPSpanExporter(endpoint=url, timeout=5)
    )
    return TolerantExporter(exporter, url)


class TolerantExporter(SpanExporter):
    """An exporter that makes an absent collector cheap and quiet.

    After a failed export, batches are dropped without an HTTP attempt (the OTLP exporter would
    retry each one for seconds) until a TCP connection to the collector's port succeeds again,
    tried at most once per `probe_every` seconds. It logs one line when the collector goes away
    and one when it is back. So a service can always be given `MNEMO_OTLP_ENDPOINT`: spans reach
    a collector started later within about a second and a half (the batch delay aside)."""

    def __init__(self, inner: SpanExporter, url: str, probe_every: float = 1.0) -> None:
        self._inner = inner
        self._url = url
        parsed = urllib.parse.urlsplit(url)
        self._address = (
            parsed.hostname or "127.0.0.1",
            parsed.port or (443 if parsed.scheme == "https" else 80),
        )
        self._probe_every = probe_every
        self._next_probe = 0.0
        self._down = True  # until a connection proves otherwise: no seconds-long first failure
        self._warned = False
        self.dropped = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self._down and not self._reachable():
            self.dropped += len(spans)
            return SpanExportResult.FAILURE
        result = self._inner.export(spans)
        if result is SpanExportResult.SUCCESS:
            if self._down:
                log.info("exporting spans to %s", self._url)
            self._down, self._warned = False, False
            return result
        self._down = True
        self.dropped += len(spans)
        return result

    def _reachable(self) -> bool:
        now = time.monotonic()
        if now < self._next_probe:
            return False
        self._next_probe = now + self._probe_every
        try:
            socket.create_connection(self._address, timeout=0.25).close()
        except OSError:
            if not self._warned:
                log.warning(
                    "no trace collector answers at %s: spans are dropped meanwhile", self._url
                )
                self._warned = True
            return False
        return True

    def shutdown(self) -> None:
        self._inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self._inner.force_flush(timeout_millis)


def tracer() -> trace.Tracer:
    """Mnemo's tracer: the configured provider's, or the API's no-op one before configuration."""
    current = _current
    if current is None:
        return trace.get_tracer(INSTRUMENTATION_NAME)
    return current.tracer()


class SpanHandle:
    """A started span with typed setters for Mnemo's attributes (results known only at the end).

    `recording` is False when the sampler dropped the work: setting attributes, failing and
    ending then cost nothing. A handle made where the parent was not sampled holds no span of its
    own but the parent's context (`context`, `trace_id` and `traceparent` are the parent's)."""

    __slots__ = ("_parent", "recording", "span")

    def __init__(self, span: Span, parent: otel_context.Context | None = None) -> None:
        self.span = span
        self.recording = span.is_recording()
        self._parent = parent

    def set(self, **attributes: AttributeValue | None) -> None:
        """Set attributes by their short names (see `SHORT_NAMES`); None values are skipped."""
        if not self.recording:
            return
        for short, value in attributes.items():
            if value is None:
                continue
            key = SHORT_NAMES.get(short)
            if key is None:
                raise TelemetryConfigError(
                    f"unknown span attribute {short!r}; known: {', '.join(sorted(SHORT_NAMES))}"
                )
            self.span.set_attribute(key, value)
            if short == "cache":
                self.span.set_attribute(CACHE_HIT, value == "hit")

    def fail(self, reason: str) -> None:
        """Mark the span failed with a reason (for outcomes that are not exceptions: a 4xx, a DLT)."""
        if self.recording:
            self.span.set_status(Status(StatusCode.ERROR, reason))

    def end(self) -> None:
        """End a span from `start_span` (the context-manager helpers end theirs themselves)."""
        if self._parent is None:
            self.span.end()

    @property
    def trace_id(self) -> str | None:
        span_context = self.span.get_span_context()
        return format(span_context.trace_id, "032x") if span_context.is_valid else None

    @property
    def context(self) -> otel_context.Context:
        """A context whose current span is this one: the parent for work done on its behalf."""
        if self._parent is not None:
            return self._parent
        return trace.set_span_in_context(self.span)

    @property
    def traceparent(self) -> str | None:
        """This span's W3C `traceparent` (for an envelope's `trace` or an outbox record): what the
        W3C propagator writes, formatted directly (once per record on the write path)."""
        span_context = self.span.get_span_context()
        if not span_context.is_valid:
            return None
        return (
            f"00-{span_context.trace_id:032x}-{span_context.span_id:016x}-"
            f"{span_context.trace_flags:02x}"
        )


def skips_unsampled_children() -> bool:
    """Whether the tracing in place makes no span under a parent that is not sampled (its sampler
    follows the parent): then work in such a trace may skip the span calls altogether."""
    current = _current
    return current is not None and current._skips_unsampled


def _unsampled(parent: otel_context.Context | None) -> SpanHandle | None:
    """A handle over the parent's context when a span under `parent` (None: the current context)
    would be dropped: the parent is valid, not sampled, records nothing itself, and the sampler
    follows its parent. None when a span must be started."""
    current = _current
    if current is None or not current._skips_unsampled:
        return None
    span = trace.get_current_span(parent)
    span_context = span.get_span_context()
    if not span_context.is_valid or span_context.trace_flags.sampled or span.is_recording():
        return None
    return SpanHandle(span, parent if parent is not None else otel_context.get_current())


SHORT_NAMES: Mapping[str, str] = {
    "tenant": TENANT,
    "corpus": CORPUS,
    "store": STORE,
    "event_id": EVENT_ID,
    "mode": MODE,
    "graph_documents": GRAPH_DOCUMENTS,
    "graph_edges": GRAPH_EDGES,
    "cache": CACHE_RESULT,
    "epr_iterations": EPR_ITERATIONS,
    "hits": HITS_RETURNED,
    "edges_proposed": EDGES_PROPOSED,
    "audit_seq": AUDIT_SEQ,
    "partition": MESSAGING_PARTITION,
    "offset": MESSAGING_OFFSET,
    "status": HTTP_STATUS,
}


@contextmanager
def mnemo_span(
    name: str,
    *,
    kind: SpanKind = SpanKind.INTERNAL,
    parent: otel_context.Context | None = None,
    **attributes: AttributeValue | None,
) -> Iterator[SpanHandle]:
    """A span named `name`, current while the block runs; an exception ends it as an error.
    Under a parent the sampler dropped, no span: the parent's context is current instead."""
    skipped = _unsampled(parent)
    if skipped is not None:
        token = otel_context.attach(skipped.context) if parent is not None else None
        try:
            yield skipped
        finally:
            if token is not None:
                otel_context.detach(token)
        return
    with tracer().start_as_current_span(name, context=parent, kind=kind) as span:
        handle = SpanHandle(span)
        handle.set(**attributes)
        yield handle


def start_span(
    name: str,
    *,
    kind: SpanKind = SpanKind.INTERNAL,
    parent: otel_context.Context | None = None,
    **attributes: AttributeValue | None,
) -> SpanHandle:
    """A started span that is not made current; the caller ends it (`handle.end()`).

    For one span per record of a batch: each record's span is a child of that record's own trace
    context, while the batch's work runs once (`use_span` makes one of them current for it).
    Under a parent the sampler dropped, no span is started (see `SpanHandle`)."""
    skipped = _unsampled(parent)
    if skipped is not None:
        return skipped
    handle = SpanHandle(tracer().start_span(name, context=parent, kind=kind))
    handle.set(**attributes)
    return handle


@contextmanager
def _attached(handle: SpanHandle) -> Iterator[Span]:
    token = otel_context.attach(handle.context)
    try:
        yield handle.span
    finally:
        otel_context.detach(token)


def use_span(handle: SpanHandle) -> AbstractContextManager[Span]:
    """Make `handle`'s span current for a block without ending it (for a handle without a span of
    its own, its parent's context)."""
    if handle._parent is not None:
        return _attached(handle)
    return trace.use_span(
        handle.span, end_on_exit=False, record_exception=False, set_status_on_exception=False
    )


def current_span() -> SpanHandle:
    """The current span (a non-recording one outside any span), to add Mnemo's attributes to."""
    return SpanHandle(trace.get_current_span())


# The spans the work is made of. Each is a context manager yielding a SpanHandle.


def persist_span(
    *, tenant: str, store: str, event_id: str | None = None
) -> AbstractContextManager[SpanHandle]:
    """Ingest writing one persisted row (a document or an edge) and its outbox record."""
    return mnemo_span("mnemo.persist", tenant=tenant, store=store, event_id=event_id)


def start_persist_span(
    parent: otel_context.Context | None,
    *,
    tenant: str | uuid.UUID,
    store: str,
    event_id: str | uuid.UUID | None = None,
) -> SpanHandle:
    """`persist_span` for one record of a batch written together (not current; `end()` it).
    Ids may be passed as UUIDs: they are turned into text only for a recorded span."""
    skipped = _unsampled(parent)
    if skipped is not None:
        return skipped
    handle = SpanHandle(tracer().start_span("mnemo.persist", context=parent))
    if handle.recording:
        handle.set(
            tenant=str(tenant), store=store, event_id=None if event_id is None else str(event_id)
        )
    return handle


def classify_span(
    *, tenant: str, corpus: str, event_id: str | None = None
) -> AbstractContextManager[SpanHandle]:
    """The edge classifier turning one persisted document into edge rows (set `edges_proposed`)."""
    return mnemo_span("mnemo.classify", tenant=tenant, corpus=corpus, event_id=event_id)


def navigate_span(*, tenant: str, corpus: str, mode: str) -> AbstractContextManager[SpanHandle]:
    """One navigation; set `graph_documents`, `graph_edges`, `cache`, `epr_iterations`, `hits`."""
    return mnemo_span("mnemo.navigate", tenant=tenant, corpus=corpus, mode=mode)


def retrieve_span(*, tenant: str, corpus: str) -> AbstractContextManager[SpanHandle]:
    """One top-k retrieval; set `hits` (and `cache` when a cached graph served it)."""
    return mnemo_span("mnemo.retrieve", tenant=tenant, corpus=corpus)


def audit_append_span(
    *, tenant: str, event_id: str | None = None
) -> AbstractContextManager[SpanHandle]:
    """The audit service appending one link to a tenant's hash chain; set `audit_seq`."""
    return mnemo_span("mnemo.audit.append", tenant=tenant, event_id=event_id)


@contextmanager
def sql_span(
    operation: str, table: str | None = None, *, tenant: str | None = None
) -> Iterator[SpanHandle]:
    """One SQL statement or unit of work against Postgres (the store's only instrumentation)."""
    name = f"{operation} {table}" if table else operation
    with mnemo_span(name, kind=SpanKind.CLIENT, tenant=tenant) as handle:
        if handle.recording:
            handle.span.set_attribute(DB_SYSTEM, "postgresql")
            handle.span.set_attribute(DB_OPERATION, operation)
            if table:
                handle.span.set_attribute(DB_COLLECTION, table)
        yield handle


def producer_span(topic: str, *, tenant: str | None = None) -> AbstractContextManager[SpanHandle]:
    """Publishing to a topic; inject the headers (`mnemo_events.tracing.outgoing_headers`) inside.
    Under a current span the sampler dropped, the handle over it, with no generator (the relay
    opens one per outbox event)."""
    skipped = _unsampled(None)
    if skipped is not None:
        return nullcontext(skipped)
    return _producer_span(topic, tenant)


@contextmanager
def _producer_span(topic: str, tenant: str | None) -> Iterator[SpanHandle]:
    with mnemo_span(f"send {topic}", kind=SpanKind.PRODUCER, tenant=tenant) as handle:
        if handle.recording:
            handle.span.set_attribute(MESSAGING_SYSTEM, "kafka")
            handle.span.set_attribute(MESSAGING_DESTINATION, topic)
            handle.span.set_attribute(MESSAGING_OPERATION, "send")
        yield handle


@contextmanager
def consumer_span(
    topic: str,
    parent: otel_context.Context | None,
    *,
    tenant: str | None = None,
    partition: int | None = None,
    offset: int | None = None,
) -> Iterator[SpanHandle]:
    """Processing one consumed message, as a child of the producer's context (from its headers)."""
    handle = start_consumer_span(topic, parent, tenant=tenant, partition=partition, offset=offset)
    try:
        with use_span(handle):
            yield handle
    except BaseException as error:
        if handle.recording:
            handle.span.record_exception(error)
            handle.fail(f"{type(error).__name__}: {error}")
        raise
    finally:
        handle.end()


def start_consumer_span(
    topic: str,
    parent: otel_context.Context | None,
    *,
    tenant: str | None = None,
    partition: int | None = None,
    offset: int | None = None,
) -> SpanHandle:
    """`consumer_span` for one record of a batch (not current; `end()` it)."""
    skipped = _unsampled(parent)
    if skipped is not None:
        return skipped
    handle = SpanHandle(
        tracer().start_span(f"process {topic}", context=parent, kind=SpanKind.CONSUMER)
    )
    if handle.recording:
        handle.set(
            tenant=tenant,
            partition=str(partition) if partition is not None else None,
            offset=offset,
        )
        handle.span.set_attribute(MESSAGING_SYSTEM, "kafka")
        handle.span.set_attribute(MESSAGING_DESTINATION, topic)
        handle.span.set_attribute(MESSAGING_OPERATION, "process")
    return handle
