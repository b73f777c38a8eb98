"""The read-only catalogue API (CORPUS.md A): the corpus registry and the routes, as the Control
Plane console and any caller with the `read` scope see them.

- `GET /v1/catalog/corpora`: published corpora; `?include=all` every row and the counts per status
  (needs the `admin` scope: drafts and deprecated rows are the operators' view);
- `GET /v1/catalog/corpora/{id}`: one row with its definition and its uses (a row that is not
  published needs `admin`); `GET /v1/catalog/corpora/{id}/uses`: every route version whose scope
  names the corpus, active or not, in any mode;
- `GET /v1/catalog/routes` and `GET /v1/catalog/routes/{route_id}` (every version of one route).

Every write verb on these paths answers 405 (declared in the OpenAPI document): corpora are
registered by `mnemo apply`, routes by `mnemo route apply`.
"""

# No `from __future__ import annotations`: FastAPI reads the annotations of the handlers.

import re
from collections import Counter
from datetime import datetime
from typing import Annotated, Any, Literal, Protocol

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import JSONResponse
from mnemo_auth import Principal, TokenVerifier
from mnemo_store.registry import STATUSES, CorpusRow, Route
from pydantic import BaseModel

from mnemo_navigator.errors import UnknownCorpusError
from mnemo_navigator.routes import ErrorBody, authenticate, error_response

_PRINCIPAL = "mnemo.principal"  # where TokenFirstMiddleware leaves the verified principal

CorpusPath = Annotated[
    str, Path(min_length=1, max_length=200, pattern=r"^[^\x00/]+$", description="corpus id")
]
RoutePath = Annotated[
    str, Path(min_length=1, max_length=200, pattern=r"^[^\x00/]+$", description="route id")
]


class RouteOut(BaseModel):
    route_id: str
    route_version: str
    mode: str
    scope: list[Any]
    active: bool
    updated_at: datetime | None


class CorpusOut(BaseModel):
    corpus_id: str
    display_name: str
    url: str
    collection: str
    auth: str
    owner: str
    status: str
    region: str | None
    updated_at: datetime
    kind: str
    version: str


class CorpusDetailOut(CorpusOut):
    definition: dict[str, Any]
    uses: list[RouteOut]


class CorporaOut(BaseModel):
    corpora: list[CorpusOut]
    counts: dict[str, int] | None
    """Rows per status (every status named), with `include=all` only."""


class RoutesOut(BaseModel):
    routes: list[RouteOut]


class RouteVersionsOut(BaseModel):
    route_id: str
    versions: list[RouteOut]


_ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": description}
    for status, description in {
        401: "no token, or an invalid, expired or wrongly signed one",
        403: "the token lacks the scope (`read`; `admin` for rows that are not published)",
        404: "no such corpus or route",
        405: "the catalogue is read-only",
        503: "the database is unavailable",
    }.items()
}


def principal_of(request: Request, verifier: TokenVerifier) -> Principal:
    """The principal `TokenFirstMiddleware` verified, or the header's (a router mounted without
    the middleware)."""
    verified = request.scope.get("state", {}).get(_PRINCIPAL)
    if isinstance(verified, Principal):
        return verified
    return authenticate(verifier, request.headers.get("authorization"))


class RegistryReads(Protocol):
    """What the catalogue reads (`PostgresRegistry` satisfies it)."""

    async def corpora(self) -> list[CorpusRow]: ...

    async def corpus(self, corpus_id: str) -> CorpusRow | None: ...

    async def routes(self) -> list[Route]: ...

    async def uses(self, corpus_id: str) -> list[Route]: ...


def route_out(route: Route) -> RouteOut:
    return RouteOut(
        route_id=route.route_id,
        route_version=route.route_version,
        mode=route.mode,
        scope=list(route.scope),
        active=route.active,
        updated_at=route.updated_at,
    )


