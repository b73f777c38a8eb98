"""Mnemo as an MCP server (the official `mcp` SDK; install the `mcp` extra): the tools `navigate`,
`retrieve`, `remember` and `list_corpora`, and resources for corpora and their documents, all
answered by the navigator's HTTP API through `AsyncMnemoClient` with the caller's token. The
server holds no key and no database: the navigator takes the tenant and any pinned scope from the
token, exactly as for any HTTP caller, and audits each call as its HTTP twin. `remember` writes
through `POST /v1/stores/{store}/rows`, the path of every write (outbox, Kafka, ingest).

Two transports: `mnemo mcp serve --url URL --token-env VAR [--corpus ID …]` runs it over stdio for
a desktop agent host, with one token (`serve_stdio`); the navigator serves it over streamable HTTP
at `/mcp` (`mnemo_navigator.mcp_http`), where each call takes the token of the HTTP request that
carries it (`build_server` with a `Clients` provider) and `navigate` and `retrieve` are answered in
process by the navigator's use cases (its `Reads`). `list_corpora` and the `mnemo://corpora`
resource list the corpora the server was given (`--corpus`; over HTTP, the published store
corpora), each with the revision the token reads it at, or the navigator's reason it may not.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Annotated, Literal, Protocol
from urllib.parse import quote

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from pydantic import BaseModel, Field, JsonValue

from mnemo_client.client import AsyncMnemoClient
from mnemo_client.errors import MnemoError, NotFoundError
from mnemo_client.models import (
    Document,
    NavigateRequest,
    NavigateResponse,
    RetrieveRequest,
    RetrieveResponse,
)

Clients = Callable[[Context], AbstractAsyncContextManager[AsyncMnemoClient]]
"""The client a call is answered with, from the call's context (over HTTP: its bearer token)."""
CorpusIds = Sequence[str] | Callable[[], Awaitable[Sequence[str]]]
"""The corpora `list_corpora` reports: fixed, or asked for on each call."""


class Reads(Protocol):
    """How `navigate` and `retrieve` calls of a corpus are answered; each raises `MnemoError` with
    the navigator's status, code and message when it may not be."""

    async def navigate(
        self, ctx: Context, corpus: str, request: NavigateRequest
    ) -> NavigateResponse: ...

    async def retrieve(
        self, ctx: Context, corpus: str, request: RetrieveRequest
    ) -> RetrieveResponse: ...


SERVER_NAME = "mnemo"
MAX_SCANNED_PAGES = 100
"""A document resource is found by paging through its corpus (the navigator has no one-document
endpoint): at most this many pages of 1000 documents."""

INSTRUCTIONS = (
    "Mnemo is a living knowledge graph of memories. Use `navigate` to walk from what matches a "
    "query along the graph's edges (supersedes, contradicts, cites...), `retrieve` for the k most "
    "similar documents, `remember` to write a memory (and edges from it) into a store, "
    "`list_corpora` to see which corpora you may read."
)


class CorpusStatus(BaseModel):
    id: str
    revision: int | None = Field(description="the graph revision served now; None on an error")
    error: str | None = Field(default=None, description="why this token may not read it")
    uri: str


class Corpora(BaseModel):
    corpora: list[CorpusStatus]


class Remembered(BaseModel):
    memory_event_id: uuid.UUID = Field(description="the memory's persist event")
    edge_event_ids: list[uuid.UUID] = Field(description="one persist event per edge, in order")
    processed: list[uuid.UUID] | None = Field(
        description="with `wait`: the events ingest processed within it (written, or refused and "
        "dead-lettered with the reason); None without"
    )


def corpus_uri(corpus: str) -> str:
    return f"mnemo://corpora/{quote(corpus, safe='')}"


def document_uri(corpus: str, document: str) -> str:
    return f"{corpus_uri(corpus)}/documents/{quote(document, safe='')}"


def _refused(error: MnemoError) -> ToolError:
    return ToolError(f"the navigator answered {error}")


def one_client(client: AsyncMnemoClient) -> Clients:
    """Every call answered by `client` (stdio: the server's one token)."""

    @asynccontextmanager
    async def use(_: Context) -> AsyncIterator[AsyncMnemoClient]:
        yield client

    return use


