"""SQL spans from asyncpg's query log, log lines naming the span's tenant, and an exporter that
makes an absent collector cheap."""

from __future__ import annotations

import io
import json
import logging
import socket
import time
from types import SimpleNamespace

import pytest
import structlog
from mnemo_telemetry import tracing
from mnemo_telemetry.logs import configure_logging
from mnemo_telemetry.sql import record_query, span_name
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode


@pytest.fixture
def exported() -> InMemorySpanExporter:
    exporter = InMemorySpanExporter()
    tracing.configure_tracing("ingest", None, processor=SimpleSpanProcessor(exporter))
    return exporter


def logged(query: str, elapsed: float = 0.002, error: BaseException | None = None) -> object:
    return SimpleNamespace(query=query, elapsed=elapsed, exception=error)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("INSERT INTO mnemo.outbox (event_id) VALUES ($1)", ("INSERT", "mnemo.outbox")),
        ('SELECT id FROM "docs_ab12" WHERE id = $1', ("SELECT", '"docs_ab12"')),
        (
            "UPDATE mnemo.graph_revisions SET revision = revision + 1",
            ("UPDATE", "mnemo.graph_revisions"),
        ),
        ("WITH x AS (SELECT 1) INSERT INTO mnemo.inbox SELECT * FROM x", ("INSERT", "mnemo.inbox")),
        ("SELECT set_config('mnemo.tenant', $1, true)", ("SELECT", None)),
        ("BEGIN;", ("BEGIN", None)),
    ],
)
def test_a_statement_is_named_by_its_operation_and_first_table(
    query: str, expected: tuple[str, str | None]
) -> None:
    assert span_name(query) == expected


def test_a_statement_under_a_span_becomes_a_backdated_client_span_of_it(
    exported: InMemorySpanExporter,
) -> None:
    with tracing.persist_span(tenant="t", store="docs") as persist:
        before = time.time_ns()
        record_query(logged("INSERT INTO mnemo.outbox (a) VALUES ($1)", elapsed=0.5))
    sql = next(s for s in exported.get_finished_spans() if s.name == "INSERT mnemo.outbox")
    assert sql.kind is SpanKind.CLIENT
    assert sql.parent is not None
    assert sql.parent.span_id == persist.span.get_span_context().span_id
    assert sql.start_time is not None
    assert sql.start_time < before - 400_000_000
    assert sql.attributes is not None
    assert str(sql.attributes["db.query.text"]).startswith("INSERT INTO mnemo.outbox")


def test_a_statement_outside_any_span_makes_none_and_a_failure_marks_its_span(
    exported: InMemorySpanExporter,
) -> None:
    record_query(logged("SELECT 1"))
    assert exported.get_finished_spans() == ()
    with tracing.persist_span(tenant="t", store="docs"):
        record_query(logged("INSERT INTO docs VALUES ($1)", error=ValueError("duplicate key")))
    failed = next(s for s in exported.get_finished_spans() if s.name == "INSERT docs")
    assert failed.status.status_code is StatusCode.ERROR


def test_a_log_line_inside_a_tenants_span_names_the_tenant_and_the_trace(
    exported: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = io.StringIO()
    monkeypatch.setattr("sys.stdout", out)
    configure_logging("ingest")
    try:
        with tracing.persist_span(tenant="t-42", store="docs") as span:
            structlog.get_logger("test").info("row_written")
        line = json.loads(out.getvalue().strip().splitlines()[-1])
    finally:
        structlog.reset_defaults()
        logging.getLogger().handlers.clear()
    assert line["tenant"] == "t-42"
    assert line["service"] == "ingest"
    assert line["trace_id"] == span.trace_id


class Counting(SpanExporter):
    def __init__(self) -> None:
        self.calls = 0

    def export(self, spans: object) -> SpanExportResult:
        self.calls += 1
        return SpanExportResult.SUCCESS


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_without_a_collector_batches_are_dropped_at_once_and_resume_when_one_listens() -> None:
    port = closed_port()
    inner = Counting()
    exporter = tracing.TolerantExporter(inner, f"http://127.0.0.1:{port}/v1/traces", probe_every=0)
    spans: list[ReadableSpan] = []
    started = time.monotonic()
    for _ in range(5):
        assert exporter.export(spans) is SpanExportResult.FAILURE
    assert time.monotonic() - started < 1.0
    assert inner.calls == 0
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", port))
        listener.listen()
        assert exporter.export(spans) is SpanExportResult.SUCCESS
    assert inner.calls == 1
