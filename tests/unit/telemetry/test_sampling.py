"""Sampling: the sampler and exporter come from the standard `OTEL_*` variables beside Mnemo's own,
and work the sampler drops makes no span while its trace id still travels on."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator, Sequence
from types import SimpleNamespace
from typing import Any

import pytest
from mnemo_events import PersistRow, new_envelope
from mnemo_events.consumer import Consumer, Received, Rejection, RetryPolicy
from mnemo_events.dead_letters import DeadLetter, Delivery
from mnemo_events.tracing import outgoing_headers
from mnemo_telemetry import sql, tracing
from mnemo_telemetry.errors import TelemetryConfigError
from opentelemetry import propagate, trace
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import DEFAULT_ON

TENANT = uuid.uuid4()
TOPIC = f"t-{uuid.uuid4().hex[:8]}"
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
UNSAMPLED = f"00-{TRACE_ID}-00f067aa0ba902b7-00"
SAMPLED = f"00-{TRACE_ID}-00f067aa0ba902b7-01"


@pytest.fixture(autouse=True)
def _no_otel_variables(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in (
        "OTEL_TRACES_SAMPLER",
        "OTEL_TRACES_SAMPLER_ARG",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_TRACES_EXPORTER",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
        "MNEMO_OTLP_ENDPOINT",
    ):
        monkeypatch.delenv(name, raising=False)
    yield
    # Later tests that do not configure tracing find the default sampler again.
    tracing.configure_tracing("test", None, sampler=DEFAULT_ON)


@pytest.fixture
def dropped(monkeypatch: pytest.MonkeyPatch) -> tuple[InMemorySpanExporter, list[str]]:
    """Tracing with a 0 ratio from the environment, exporting in memory, and the names of the
    spans started through Mnemo's tracer (the SDK makes a span object for each, recorded or not)."""
    monkeypatch.setenv("OTEL_TRACES_SAMPLER", "parentbased_traceidratio")
    monkeypatch.setenv("OTEL_TRACES_SAMPLER_ARG", "0")
    exporter = InMemorySpanExporter()
    configured = tracing.configure_tracing("ingest", None, processor=SimpleSpanProcessor(exporter))
    started: list[str] = []
    inner = configured.tracer()

    class Counting:
        def start_span(self, name: str, *args: Any, **kwargs: Any) -> trace.Span:
            started.append(name)
            return inner.start_span(name, *args, **kwargs)

        def start_as_current_span(self, name: str, *args: Any, **kwargs: Any) -> Any:
            started.append(name)
            return inner.start_as_current_span(name, *args, **kwargs)

    monkeypatch.setattr(tracing, "tracer", Counting)
    monkeypatch.setattr(sql, "tracer", Counting)
    return exporter, started


def test_the_sampler_comes_from_the_standard_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_TRACES_SAMPLER", "parentbased_traceidratio")
    monkeypatch.setenv("OTEL_TRACES_SAMPLER_ARG", "0.01")
    configured = tracing.configure_tracing_from("ingest", tracing.TracingSettings())
    description = configured.sampler.get_description()
    assert description.startswith("ParentBased{root:TraceIdRatioBased{0.01}")
    assert tracing.drops_unsampled_children(configured.sampler)
    assert tracing.sampler_from_env().get_description() == description


def test_without_sampler_variables_every_span_is_recorded_as_before() -> None:
    configured = tracing.configure_tracing("ingest", None)
    assert configured.sampler is DEFAULT_ON
    assert tracing.sampler_from(None) is DEFAULT_ON


@pytest.mark.parametrize(
    ("name", "argument", "expected"),
    [
        ("always_on", None, "AlwaysOnSampler"),
        ("ALWAYS_OFF", None, "AlwaysOffSampler"),
        ("traceidratio", "0.25", "TraceIdRatioBased{0.25}"),
        ("traceidratio", None, "TraceIdRatioBased{1.0}"),
        ("parentbased_always_off", None, "ParentBased{root:AlwaysOffSampler"),
    ],
)
def test_each_standard_sampler_name_is_understood(
    name: str, argument: str | None, expected: str
) -> None:
    assert tracing.sampler_from(name, argument).get_description().startswith(expected)


def test_a_sampler_name_that_is_not_standard_is_refused_with_the_known_ones() -> None:
    with pytest.raises(TelemetryConfigError, match="parentbased_traceidratio"):
        tracing.sampler_from("parentbased_ratio", "0.1")


@pytest.mark.parametrize("argument", ["one percent", "1.5", "-0.1"])
def test_a_ratio_outside_0_to_1_is_refused_with_an_example(argument: str) -> None:
    with pytest.raises(TelemetryConfigError, match=r"from 0 to 1, e\.g\. 0\.01"):
        tracing.sampler_from("parentbased_traceidratio", argument)


def test_the_standard_endpoints_stand_in_for_mnemos_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318")
    assert tracing.TracingSettings().traces_endpoint() == "http://collector:4318/v1/traces"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://collector:4318/custom")
    assert tracing.TracingSettings().traces_endpoint() == "http://collector:4318/custom"
    monkeypatch.setenv("MNEMO_OTLP_ENDPOINT", "http://jaeger:4318")
    assert tracing.TracingSettings().traces_endpoint() == "http://jaeger:4318/v1/traces"
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    assert tracing.TracingSettings().traces_endpoint() is None


