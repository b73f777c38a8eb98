"""SQL spans from asyncpg's own query log: the one SQL instrumentation of a service.

Pass `trace_queries` as the `init` of every pool a service opens:

    pool = await asyncpg.create_pool(dsn, init=trace_queries)

asyncpg calls the logger after each `execute` / `fetch*` statement (in the context of the code
that ran it, with the statement's elapsed time), and it becomes a client span named like
`INSERT mnemo.outbox`, back-dated to when the statement started, under the span that was current
when the statement ran. A statement outside any recorded span (readiness pings, the outbox relay's
polling, and work the sampler dropped) makes no span and costs one check, so probes, idle loops
and unsampled records never fill the trace store nor spend CPU on it. COPY and prepared
statements are not in asyncpg's query log and make no span.
"""

from __future__ import annotations

import re
import time
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from mnemo_telemetry.tracing import (
    DB_COLLECTION,
    DB_OPERATION,
    DB_SYSTEM,
    tracer,
)

DB_QUERY_TEXT = "db.query.text"
QUERY_TEXT_LIMIT = 2_000
"""Statements are parameterised ($1, $2, …), so their text carries no values; long ones are cut."""

_OPERATION = re.compile(
    r"^\s*(?:--[^\n]*\n\s*)*(WITH|SELECT|INSERT|UPDATE|DELETE|MERGE|[A-Z]+)", re.I
)
_TABLE = re.compile(
    r"\b(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM|FROM|MERGE\s+INTO|INTO)\s+"
    r"((?:\"[^\"]+\"|[A-Za-z_][\w$]*)(?:\.(?:\"[^\"]+\"|[A-Za-z_][\w$]*))?)",
    re.I,
)


def span_name(query: str) -> tuple[str, str | None]:
    """The statement's operation and first table: `("INSERT", "mnemo.outbox")`."""
    match = _OPERATION.match(query)
    operation = match.group(1).upper() if match else "SQL"
    table_match = _TABLE.search(query)
    table = table_match.group(1) if table_match else None
    if operation == "WITH":
        body = re.search(r"\)\s*(SELECT|INSERT|UPDATE|DELETE)\b", query, re.I)
        operation = body.group(1).upper() if body else "SELECT"
    return operation, table


def record_query(record: Any) -> None:
    """asyncpg query-logger callback: one client span for one finished statement."""
    if not trace.get_current_span().is_recording():
        return
    query = str(record.query)
    operation, table = span_name(query)
    end = time.time_ns()
    start = end - int(float(record.elapsed) * 1e9)
    span = tracer().start_span(
        f"{operation} {table}" if table else operation,
        kind=SpanKind.CLIENT,
        start_time=start,
    )
    span.set_attribute(DB_SYSTEM, "postgresql")
    span.set_attribute(DB_OPERATION, operation)
    if table:
        span.set_attribute(DB_COLLECTION, table)
    span.set_attribute(DB_QUERY_TEXT, query[:QUERY_TEXT_LIMIT])
    error = record.exception
    if error is not None:
        span.record_exception(error)
        span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {error}"[:300]))
    span.end(end_time=end)


async def trace_queries(connection: Any) -> None:
    """asyncpg pool `init`: log this connection's statements as spans (see the module doc)."""
    connection.add_query_logger(record_query)
