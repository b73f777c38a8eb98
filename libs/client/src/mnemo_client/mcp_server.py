"""Mnemo as an MCP server (the official `mcp` SDK; install the `mcp` extra): the tools `navigate`,
`retrieve` and `list_corpora`, and resources for corpora and their documents, all answered by the
navigator's HTTP API through `AsyncMnemoClient` with the caller's token. The server is a separate
process holding no key and no database: the navigator takes the tenant and any pinned scope from
the token, exactly as for any HTTP caller, and audits each call as its HTTP twin.

`mnemo mcp serve --url URL --token-env VAR [--corpus ID …]` runs it over stdio for a desktop agent
host. The navigator has no endpoint that lists corpora yet: `list_corpora` and the `mnemo://corpora`
resource list the corpora the server was started with (`--corpus`), each with the revision the
token reads it at, or the navigator's reason it may not.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Annotated, Literal
from urllib.parse import quote

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from pydantic import BaseModel, Field

from mnemo_client.client import AsyncMnemoClient
from mnemo_client.errors import MnemoError, NotFoundError
from mnemo_client.models import Document, NavigateResponse, RetrieveResponse

SERVER_NAME = "mnemo"
MAX_SCANNED_PAGES = 100
"""A document resource is found by paging through its corpus (the navigator has no one-document
endpoint): at most this many pages of 1000 documents."""

INSTRUCTIONS = (
    "Mnemo is a living knowledge graph of memories. Use `navigate` to walk from what matches a "
    "query along the graph's edges (supersedes, contradicts, cites...), `retrieve` for the k most "
    "similar documents, `list_corpora` to see which corpora you may read."
)


class CorpusStatus(BaseModel):
    id: str
    revision: int | None = Field(description="the graph revision served now; None on an error")
    error: str | None = Field(default=None, description="why this token may not read it")
    uri: str


class Corpora(BaseModel):
    corpora: list[CorpusStatus]


def corpus_uri(corpus: str) -> str:
    return f"mnemo://corpora/{quote(corpus, safe='')}"


def document_uri(corpus: str, document: str) -> str:
    return f"{corpus_uri(corpus)}/documents/{quote(document, safe='')}"


def _refused(error: MnemoError) -> ToolError:
    return ToolError(f"the navigator answered {error}")


def build_server(client: AsyncMnemoClient, corpora: Sequence[str]) -> MCPServer:
    """The MCP server over `client`; `corpora` are the corpus ids `list_corpora` reports."""
    server = MCPServer(SERVER_NAME, instructions=INSTRUCTIONS, version="0.1.0")
    known = list(dict.fromkeys(corpora))

    async def statuses() -> Corpora:
        found = []
        for corpus in known:
            try:
                info = await client.corpus(corpus)
            except MnemoError as error:
                found.append(
                    CorpusStatus(id=corpus, revision=None, error=str(error), uri=corpus_uri(corpus))
                )
            else:
                found.append(
                    CorpusStatus(id=corpus, revision=info.revision, uri=corpus_uri(corpus))
                )
        return Corpora(corpora=found)

    @server.tool(
        description="Walk a corpus's knowledge graph from the documents matching `query` (or "
        "from the document `seed`), within `budget` steps; hits carry the edge they were "
        "reached by, and the documents they contradict."
    )
    async def navigate(
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
        try:
            return await client.navigate(
                corpus,
                query,
                from_=seed,
                budget=budget,
                where=where,
                mode=mode,
                direction=direction,
            )
        except MnemoError as error:
            raise _refused(error) from error

    @server.tool(description="The `k` documents of a corpus most similar to `query`.")
    async def retrieve(
        corpus: Annotated[str, Field(description="the corpus id")],
        query: Annotated[str, Field(description="what to look for, in words")],
        k: Annotated[int, Field(description="how many documents (1-100)")] = 5,
        where: Annotated[str | None, Field(description="a filter over the documents")] = None,
    ) -> RetrieveResponse:
        try:
            return await client.retrieve(corpus, query, k=k, where=where)
        except MnemoError as error:
            raise _refused(error) from error

    @server.tool(
        description="The corpora this server was started with, each with the graph revision "
        "your token reads it at, or the reason it may not."
    )
    async def list_corpora() -> Corpora:
        return await statuses()

    @server.resource(
        "mnemo://corpora",
        name="corpora",
        description="The corpora this server was started with, as list_corpora answers.",
        mime_type="application/json",
    )
    async def corpora_resource() -> str:
        return (await statuses()).model_dump_json()

    @server.resource(
        "mnemo://corpora/{corpus}",
        name="corpus",
        description="A corpus: its revision and its first page of documents (id, title, uri).",
        mime_type="application/json",
    )
    async def corpus_resource(corpus: str) -> str:
        try:
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
    async def document_resource(corpus: str, document: str) -> str:
        try:
            found = await _find(client, corpus, document)
        except NotFoundError as error:
            raise ResourceNotFoundError(str(error)) from error
        except MnemoError as error:
            raise ResourceError(str(error)) from error
        if found is None:
            raise ResourceNotFoundError(f"corpus {corpus!r} has no document {document!r}")
        return found.model_dump_json()

    return server


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
