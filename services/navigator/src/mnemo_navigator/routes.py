"""The HTTP API (ARCHITECTURE §5, CORPUS.md A): thin handlers that verify the bearer token,
decode the body, call a use case and encode its result. Every error answers
`{"error": {"code", "message"}}` with the status the OpenAPI document declares for it.

`TokenFirstMiddleware` verifies the token of every `/v1` request before anything reads its body
(FastAPI reads and parses a body before it resolves dependencies): a caller without a valid token
gets 401 for a 10 MB body without the navigator reading it.
"""

# No `from __future__ import annotations`: FastAPI reads the dependency annotations of handlers
# defined inside `api_router`, which must be evaluated where they are written.

from collections.abc import Sequence
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, FastAPI, Path, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from mnemo_auth import AuthError, InsufficientScopeError, Principal, TokenVerifier
from mnemo_events.tracing import current_traceparent
from mnemo_store.erasure import TenantErasedError
from mnemo_telemetry.http_limits import ASGIApp, Receive, Scope, Send, refuse
from opentelemetry import trace
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, TypeAdapter
from starlette.exceptions import HTTPException as StarletteHTTPException

from mnemo_navigator.corpus_forms import FormsNavigator
from mnemo_navigator.errors import NavigatorError
from mnemo_navigator.use_cases import (
    MAX_QUERY_CHARS,
    Caller,
    NavigateRequest,
    NavigateResult,
    RetrieveRequest,
    RetrieveResult,
    server_timing,
    source_uri,
)

# Text that reaches Postgres: no NUL character (Postgres text cannot hold one).
Text = Annotated[str, Field(pattern=r"^[^\x00]*$")]
CORPUS_ID_MAX_CHARS = 200
CORPUS_ID_PATTERN = r"^[^\x00/]+$"
Corpus = Annotated[
    str,
    Path(
        min_length=1,
        max_length=CORPUS_ID_MAX_CHARS,
        pattern=CORPUS_ID_PATTERN,
        description="corpus id",
    ),
]
corpus_id: TypeAdapter[str] = TypeAdapter(
    Annotated[
        str,
        StringConstraints(min_length=1, max_length=CORPUS_ID_MAX_CHARS, pattern=CORPUS_ID_PATTERN),
    ]
)
"""The corpus id of a path, checked where no path carries it (MCP's in-process `navigate`)."""
ParamValue = (
    Annotated[str, Field(pattern=r"^[^\x00]*$", max_length=4096)] | int | float | bool | None
)


class ErrorDetail(BaseModel):
    code: str
    message: str


class ErrorBody(BaseModel):
    error: ErrorDetail


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class NavigateBody(_Body):
    query: Annotated[str, Field(max_length=MAX_QUERY_CHARS, pattern=r"^[^\x00]*$")]
    from_: Annotated[str | None, Field(alias="from", max_length=1024, pattern=r"^[^\x00]*$")] = None
    budget: Annotated[int, Field(ge=1, le=1000)] | None = None
    where: Annotated[Text, Field(max_length=4096)] | None = None
    params: dict[Annotated[str, Field(max_length=200)], ParamValue] = Field(
        default_factory=dict, max_length=100
    )
    mode: Literal["mdn", "axon"] = "mdn"
    direction: Literal["out", "both"] = "both"


class ViaOut(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    from_: str = Field(alias="from")
    etype: str
    weight: float


class HitOut(BaseModel):
    id: str
    title: str
    score: float
    gain: float
    epr: float
    via: ViaOut | None
    restart: bool
    contradicts: list[str]
    source_uri: str


class NavigateOut(BaseModel):
    hits: list[HitOut]
    trail: str
    coverage: float
    diagnostics: dict[str, Any]
    revision: int


class RetrieveBody(_Body):
    query: Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS, pattern=r"^[^\x00]*$")]
    k: Annotated[int, Field(ge=1, le=100)] = 5
    where: Annotated[Text, Field(max_length=4096)] | None = None
    params: dict[Annotated[str, Field(max_length=200)], ParamValue] = Field(
        default_factory=dict, max_length=100
    )


class RetrievedOut(BaseModel):
    id: str
    title: str
    content: str
    similarity: Annotated[float, Field(ge=0, le=1)]
    source_uri: str


class RetrieveOut(BaseModel):
    items: list[RetrievedOut]


class SearchBody(_Body):
    """The search gateway's body: nothing beyond `collection` and `goal`; the goal's text (see
    `goal_text`) is bounded like a query (422 beyond `MAX_QUERY_CHARS`), the goal itself by the
    body limit."""

    collection: Annotated[str, Field(max_length=200)]
    goal: Annotated[dict[Annotated[str, Field(max_length=200)], Any], Field(max_length=100)]


class ChunkOut(BaseModel):
    id: str
    text: str
    tags: list[str]
    score: float
    source_uri: str
    corpus_id: str


class SearchOut(BaseModel):
    chunks: list[ChunkOut]


class DocumentOut(BaseModel):
    id: str
    title: str
    body: str | None
    source_uri: str


