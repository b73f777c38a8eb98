"""HTTP requests get one server span (FastAPI's own, configured by `fastapi_telemetry`) joined to
the caller's trace, and a latency observation by route template and status; probes are measured,
not traced."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI, HTTPException
from mnemo_telemetry import tracing
from mnemo_telemetry.asgi import HttpMetricsMiddleware, fastapi_telemetry
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from prometheus_client import REGISTRY

SERVICE = "asgi-test"


CONFIGURED: list[tracing.Tracing] = []


@pytest.fixture
def exported() -> InMemorySpanExporter:
    exporter = InMemorySpanExporter()
    CONFIGURED[:] = [
        tracing.configure_tracing("asgi-test", None, processor=SimpleSpanProcessor(exporter))
    ]
    return exporter


def app() -> FastAPI:
    api = FastAPI(telemetry=fastapi_telemetry(CONFIGURED[0]))

    @api.post("/v1/corpora/{corpus}/navigate")
    async def navigate(corpus: str) -> dict[str, str]:
        if corpus == "broken":
            raise RuntimeError("boom")
        if corpus == "missing":
            raise HTTPException(404, "no such corpus")
        return {"corpus": corpus}

    @api.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    api.add_middleware(HttpMetricsMiddleware, service=SERVICE)
    return api


def client() -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app(), raise_app_exceptions=False)
    return httpx.AsyncClient(transport=transport, base_url="http://test")


def count(route: str, status: str) -> float:
    value = REGISTRY.get_sample_value(
        "mnemo_http_request_duration_seconds_count",
        {"service": SERVICE, "route": route, "method": "POST", "status": status},
    )
    return value or 0.0


async def test_a_request_is_one_span_named_by_its_route_in_the_callers_trace(
    exported: InMemorySpanExporter,
) -> None:
    before = count("/v1/corpora/{corpus}/navigate", "200")
    caller = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    async with client() as http:
        response = await http.post("/v1/corpora/notes/navigate", headers={"traceparent": caller})
    assert response.status_code == 200
    (span,) = exported.get_finished_spans()
    assert span.name == "POST /v1/corpora/{corpus}/navigate"
    assert format(span.context.trace_id, "032x") == "0af7651916cd43dd8448eb211c80319c"
    assert span.attributes is not None
    assert span.attributes["http.response.status_code"] == 200
    assert count("/v1/corpora/{corpus}/navigate", "200") == before + 1


async def test_a_refusal_is_measured_by_status_and_a_crash_fails_its_span(
    exported: InMemorySpanExporter,
) -> None:
    before_404 = count("/v1/corpora/{corpus}/navigate", "404")
    before_500 = count("/v1/corpora/{corpus}/navigate", "500")
    async with client() as http:
        assert (await http.post("/v1/corpora/missing/navigate")).status_code == 404
        assert (await http.post("/v1/corpora/broken/navigate")).status_code == 500
    assert count("/v1/corpora/{corpus}/navigate", "404") == before_404 + 1
    assert count("/v1/corpora/{corpus}/navigate", "500") == before_500 + 1
    refused, crashed = exported.get_finished_spans()
    assert refused.status.status_code is not StatusCode.ERROR
    assert crashed.status.status_code is StatusCode.ERROR


async def test_an_unknown_path_is_labelled_unmatched_not_by_its_raw_path(
    exported: InMemorySpanExporter,
) -> None:
    async with client() as http:
        assert (await http.post("/no/such/path/123")).status_code == 404
    assert count("unmatched", "404") >= 1
    assert (
        REGISTRY.get_sample_value(
            "mnemo_http_request_duration_seconds_count",
            {"service": SERVICE, "route": "/no/such/path/123", "method": "POST", "status": "404"},
        )
        is None
    )


async def test_probes_are_measured_but_not_traced(exported: InMemorySpanExporter) -> None:
    async with client() as http:
        assert (await http.get("/healthz")).status_code == 200
    assert exported.get_finished_spans() == ()
    assert REGISTRY.get_sample_value(
        "mnemo_http_request_duration_seconds_count",
        {"service": SERVICE, "route": "/healthz", "method": "GET", "status": "200"},
    )


async def test_the_probe_only_app_is_never_traced(exported: InMemorySpanExporter) -> None:
    import asyncio

    from mnemo_telemetry.probes import probe_app

    transport = httpx.ASGITransport(app=probe_app("probe-test", {}, asyncio.Event()))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
        for path in ("/healthz", "/readyz", "/metrics"):
            assert (await http.get(path)).status_code == 200
    assert exported.get_finished_spans() == ()


async def test_an_invented_method_adds_no_series_of_its_own() -> None:
    """Any caller, without a token, could send `FOO1`, `FOO2`, …: one new series each, served on
    /metrics and kept in memory for ever."""
    async with client() as http:
        for method in ("FOO1", "FOO2", "PROPFIND"):
            await http.request(method, "/nothing")
    names = {
        sample.labels["method"]
        for metric in REGISTRY.collect()
        if metric.name == "mnemo_http_request_duration_seconds"
        for sample in metric.samples
        if sample.labels.get("service") == SERVICE
    }
    assert not names & {"FOO1", "FOO2", "PROPFIND"}
    assert "other" in names
