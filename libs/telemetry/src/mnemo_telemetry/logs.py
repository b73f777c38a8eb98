"""JSON log lines on stdout for a service: structlog for Mnemo's own code, and the standard
library's loggers (FastStream, aiokafka, uvicorn) rendered through the same processors, so every
line of a service's log is one JSON object carrying `service`, `level`, `timestamp` and, inside a
traced span, `trace_id` and `span_id` (and `tenant`, when the current span names one: every
Mnemo span of a tenant's work does, see `mnemo_telemetry.tracing`).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from typing import Any

import structlog
from opentelemetry import trace

from mnemo_telemetry.tracing import TENANT


def _add_trace_ids(
    _logger: object, _method: str, event: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    span = trace.get_current_span()
    span_context = span.get_span_context()
    if span_context.is_valid:
        event.setdefault("trace_id", format(span_context.trace_id, "032x"))
        event.setdefault("span_id", format(span_context.span_id, "016x"))
        attributes = getattr(span, "attributes", None)
        tenant = attributes.get(TENANT) if attributes else None
        if tenant is not None:
            event.setdefault("tenant", tenant)
    return event


def configure_logging(service: str, level: str = "INFO") -> None:
    """Send every log line of this process to stdout as JSON. Call once, from `main`."""
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        _add_trace_ids,
        lambda _l, _m, event: {"service": service, **event},
    ]
    structlog.configure(
        processors=[
            *shared,
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping()[level.upper()]
        ),
        logger_factory=structlog.PrintLoggerFactory(sys.stdout),
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[*shared, structlog.stdlib.add_logger_name],
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.format_exc_info,
                structlog.processors.JSONRenderer(),
            ],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # aiokafka reports every routine rebalance and reconnect at INFO; keep its warnings only.
    logging.getLogger("aiokafka").setLevel(max(logging.WARNING, root.level))
