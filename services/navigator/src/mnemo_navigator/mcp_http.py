"""MCP over streamable HTTP at `/mcp`, beside the HTTP API, with the same bearer authentication.

The tools and resources are `mnemo_client.mcp_server`'s, the ones `mnemo mcp serve` offers over
stdio, with the bearer token of the HTTP request that carried the call: the tenant and any pinned
scope come from that token exactly as for an HTTP caller, every call passes the same checks and is
audited as its HTTP twin. `navigate` and `retrieve` call their use cases directly, through the
functions their HTTP routes use (`caller_of`, the body models, `navigate_request`/`navigate_out`,
`retrieve_request`/`retrieve_out`, `api_error`): the principal is the one `TokenFirstMiddleware`
verified, and an error is the route's status, code and message. This saves a second HTTP
exchange per call (request and answer encoded and decoded again, the API's middleware, the token
verified twice, one log line). The other tools are answered by the navigator's own HTTP API in
process (an `httpx.ASGITransport` on the API's ASGI app).

`TokenFirstMiddleware` verifies the token before the MCP transport reads the body: a request
without a valid one gets the API's 401. The transport is stateless and answers JSON (no session
to pin to one navigator replica, no event stream). The SDK's DNS-rebinding protection (a check of
`Host` and `Origin`) is off: it guards servers a browser could reach without credentials, and
this endpoint answers nothing without a bearer token, which a browser never sends on its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from typing import TypeVar

import asyncpg
import httpx
from fastapi import FastAPI
from mcp.server.mcpserver import Context
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mnemo_auth import Principal, TokenVerifier
from mnemo_client import AsyncMnemoClient, RetryPolicy
from mnemo_client.errors import MnemoError, error_for
from mnemo_client.mcp_server import build_server
from mnemo_client.models import (
    NavigateRequest,
    NavigateResponse,
    RetrieveRequest,
    RetrieveResponse,
)
from mnemo_service import TRANSIENT
from mnemo_store.registry import list_corpora
from pydantic import ValidationError
from starlette.requests import Request
from starlette.routing import Route

from mnemo_navigator.corpus_forms import FormsNavigator
from mnemo_navigator.routes import (
    NavigateBody,
    RetrieveBody,
    TokenFirstMiddleware,
    api_error,
    authenticate,
    caller_of,
    corpus_id,
    invalid_request,
    navigate_out,
    navigate_request,
    retrieve_out,
    retrieve_request,
    verified_principal,
)

MCP_PATH = "/mcp"
T = TypeVar("T")
MAX_LISTED_CORPORA = 100
"""`list_corpora` over HTTP reports at most this many published store corpora (each is one
audited documents read)."""


def published_corpora(pool: asyncpg.Pool) -> Callable[[], Awaitable[Sequence[str]]]:
    """The ids of the published store corpora, read from the registry on each call."""

    async def ids() -> Sequence[str]:
        rows = await list_corpora(pool, kind="store_graph")
        return [row.corpus_id for row in rows if row.status == "published"][:MAX_LISTED_CORPORA]

    return ids


def _authorization(ctx: Context) -> str:
    request = ctx.request_context.request
    return request.headers.get("authorization", "") if isinstance(request, Request) else ""


def _principal(ctx: Context, verifier: TokenVerifier) -> Principal:
    """The principal `TokenFirstMiddleware` verified for the HTTP request carrying the call (or,
    should it not have, the bearer token verified now)."""
    request = ctx.request_context.request
    verified = verified_principal(request.scope) if isinstance(request, Request) else None
    return verified or authenticate(verifier, _authorization(ctx))


class ReadsInProcess:
    """`navigate` and `retrieve` answered by the use cases, exactly as their routes answer them:
    the same principal, body model, request, answer and error (as the `MnemoError` the HTTP
    client would raise for the route's answer)."""

    def __init__(self, navigator: FormsNavigator, verifier: TokenVerifier) -> None:
        self.navigator = navigator
        self.verifier = verifier

    async def navigate(
        self, ctx: Context, corpus: str, request: NavigateRequest
    ) -> NavigateResponse:
        with _as_answered():
            checked = _valid(("path", "corpus"), lambda: corpus_id.validate_python(corpus))
            body = _valid(("body",), lambda: NavigateBody.model_validate(request.model_dump()))
            who = caller_of(_principal(ctx, self.verifier))
            result = await self.navigator.navigate(who, checked, navigate_request(body))
        return NavigateResponse.model_validate(
            navigate_out(checked, result).model_dump(by_alias=True)
        )

    async def retrieve(
        self, ctx: Context, corpus: str, request: RetrieveRequest
    ) -> RetrieveResponse:
        with _as_answered():
            checked = _valid(("path", "corpus"), lambda: corpus_id.validate_python(corpus))
            body = _valid(("body",), lambda: RetrieveBody.model_validate(request.model_dump()))
            who = caller_of(_principal(ctx, self.verifier))
            result = await self.navigator.retrieve(who, checked, retrieve_request(body))
        return RetrieveResponse.model_validate(
            retrieve_out(checked, result).model_dump(by_alias=True)
        )


def _valid(where: tuple[str, ...], check: Callable[[], T]) -> T:
    """`check()`, or the 422 the route answers when its path or body fails the same check."""
    try:
        return check()
    except ValidationError as error:
        refused = invalid_request([{**e, "loc": (*where, *e["loc"])} for e in error.errors()])
        raise error_for(refused.status, refused.code, refused.message) from error


@contextmanager
def _as_answered() -> Iterator[None]:
    """An error of the use case raised as the `MnemoError` of the route's answer to it; an error
    the API does not map goes on as it is (a 500 there)."""
    try:
        yield
    except MnemoError:
        raise
    except Exception as error:
        answer = api_error(error, TRANSIENT)
        if answer is None:
            raise
        raise error_for(answer.status, answer.code, answer.message) from error


def mount_mcp(
    app: FastAPI,
    verifier: TokenVerifier,
    navigator: FormsNavigator,
    corpora: Callable[[], Awaitable[Sequence[str]]],
) -> AbstractAsyncContextManager[None]:
    """Serve MCP at `MCP_PATH` of `app`, while the returned context is entered (the lifespan
    enters it around its `yield`)."""
    api = httpx.ASGITransport(app=app)

    @asynccontextmanager
    async def client_of(ctx: Context) -> AsyncIterator[AsyncMnemoClient]:
        _, _, token = _authorization(ctx).partition(" ")
        # Verified by `TokenFirstMiddleware` before the call was read; the API verifies it again.
        async with AsyncMnemoClient(
            "http://navigator", token.strip() or "-", retry=RetryPolicy(attempts=1), transport=api
        ) as client:
            yield client

    server = build_server(client_of, corpora, ReadsInProcess(navigator, verifier))
    server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        json_response=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    manager = server.session_manager
    endpoint = TokenFirstMiddleware(StreamableHTTPASGIApp(manager), verifier, prefix=MCP_PATH)
    app.router.routes.append(Route(MCP_PATH, endpoint=endpoint))
    return _running(manager)


@asynccontextmanager
async def _running(manager: StreamableHTTPSessionManager) -> AsyncIterator[None]:
    """`manager` run in a task of its own: its task group must be left by the task that entered
    it, and a service may be stopped from another task than the one that started it."""
    started, stop = asyncio.Event(), asyncio.Event()

    async def run() -> None:
        async with manager.run():
            started.set()
            await stop.wait()

    task = asyncio.create_task(run(), name="mcp-sessions")
    waiting = asyncio.create_task(started.wait())
    await asyncio.wait({task, waiting}, return_when=asyncio.FIRST_COMPLETED)
    if task.done():
        waiting.cancel()
        task.result()  # raises what stopped it
    try:
        yield
    finally:
        stop.set()
        await task