class DocumentsOut(BaseModel):
    documents: list[DocumentOut]
    next_after: str | None
    revision: int


_ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": description}
    for status, description in {
        400: "the body is not JSON",
        401: "no token, or an invalid, expired or wrongly signed one",
        403: "the token lacks the scope, names a tenant that does not exist, or is client-confined "
        "and the corpus has no pinned scope",
        404: "no such corpus",
        409: "the corpus is not published (the message names its status), has no relations "
        "to navigate (an inline or MCP-bound corpus), or is a declared corpus whose documents "
        "were not stored for its version",
        413: "the body is larger than the navigator accepts (MNEMO_NAVIGATOR_MAX_BODY_BYTES)",
        422: "the body, filter, parameters or seed are invalid (the message says which and why)",
        502: "the MCP server of an MCP-bound corpus is not configured, unreachable, failing or too "
        "slow (the message names it)",
        503: "the database is unavailable",
    }.items()
}

_bearer = HTTPBearer(auto_error=False, description="A Mnemo JWT: `mnemo token --tenant …`")


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


_PRINCIPAL = "mnemo.principal"
"""Where `TokenFirstMiddleware` leaves the verified principal in the request's state."""


def authenticate(verifier: TokenVerifier, authorization: str | None) -> Principal:
    """The principal of an `Authorization: Bearer <token>` header, or the 401 saying why not."""
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise ApiError(
            401, "UNAUTHENTICATED", "missing bearer token: send 'Authorization: Bearer <token>'"
        )
    try:
        return verifier.verify(token.strip())
    except AuthError as error:
        raise ApiError(401, "UNAUTHENTICATED", str(error)) from error


class TokenFirstMiddleware:
    """Verifies the bearer token of every `/v1` request before the body is read: a 401 closes the
    connection unread. The principal goes to the request's state for the handler."""

    def __init__(self, app: ASGIApp, verifier: TokenVerifier, prefix: str = "/v1/") -> None:
        self.app = app
        self.verifier = verifier
        self.prefix = prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and str(scope.get("path", "")).startswith(self.prefix):
            header = next(
                (v.decode("latin-1") for k, v in scope.get("headers", ()) if k == b"authorization"),
                None,
            )
            try:
                principal = authenticate(self.verifier, header)
            except ApiError as error:
                await refuse(send, error.status, error.code, error.message)
                return
            scope.setdefault("state", {})[_PRINCIPAL] = principal
        await self.app(scope, receive, send)


def verified_principal(scope: Scope) -> Principal | None:
    """The principal `TokenFirstMiddleware` verified for this request, if it did."""
    verified = scope.get("state", {}).get(_PRINCIPAL)
    return verified if isinstance(verified, Principal) else None


def caller_of(principal: Principal) -> Caller:
    """The use cases' caller: the principal, and the trace the request runs in."""
    span = trace.get_current_span().get_span_context()
    trace_id = format(span.trace_id, "032x") if span.is_valid else None
    return Caller(principal, trace_id, current_traceparent())


def api_error(error: Exception, unavailable: tuple[type[Exception], ...]) -> ApiError | None:
    """The answer the API gives for an error a use case raised; None for one it does not map
    (a bug: the API answers 500)."""
    if isinstance(error, ApiError):
        return error
    if isinstance(error, NavigatorError):
        return ApiError(error.status, error.code, str(error))
    if isinstance(error, InsufficientScopeError):
        return ApiError(403, "FORBIDDEN", str(error))
    if isinstance(error, TenantErasedError):
        # Erased between the request's tenant check and its write (`mnemo tenant erase`).
        return ApiError(403, "UNKNOWN_TENANT", f"unknown tenant {error.tenant}: it has been erased")
    if isinstance(error, unavailable):
        return ApiError(503, "UNAVAILABLE", f"database unavailable: {type(error).__name__}")
    return None


def invalid_request(errors: Sequence[Any]) -> ApiError:
    """The 422 of a body (or path) that failed validation, naming the first ten problems."""
    problems = "; ".join(
        f"{'.'.join(str(p) for p in item.get('loc', ()))}: {item.get('msg', '')}"
        for item in errors[:10]
    )
    return ApiError(422, "INVALID_REQUEST", problems or "invalid request")


def error_response(status: int, code: str, message: str) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse(
        {"error": {"code": code, "message": message}}, status_code=status, headers=headers
    )


def install_error_handlers(app: FastAPI, unavailable: tuple[type[Exception], ...]) -> None:
    async def _known(_: Request, error: Exception) -> JSONResponse:
        answer = api_error(error, unavailable)
        if answer is None:  # pragma: no cover - registered only for the kinds it maps
            raise error
        response = error_response(answer.status, answer.code, answer.message)
        if answer.status == 503:
            response.headers["Retry-After"] = "1"
        return response

    for known in (
        ApiError,
        NavigatorError,
        InsufficientScopeError,
        TenantErasedError,
        *unavailable,
    ):
        app.add_exception_handler(known, _known)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, error: StarletteHTTPException) -> JSONResponse:
        code = {
            400: "BAD_REQUEST",
            404: "NOT_FOUND",
            405: "METHOD_NOT_ALLOWED",
            413: "PAYLOAD_TOO_LARGE",
        }.get(error.status_code, "HTTP_ERROR")
        response = error_response(error.status_code, code, str(error.detail))
        response.headers.update(error.headers or {})
        return response

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, error: RequestValidationError) -> JSONResponse:
        answer = invalid_request(error.errors())
        return error_response(answer.status, answer.code, answer.message)


