"""The probe endpoints every service serves (ARCHITECTURE §7): `/healthz` (the process lives),
`/readyz` (the service can serve: every readiness check passes) and `/metrics` (Prometheus text
format).

A readiness check is an async callable returning None when ready or a short sentence saying what
is not; `/readyz` answers 503 with those sentences, and always 503 once the service is stopping.
Consumer checks (partitions assigned; for a service with an HTTP API, the broker reachable) never
decide readiness: an HTTP API serves with Kafka away, and a replica beyond the partition count is
still a ready one. `/readyz?consumers=true` adds them, for whoever waits until a consumer holds
partitions (tests, scripts); the consumers also report through `mnemo_consumer_partitions_assigned`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Annotated

from fastapi import APIRouter, FastAPI, Query, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest

from mnemo_telemetry.asgi import fastapi_telemetry

ReadinessCheck = Callable[[], Awaitable[str | None]]
CHECK_TIMEOUT_SECONDS = 2.0


def probe_router(
    service: str,
    checks: Mapping[str, ReadinessCheck],
    stopping: asyncio.Event,
    registry: CollectorRegistry = REGISTRY,
    consumer_checks: Mapping[str, ReadinessCheck] | None = None,
) -> APIRouter:
    """`/healthz`, `/readyz` and `/metrics` as a router (a FastAPI service includes it in its app)."""
    router = APIRouter()

    @router.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok", "service": service}

    @router.get("/readyz")
    async def readyz(consumers: Annotated[bool, Query()] = False) -> JSONResponse:
        problems: dict[str, str] = {}
        wanted = {**checks, **(consumer_checks or {})} if consumers else dict(checks)
        if stopping.is_set():
            problems["service"] = "stopping"
        else:
            names = list(wanted)
            results = await asyncio.gather(
                *(_run(wanted[name]) for name in names), return_exceptions=False
            )
            problems = {
                name: problem for name, problem in zip(names, results, strict=True) if problem
            }
        body = {
            "status": "ready" if not problems else "not ready",
            "service": service,
            "problems": problems,
        }
        return JSONResponse(body, status_code=200 if not problems else 503)

    @router.get("/metrics")
    async def metrics() -> Response:
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    return router


async def _run(check: ReadinessCheck) -> str | None:
    try:
        return await asyncio.wait_for(check(), CHECK_TIMEOUT_SECONDS)
    except TimeoutError:
        return f"no answer within {CHECK_TIMEOUT_SECONDS:g} s"
    except Exception as error:
        return f"{type(error).__name__}: {error}"


def probe_app(
    service: str,
    checks: Mapping[str, ReadinessCheck],
    stopping: asyncio.Event,
    consumer_checks: Mapping[str, ReadinessCheck] | None = None,
) -> FastAPI:
    """An app serving only the probes (for services with no HTTP API of their own)."""
    app = FastAPI(
        title=f"mnemo {service}",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        telemetry=fastapi_telemetry(),  # probes and scrapes are never traced
    )
    app.include_router(probe_router(service, checks, stopping, consumer_checks=consumer_checks))
    return app