def test_an_exporter_or_protocol_mnemo_does_not_speak_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    with pytest.raises(TelemetryConfigError, match="http/protobuf"):
        tracing.TracingSettings().traces_endpoint()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "zipkin")
    with pytest.raises(TelemetryConfigError, match="'otlp'"):
        tracing.TracingSettings().traces_endpoint()


def test_the_service_name_stays_mnemos_whatever_otel_service_name_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OTEL_SERVICE_NAME", "shared-name")
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "k8s.pod.name=ingest-0")
    attributes = tracing.configure_tracing("ingest", None).provider.resource.attributes
    assert attributes["service.name"] == "mnemo-ingest"
    assert attributes["k8s.pod.name"] == "ingest-0"


def delivery(offset: int, traceparent: str | None) -> Delivery:
    envelope = new_envelope(
        PersistRow(store="Docs", values={"title": "t"}),
        tenant=TENANT,
        producer="test",
        event_type="mnemo.persist.v1",
    )
    return Delivery(
        topic=TOPIC,
        partition=0,
        offset=offset,
        key=str(TENANT).encode(),
        value=envelope.model_dump_json().encode(),
        headers=(("traceparent", traceparent.encode()),) if traceparent else (),
    )


async def consumed(records: Sequence[Delivery]) -> list[Received[PersistRow]]:
    seen: list[Received[PersistRow]] = []

    async def handle(items: Sequence[Received[PersistRow]]) -> Sequence[Rejection]:
        seen.extend(items)
        for item in items:
            handle = tracing.start_persist_span(
                item.context, tenant=TENANT, store="Docs", event_id=item.envelope.event_id
            )
            with tracing.use_span(handle):
                sql.record_query(
                    SimpleNamespace(
                        query="INSERT INTO docs VALUES ($1)", elapsed=0.001, exception=None
                    )
                )
            handle.end()
        return []

    async def dead_letter(letters: Sequence[DeadLetter]) -> None:
        raise AssertionError([letter.reason for letter in letters])

    subject = Consumer(
        topic=TOPIC,
        group="mnemo.ingest",
        data_model=PersistRow,
        handler=handle,
        dead_letters=dead_letter,
        retry=RetryPolicy(max_attempts=1),
        stopping=asyncio.Event(),
    )
    await subject.process(records)
    return seen


async def test_an_unsampled_record_makes_no_span_yet_carries_its_trace_on(
    dropped: tuple[InMemorySpanExporter, list[str]],
) -> None:
    exporter, started = dropped
    [item] = await consumed([delivery(0, UNSAMPLED)])
    assert started == []  # no consumer, persist nor SQL span object, recorded or not
    assert exporter.get_finished_spans() == ()
    assert item.trace_id == TRACE_ID
    handle = tracing.start_persist_span(item.context, tenant=TENANT, store="Docs")
    assert not handle.recording
    assert handle.traceparent == UNSAMPLED  # what the outbox stores: the trace, not sampled
    with tracing.use_span(handle), tracing.producer_span("persisted") as sent:
        assert not sent.recording
        assert outgoing_headers()["traceparent"] == UNSAMPLED
    assert started == []


async def test_a_root_the_ratio_drops_still_gets_a_trace_id_but_no_recorded_span(
    dropped: tuple[InMemorySpanExporter, list[str]],
) -> None:
    exporter, started = dropped
    [item] = await consumed([delivery(0, None)])
    assert started == [f"process {TOPIC}"]  # the trace id is made where the trace starts
    assert exporter.get_finished_spans() == ()
    assert item.trace_id is not None
    carrier: dict[str, str] = {}
    propagate.inject(carrier, context=item.context)
    assert int(carrier["traceparent"].rsplit("-", 1)[1], 16) & 1 == 0  # not sampled


async def test_a_sampled_parent_is_still_traced_whatever_the_ratio(
    dropped: tuple[InMemorySpanExporter, list[str]],
) -> None:
    exporter, _ = dropped
    [item] = await consumed([delivery(0, SAMPLED)])
    names = sorted(span.name for span in exporter.get_finished_spans())
    assert names == ["INSERT docs", "mnemo.persist", f"process {TOPIC}"]
    assert {format(span.context.trace_id, "032x") for span in exporter.get_finished_spans()} == {
        TRACE_ID
    }
    assert item.trace_id == TRACE_ID


async def test_with_the_default_sampler_an_unsampled_parent_is_continued_and_recorded() -> None:
    # The default samples by the parent too: an unsampled producer's record makes no span, as
    # the OpenTelemetry SDK decided before; a record without a parent is recorded.
    exporter = InMemorySpanExporter()
    tracing.configure_tracing("ingest", None, processor=SimpleSpanProcessor(exporter))
    [unsampled, root] = await consumed([delivery(0, UNSAMPLED), delivery(1, None)])
    assert unsampled.trace_id == TRACE_ID
    assert root.trace_id is not None
    recorded = {format(span.context.trace_id, "032x") for span in exporter.get_finished_spans()}
    assert recorded == {root.trace_id}


def test_a_spans_traceparent_is_what_the_w3c_propagator_writes() -> None:
    tracing.configure_tracing("ingest", None, processor=SimpleSpanProcessor(InMemorySpanExporter()))
    handle = tracing.start_persist_span(None, tenant=TENANT, store="Docs")
    carrier: dict[str, str] = {}
    propagate.inject(carrier, context=handle.context)
    assert handle.recording
    assert handle.traceparent == carrier["traceparent"]
    handle.end()