def corpus_out(row: CorpusRow) -> CorpusOut:
    return CorpusOut(
        **{name: getattr(row, name) for name in CorpusOut.model_fields},
    )


def _read_only(path: str) -> JSONResponse:
    response = error_response(
        405,
        "METHOD_NOT_ALLOWED",
        f"{path} is read-only: corpora are registered by `mnemo apply`, routes by "
        "`mnemo route apply`",
    )
    response.headers["Allow"] = "GET"
    return response


def catalogue_router(registry: RegistryReads, verifier: TokenVerifier) -> APIRouter:
    router = APIRouter(prefix="/v1/catalog", tags=["catalogue"], responses=_ERRORS)

    def reader(request: Request) -> Principal:
        principal = principal_of(request, verifier)
        principal.require("read")
        return principal

    @router.get("/corpora", response_model=CorporaOut)
    async def corpora(
        request: Request,
        include: Annotated[
            Literal["published", "all"],
            Query(description="`all`: every status, with counts (admin scope)"),
        ] = "published",
    ) -> CorporaOut:
        principal = reader(request)
        rows = await registry.corpora()
        if include == "all":
            principal.require("admin")
            counts = Counter(row.status for row in rows)
            return CorporaOut(
                corpora=[corpus_out(row) for row in rows],
                counts={status: counts.get(status, 0) for status in STATUSES},
            )
        return CorporaOut(
            corpora=[corpus_out(row) for row in rows if row.status == "published"], counts=None
        )

    async def _corpus(request: Request, corpus_id: str) -> CorpusRow:
        principal = reader(request)
        row = await registry.corpus(corpus_id)
        if row is None:
            raise UnknownCorpusError(f"no corpus {corpus_id!r} in the registry")
        if row.status != "published":
            principal.require("admin")
        return row

    @router.get("/corpora/{corpus_id}", response_model=CorpusDetailOut)
    async def corpus(request: Request, corpus_id: CorpusPath) -> CorpusDetailOut:
        row = await _corpus(request, corpus_id)
        uses = await registry.uses(corpus_id)
        return CorpusDetailOut(
            **corpus_out(row).model_dump(),
            definition=row.definition,
            uses=[route_out(route) for route in uses],
        )

    @router.get("/corpora/{corpus_id}/uses", response_model=RoutesOut)
    async def uses(request: Request, corpus_id: CorpusPath) -> RoutesOut:
        await _corpus(request, corpus_id)
        found = await registry.uses(corpus_id)
        return RoutesOut(routes=[route_out(route) for route in found])

    @router.get("/routes", response_model=RoutesOut)
    async def routes(request: Request) -> RoutesOut:
        reader(request)
        found = await registry.routes()
        return RoutesOut(routes=[route_out(route) for route in found])

    @router.get("/routes/{route_id}", response_model=RouteVersionsOut)
    async def route(request: Request, route_id: RoutePath) -> RouteVersionsOut:
        reader(request)
        found = await registry.routes()
        versions = [route_out(r) for r in found if r.route_id == route_id]
        if not versions:
            raise UnknownCorpusError(f"no route {route_id!r}")
        return RouteVersionsOut(route_id=route_id, versions=versions)

    for path in (
        "/corpora",
        "/corpora/{corpus_id}",
        "/corpora/{corpus_id}/uses",
        "/routes",
        "/routes/{route_id}",
    ):

        async def refuse(request: Request) -> JSONResponse:
            return _read_only(request.url.path)

        router.add_api_route(
            path,
            refuse,
            methods=["POST", "PUT", "PATCH", "DELETE"],
            summary="Not allowed: the catalogue is read-only (405)",
            responses={405: {"model": ErrorBody, "description": "the catalogue is read-only"}},
            name=f"read_only_{path}",
            # The handler reads no parameter, but the document must still declare the path's.
            openapi_extra={
                "parameters": [
                    {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
                    for name in re.findall(r"\{(\w+)\}", path)
                ]
            },
        )

    return router
