"""Tracing set-up: spans carry Mnemo's attributes, join the caller's trace, and export over OTLP."""

from __future__ import annotations

import pytest
from mnemo_telemetry import tracing
from mnemo_telemetry.errors import TelemetryConfigError
from mnemo_telemetry.metrics import METRIC_NAMES
from opentelemetry import propagate
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode


@pytest.fixture
def exported() -> InMemorySpanExporter:
    exporter = InMemorySpanExporter()
    tracing.configure_tracing("navigator", None, processor=SimpleSpanProcessor(exporter))
    return exporter


def by_name(exporter: InMemorySpanExporter) -> dict[str, ReadableSpan]:
    return {span.name: span for span in exporter.get_finished_spans()}


def test_a_navigation_span_carries_the_attributes_operators_filter_on(
    exported: InMemorySpanExporter,
) -> None:
    with tracing.navigate_span(tenant="t-1", corpus="notes", mode="axon") as span:
        span.set(graph_documents=120, graph_edges=340, cache="hit", epr_iterations=17, hits=5)
    finished = by_name(exported)["mnemo.navigate"]
    assert finished.attributes == {
        "mnemo.tenant": "t-1",
        "mnemo.corpus": "notes",
        "mnemo.navigate.mode": "axon",
        "mnemo.graph.documents": 120,
        "mnemo.graph.edges": 340,
        "mnemo.graph.cache": "hit",
        "mnemo.graph.cache_hit": True,
        "mnemo.epr.iterations": 17,
        "mnemo.hits.returned": 5,
    }
    assert finished.resource.attributes["service.name"] == "mnemo-navigator"


def test_a_span_inside_another_is_its_child_in_the_same_trace(
    exported: InMemorySpanExporter,
) -> None:
    with tracing.persist_span(tenant="t", store="docs", event_id="e-1"):  # noqa: SIM117
        with tracing.sql_span("INSERT", "docs", tenant="t"):
            pass
    spans = by_name(exported)
    parent, child = spans["mnemo.persist"], spans["INSERT docs"]
    assert child.parent is not None
    assert child.parent.span_id == parent.context.span_id
    assert child.context.trace_id == parent.context.trace_id
    assert child.kind is SpanKind.CLIENT
    assert child.attributes is not None
    assert child.attributes["db.system.name"] == "postgresql"


def test_a_consumer_span_continues_the_trace_its_message_carries(
    exported: InMemorySpanExporter,
) -> None:
    with tracing.producer_span("mnemo.persist.v1", tenant="t") as sent:
        carrier: dict[str, str] = {}
        propagate.inject(carrier)
    assert carrier["traceparent"].split("-")[1] == sent.trace_id
    parent = propagate.extract(carrier)
    with (
        tracing.consumer_span("mnemo.persist.v1", parent, tenant="t", partition=2, offset=41),
        tracing.classify_span(tenant="t", corpus="notes") as classify,
    ):
        classify.set(edges_proposed=3)
    spans = by_name(exported)
    consumed = spans["process mnemo.persist.v1"]
    assert consumed.kind is SpanKind.CONSUMER
    assert consumed.context.trace_id == spans["send mnemo.persist.v1"].context.trace_id
    assert consumed.attributes is not None
    assert consumed.attributes["messaging.destination.partition.id"] == "2"
    assert spans["mnemo.classify"].context.trace_id == consumed.context.trace_id


def test_an_exception_ends_the_span_as_an_error_and_still_propagates(
    exported: InMemorySpanExporter,
) -> None:
    with pytest.raises(RuntimeError, match="chain broken"):  # noqa: SIM117
        with tracing.audit_append_span(tenant="t"):
            raise RuntimeError("chain broken")
    failed = by_name(exported)["mnemo.audit.append"]
    assert failed.status.status_code is StatusCode.ERROR
    assert [event.name for event in failed.events] == ["exception"]


def test_an_outcome_that_is_not_an_exception_can_mark_the_span_failed(
    exported: InMemorySpanExporter,
) -> None:
    with tracing.retrieve_span(tenant="t", corpus="c") as span:
        span.fail("corpus is draft")
    assert by_name(exported)["mnemo.retrieve"].status.description == "corpus is draft"


def test_an_unknown_attribute_name_is_refused_with_the_known_ones(
    exported: InMemorySpanExporter,
) -> None:
    with (
        pytest.raises(TelemetryConfigError, match=r"unknown span attribute 'hitz'.*hits"),
        tracing.retrieve_span(tenant="t", corpus="c") as span,
    ):
        span.set(hitz=3)


@pytest.mark.parametrize(
    ("endpoint", "url"),
    [
        ("http://127.0.0.1:4318", "http://127.0.0.1:4318/v1/traces"),
        ("http://collector:4318/", "http://collector:4318/v1/traces"),
        ("https://otel.example:443/v1/traces", "https://otel.example:443/v1/traces"),
    ],
)
def test_the_otlp_endpoint_is_a_collector_base_url(endpoint: str, url: str) -> None:
    assert tracing.traces_url(endpoint) == url


def test_an_endpoint_that_is_not_a_url_is_refused_with_an_example() -> None:
    with pytest.raises(TelemetryConfigError, match=r"http://127\.0\.0\.1:4318"):
        tracing.configure_tracing("ingest", "127.0.0.1:4318")


def test_every_contract_metric_is_registered_under_its_documented_name_and_type() -> None:
    from prometheus_client import REGISTRY

    families = {family.name: family.type for family in REGISTRY.collect()}
    for name in METRIC_NAMES:
        if name.endswith("_total"):
            assert families.get(name.removesuffix("_total")) == "counter", name
        else:
            assert families.get(name) in {"histogram", "gauge"}, name


def test_the_endpoint_comes_from_the_shared_environment_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MNEMO_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    monkeypatch.setenv("MNEMO_DEPLOYMENT_ENVIRONMENT", "ci")
    configured = tracing.configure_tracing_from("audit", tracing.TracingSettings())
    try:
        assert configured.endpoint == "http://127.0.0.1:4318"
        assert configured.provider.resource.attributes["deployment.environment.name"] == "ci"
        assert configured.provider.resource.attributes["service.name"] == "mnemo-audit"
    finally:
        configured.shutdown()
