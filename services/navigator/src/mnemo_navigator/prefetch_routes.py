"""`POST /v1/routes/{route_id}/prefetch` with `{"goal": object, "version"?: str}`: the route's
deterministic prefetch (`mnemo_navigator.prefetch`), answered as its slots and packed text."""

# No `from __future__ import annotations`: FastAPI reads the annotations of the handlers.

from typing import Annotated, Any

from fastapi import APIRouter, Path, Request
from mnemo_auth import TokenVerifier
from mnemo_events.tracing import current_traceparent
from opentelemetry import trace
from pydantic import BaseModel, ConfigDict, Field

from mnemo_navigator.catalogue_routes import principal_of
from mnemo_navigator.prefetch import Prefetcher
from mnemo_navigator.routes import ErrorBody
from mnemo_navigator.use_cases import Caller

RoutePath = Annotated[
    str, Path(min_length=1, max_length=200, pattern=r"^[^\x00/]+$", description="route id")
]


class PrefetchBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    goal: Annotated[dict[Annotated[str, Field(max_length=200)], Any], Field(max_length=100)]
    version: Annotated[str, Field(min_length=1, max_length=100, pattern=r"^[^\x00]*$")] | None = (
        None
    )


class PrefetchOut(BaseModel):
    route_id: str
    route_version: str
    slots: dict[str, dict[str, Any]]
    """`prefetch`: `{"chunks": [...]}`, every chunk in scope order; `prefetch:<corpus_id>`:
    `{"corpus_id", "chunks"}`. Every chunk has `id`, `text`, `tags` and `corpus_id`."""
    packed: str
    """One line per chunk: `[<corpus_id>:<chunk id>] <text>`."""


_ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": description}
    for status, description in {
        400: "the body is not JSON",
        401: "no token, or an invalid, expired or wrongly signed one",
        403: "the token lacks the `read` scope or names a tenant that does not exist",
        404: "no such route, or no such version (or no active version) of it",
        409: "the route is in mode `tool` (ROUTE_NOT_PREFETCH), or a corpus in its scope is not "
        "registered or not published (CORPUS_NOT_PUBLISHED; no gateway was asked)",
        422: "the body is invalid",
        502: "a gateway timed out, failed, or answered without `chunks` (GATEWAY_FAILED, naming the "
        "corpus), or no corpus returned any chunk (PREFETCH_EMPTY): prefetch fails closed",
        503: "the database is unavailable",
    }.items()
}


def prefetch_router(prefetcher: Prefetcher, verifier: TokenVerifier) -> APIRouter:
    router = APIRouter(prefix="/v1/routes", tags=["routes"], responses=_ERRORS)

    @router.post("/{route_id}/prefetch", response_model=PrefetchOut)
    async def prefetch(request: Request, route_id: RoutePath, body: PrefetchBody) -> PrefetchOut:
        principal = principal_of(request, verifier)
        span = trace.get_current_span().get_span_context()
        trace_id = format(span.trace_id, "032x") if span.is_valid else None
        caller = Caller(principal, trace_id, current_traceparent())
        result = await prefetcher.prefetch(
            caller,
            route_id,
            body.goal,
            body.version,
            authorization=request.headers.get("authorization"),
        )
        return PrefetchOut(
            route_id=result.route.route_id,
            route_version=result.route.route_version,
            slots=result.slots,
            packed=result.packed,
        )

    return router
