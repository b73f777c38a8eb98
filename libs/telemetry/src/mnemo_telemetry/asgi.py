"""HTTP instrumentation for a service's FastAPI app, one instrumentation per concern:

- spans: FastAPI's own OpenTelemetry support (one server span per request, named by the route
  template, continuing the caller's `traceparent`), configured by `fastapi_telemetry()` so that it
  uses Mnemo's tracer provider, skips the probes, and adds no per-dependency spans, no OpenTelemetry
  metrics and no OpenTelemetry log records (Prometheus and structlog own those);
- metrics: `HttpMetricsMiddleware`, `mnemo_http_request_duration_seconds` by route template
  (never the raw path; `unmatched` when no route matched), method (`other` for a method outside
  the standard ones, which any unauthenticated caller could otherwise invent, a new series each)
  and status.

    app = FastAPI(telemetry=fastapi_telemetry(tracing))
    app.add_middleware(HttpMetricsMiddleware, service="navigator")
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from fastapi.telemetry import TelemetryConfig

from mnemo_telemetry.metrics import HTTP_REQUEST_DURATION
from mnemo_telemetry.tracing import Tracing

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

UNTRACED_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})
UNMATCHED = "unmatched"
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
OTHER_METHOD = "other"


def is_probe(scope: MutableMapping[str, Any]) -> bool:
    """Probe and metrics requests: measured, never traced (a scrape every few seconds would bury
    the traces people look for)."""
    return scope.get("path") in UNTRACED_PATHS


def fastapi_telemetry(tracing: Tracing | None = None) -> TelemetryConfig:
    """The `telemetry=` argument of `FastAPI(...)` for a Mnemo service (or its probe app)."""
    return {
        "tracer_provider": tracing.provider if tracing is not None else None,
        "tracing": True,
        "metrics": False,
        "logs": False,
        "operation_spans": False,
        "auto_configure": False,
        "exclude": is_probe,
    }


class HttpMetricsMiddleware:
    def __init__(self, app: ASGIApp, service: str) -> None:
        self.app = app
        self.service = service

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method = str(scope.get("method", "GET"))
        if method not in METHODS:
            method = OTHER_METHOD
        status = 500
        started = time.perf_counter()

        async def send_and_note_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_and_note_status)
        finally:
            HTTP_REQUEST_DURATION.labels(
                service=self.service, route=route_template(scope), method=method, status=str(status)
            ).observe(time.perf_counter() - started)


def route_template(scope: Scope) -> str:
    """The template of the route the router matched (set in the scope by Starlette/FastAPI)."""
    route = scope.get("route")
    template = getattr(route, "path", None)
    return template if isinstance(template, str) and template else UNMATCHED