class ReadsOverHttp:
    """`navigate` and `retrieve` answered by the HTTP API through the call's client."""

    def __init__(self, clients: Clients) -> None:
        self.clients = clients

    async def navigate(
        self, ctx: Context, corpus: str, request: NavigateRequest
    ) -> NavigateResponse:
        async with self.clients(ctx) as client:
            return await client.navigate(
                corpus,
                request.query,
                from_=request.from_,
                budget=request.budget,
                where=request.where,
                params=request.params,
                mode=request.mode,
                direction=request.direction,
            )

    async def retrieve(
        self, ctx: Context, corpus: str, request: RetrieveRequest
    ) -> RetrieveResponse:
        async with self.clients(ctx) as client:
            return await client.retrieve(
                corpus, request.query, k=request.k, where=request.where, params=request.params
            )


def build_server(
    client: AsyncMnemoClient | Clients, corpora: CorpusIds, reads: Reads | None = None
) -> MCPServer:
    """The MCP server over `client` (or the client of each call); `corpora` are the corpus ids
    `list_corpora` reports; `reads` answers `navigate` and `retrieve` (by default `client`, over
    HTTP)."""
    server = MCPServer(SERVER_NAME, instructions=INSTRUCTIONS, version="0.1.0")
    clients = one_client(client) if isinstance(client, AsyncMnemoClient) else client
    answer = reads or ReadsOverHttp(clients)

    async def known() -> list[str]:
        ids = corpora if isinstance(corpora, Sequence) else await corpora()
        return list(dict.fromkeys(ids))

    async def statuses(ctx: Context) -> Corpora:
        async with clients(ctx) as client:
            return Corpora(corpora=[await _status(client, corpus) for corpus in await known()])

    @server.tool(
        description="Walk a corpus's knowledge graph from the documents matching `query` (or "
        "from the document `seed`), within `budget` steps; hits carry the edge they were "
        "reached by, and the documents they contradict."
    )
    async def navigate(
        ctx: Context,
        corpus: Annotated[str, Field(description="the corpus id")],
        query: Annotated[str, Field(description="what to look for, in words")],
        seed: Annotated[
            str | None, Field(description="a document id to start from (HTTP API: `from`)")
        ] = None,
        budget: Annotated[int | None, Field(description="how many steps at most (1-1000)")] = None,
        where: Annotated[str | None, Field(description="a filter over the documents")] = None,
        mode: Literal["mdn", "axon"] = "mdn",
        direction: Literal["out", "both"] = "both",
    ) -> NavigateResponse:
        request = NavigateRequest(
            query=query, from_=seed, budget=budget, where=where, mode=mode, direction=direction
        )
        try:
            return await answer.navigate(ctx, corpus, request)
        except MnemoError as error:
            raise _refused(error) from error

    @server.tool(description="The `k` documents of a corpus most similar to `query`.")
    async def retrieve(
        ctx: Context,
        corpus: Annotated[str, Field(description="the corpus id")],
        query: Annotated[str, Field(description="what to look for, in words")],
        k: Annotated[int, Field(description="how many documents (1-100)")] = 5,
        where: Annotated[str | None, Field(description="a filter over the documents")] = None,
    ) -> RetrieveResponse:
        request = RetrieveRequest(query=query, k=k, where=where)
        try:
            return await answer.retrieve(ctx, corpus, request)
        except MnemoError as error:
            raise _refused(error) from error

    @server.tool(
        description="Remember something: write one memory (a row of a corpus's documents store, "
        "e.g. id, title, body and the columns the store declares) and, optionally, edges from or "
        "to it (rows of the corpus's relations store: from, to, type, weight in (0, 1]), through "
        "ingest like every write. Needs a token with the `write` scope; an end-client's token "
        "writes inside its own scope only. With `wait` (seconds, up to 30) it returns once "
        "ingest has processed them."
    )
    async def remember(
        ctx: Context,
        store: Annotated[str, Field(description="the documents store to write the memory into")],
        memory: Annotated[
            dict[str, JsonValue], Field(description="the memory's columns and their values")
        ],
        edges: Annotated[
            list[dict[str, JsonValue]] | None,
            Field(description="edge rows to write with it (needs `edge_store`)"),
        ] = None,
        edge_store: Annotated[
            str | None, Field(description="the relations store the edges go to")
        ] = None,
        wait: Annotated[
            float | None, Field(description="seconds to wait until ingest has processed them")
        ] = None,
    ) -> Remembered:
        if edges and not edge_store:
            raise ToolError("edges need `edge_store`: the relations store they are rows of")
        try:
            async with clients(ctx) as client:
                written = await client.write(store, [memory], wait=wait)
                linked = (
                    await client.write(edge_store, edges, wait=wait)
                    if edges and edge_store
                    else None
                )
        except MnemoError as error:
            raise _refused(error) from error
        processed: list[uuid.UUID] | None = None
        if wait is not None:
            processed = list(written.processed or ())
            processed += list(linked.processed or ()) if linked is not None else []
        return Remembered(
            memory_event_id=written.event_ids[0],
            edge_event_ids=[] if linked is None else list(linked.event_ids),
            processed=processed,
        )

    @server.tool(
        description="The corpora this server serves, each with the graph revision your token "
        "reads it at, or the reason it may not."
    )
    async def list_corpora(ctx: Context) -> Corpora:
        return await statuses(ctx)

    if isinstance(client, AsyncMnemoClient):
        # A static resource gets no call context, so only a server of one token lists it.
        @server.resource(
            "mnemo://corpora",
            name="corpora",
            description="The corpora this server serves, as list_corpora answers.",
            mime_type="application/json",
        )
        async def corpora_resource() -> str:
            return Corpora(
                corpora=[await _status(client, corpus) for corpus in await known()]
            ).model_dump_json()

    @server.resource(
        "mnemo://corpora/{corpus}",
        name="corpus",
        description="A corpus: its revision and its first page of documents (id, title, uri).",
        mime_type="application/json",
    )
    async def corpus_resource(corpus: str, ctx: Context) -> str:
        try:
            async with clients(ctx) as client:
                page = await client.documents(corpus, limit=100)
        except NotFoundError as error:
            raise ResourceNotFoundError(str(error)) from error
        except MnemoError as error:
            raise ResourceError(str(error)) from error
        return json.dumps(
            {
                "id": corpus,
                "revision": page.revision,
                "documents": [
                    {"id": d.id, "title": d.title, "uri": document_uri(corpus, d.id)}
                    for d in page.documents
                ],
                "more": page.next_after is not None,
            }
        )

    @server.resource(
        "mnemo://corpora/{corpus}/documents/{document}",
        name="document",
        description="One document of a corpus: id, title, body, source_uri.",
        mime_type="application/json",
    )
    async def document_resource(corpus: str, document: str, ctx: Context) -> str:
        try:
            async with clients(ctx) as client:
                found = await _find(client, corpus, document)
        except NotFoundError as error:
            raise ResourceNotFoundError(str(error)) from error
        except MnemoError as error:
            raise ResourceError(str(error)) from error
        if found is None:
            raise ResourceNotFoundError(f"corpus {corpus!r} has no document {document!r}")
        return found.model_dump_json()

    return server


async def _status(client: AsyncMnemoClient, corpus: str) -> CorpusStatus:
    try:
        info = await client.corpus(corpus)
    except MnemoError as error:
        return CorpusStatus(id=corpus, revision=None, error=str(error), uri=corpus_uri(corpus))
    return CorpusStatus(id=corpus, revision=info.revision, uri=corpus_uri(corpus))


async def _find(client: AsyncMnemoClient, corpus: str, document: str) -> Document | None:
    after: str | None = None
    for _ in range(MAX_SCANNED_PAGES):
        page = await client.documents(corpus, after=after, limit=1000)
        for candidate in page.documents:
            if candidate.id == document:
                return candidate
        if page.next_after is None:
            return None
        after = page.next_after
    raise ResourceError(
        f"document {document!r} not among the first {MAX_SCANNED_PAGES * 1000} documents of "
        f"corpus {corpus!r}"
    )


async def serve_stdio(url: str, token: str, corpora: Sequence[str]) -> None:
    """Serve MCP over this process's stdin and stdout until the host closes them."""
    async with AsyncMnemoClient(url, token) as client:
        await build_server(client, corpora).run_stdio_async()