def navigate_request(body: NavigateBody) -> NavigateRequest:
    """The navigate use case's request for a checked body."""
    return NavigateRequest(
        query=body.query,
        seed=body.from_,
        budget=body.budget,
        where=body.where,
        params=body.params,
        mode=body.mode,
        direction=body.direction,
    )


def navigate_out(corpus: str, result: NavigateResult) -> NavigateOut:
    """The API's answer for a navigation of `corpus`."""
    nav = result.navigation
    return NavigateOut(
        hits=[
            HitOut(
                id=hit.id,
                title=hit.title,
                score=hit.score,
                gain=hit.gain,
                epr=hit.epr,
                via=None
                if hit.via is None
                else ViaOut(from_=hit.via.source, etype=hit.via.etype, weight=hit.via.weight),
                restart=hit.restart,
                contradicts=list(hit.contradicts),
                source_uri=source_uri(corpus, hit.id),
            )
            for hit in nav.hits
        ],
        trail=nav.trail,
        coverage=nav.coverage,
        diagnostics={**nav.diagnostics, "cache": result.cache},
        revision=result.revision,
    )


def retrieve_request(body: RetrieveBody) -> RetrieveRequest:
    """The retrieve use case's request for a checked body."""
    return RetrieveRequest(query=body.query, k=body.k, where=body.where, params=body.params)


def retrieve_out(corpus: str, result: RetrieveResult) -> RetrieveOut:
    """The API's answer for a retrieval from `corpus`."""
    return RetrieveOut(
        items=[
            RetrievedOut(
                id=item.id,
                title=item.title,
                content=item.body if item.body is not None else item.title,
                similarity=min(max(item.similarity, 0.0), 1.0),
                source_uri=result.source_uris.get(item.id) or source_uri(corpus, item.id),
            )
            for item in result.items
        ]
    )


def api_router(navigator: FormsNavigator, verifier: TokenVerifier) -> APIRouter:
    router = APIRouter(prefix="/v1", responses=_ERRORS)

    def caller(
        request: Request,
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    ) -> Caller:
        principal = verified_principal(request.scope) or authenticate(
            verifier, None if credentials is None else f"Bearer {credentials.credentials}"
        )
        return caller_of(principal)

    Who = Annotated[Caller, Depends(caller)]  # noqa: N806  (a type alias)

    @router.post("/corpora/{corpus}/navigate", response_model=NavigateOut)
    async def navigate(
        corpus: Corpus, body: NavigateBody, who: Who, response: Response
    ) -> NavigateOut:
        result = await navigator.navigate(who, corpus, navigate_request(body))
        response.headers["Server-Timing"] = server_timing(result.timings)
        return navigate_out(corpus, result)

    @router.post("/corpora/{corpus}/retrieve", response_model=RetrieveOut)
    async def retrieve(
        corpus: Corpus, body: RetrieveBody, who: Who, response: Response
    ) -> RetrieveOut:
        result = await navigator.retrieve(who, corpus, retrieve_request(body))
        if result.timings:
            response.headers["Server-Timing"] = server_timing(result.timings)
        return retrieve_out(corpus, result)

    @router.post("/corpora/{corpus}/search", response_model=SearchOut)
    async def search(corpus: Corpus, body: SearchBody, who: Who) -> SearchOut:
        result = await navigator.search(who, corpus, body.goal, collection=body.collection)
        return SearchOut(
            chunks=[
                ChunkOut(
                    id=item.id,
                    text=item.title if not item.body else f"{item.title}\n{item.body}",
                    tags=list(result.tags.get(item.id, ())),
                    score=min(max(item.similarity, 0.0), 1.0),
                    source_uri=result.source_uris.get(item.id) or source_uri(corpus, item.id),
                    corpus_id=corpus,
                )
                for item in result.items
            ]
        )

    @router.get("/corpora/{corpus}/documents", response_model=DocumentsOut)
    async def documents(
        corpus: Corpus,
        who: Who,
        after: Annotated[str | None, Query(max_length=1024, pattern=r"^[^\x00]*$")] = None,
        limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    ) -> DocumentsOut:
        page = await navigator.documents(who, corpus, after, limit)
        return DocumentsOut(
            documents=[
                DocumentOut(
                    id=doc.id,
                    title=doc.title,
                    body=doc.body,
                    source_uri=page.source_uris.get(doc.id) or source_uri(corpus, doc.id),
                )
                for doc in page.documents
            ],
            next_after=page.next_after,
            revision=page.revision,
        )

    return router
