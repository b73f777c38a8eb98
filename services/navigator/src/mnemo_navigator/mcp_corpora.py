"""Form (b), MCP-bound corpora: `corpus X from mcp("<server>", "<uri prefix>")` served over the
official MCP SDK's client.

The declaration names a server; where it is, how to reach it and with which credentials is the
deployment's (`McpServer`, from `MNEMO_NAVIGATOR_MCP_SERVERS`, keyed by that name): a streamable
HTTP URL with optional headers, or a stdio command. For a request the navigator lists the server's
resources (`resources/list`, every page), keeps those whose URI starts with the declared prefix,
reads each (`resources/read`) and ranks their text for the query like an inline corpus; a hit's
`source_uri` is the resource URI and its tags the resource's MIME type. The listing and the texts
are kept for `ttl_seconds` per (server, prefix), so a burst of requests costs one round of reads.

A server that is not configured, cannot be reached, fails or times out is a 502 naming it
(`McpServerError`): never an empty answer that looks like "nothing matched".
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any

from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from pydantic import BaseModel, ConfigDict, Field, model_validator

from mnemo_navigator.corpus_forms import RankedText, rank
from mnemo_navigator.errors import NavigatorError
from mnemo_navigator.ports import CorpusEntry

MAX_RESOURCES = 1000
"""The most resources one corpus lists (a server offering more under the prefix is a 502)."""
MAX_RESOURCE_CHARS = 2_000_000
"""The longest text one resource may have (the navigator keeps the texts of a listing in memory;
a longer one is a 502 naming it, never a silently shortened document)."""


class McpServerError(NavigatorError):
    """The MCP server of a corpus is not configured, unreachable, failing or too slow."""

    status = 502
    code = "UPSTREAM_FAILED"


class McpServer(BaseModel):
    """How to reach one MCP server: `url` (streamable HTTP, with `headers`) or `command` (stdio,
    with `env`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    command: list[str] | None = None
    env: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _one_way_to_reach_it(self) -> McpServer:
        if (self.url is None) == (not self.command):
            raise ValueError("an MCP server is reached by exactly one of url or command")
        return self


@dataclass
class _Listing:
    expires: float
    documents: list[RankedText] = field(default_factory=list)


class McpCorpora:
    """`OtherForm` for MCP-bound corpora, with a listing cache per (server, prefix)."""

    def __init__(
        self,
        servers: Mapping[str, McpServer],
        *,
        ttl_seconds: float = 60.0,
        timeout_seconds: float = 10.0,
    ) -> None:
        self._servers = dict(servers)
        self._ttl = ttl_seconds
        self._timeout = timeout_seconds
        self._listings: dict[tuple[str, str], _Listing] = {}
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}
        self.reads = 0
        """How many times resources were listed and read (tests check the cache with it)."""

    async def retrieve(
        self, entry: CorpusEntry, query: str, k: int
    ) -> tuple[list[RankedText], str]:
        server, prefix = _binding(entry)
        documents = await self._documents(server, prefix)
        return rank(query, documents, k), server

    async def documents(self, entry: CorpusEntry) -> list[RankedText]:
        """Every resource under the corpus's prefix, from the listing cache."""
        server, prefix = _binding(entry)
        return list(await self._documents(server, prefix))

    async def _documents(self, server: str, prefix: str) -> list[RankedText]:
        key = (server, prefix)
        listing = self._listings.get(key)
        if listing is not None and listing.expires > time.monotonic():
            return listing.documents
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            listing = self._listings.get(key)
            if listing is not None and listing.expires > time.monotonic():
                return listing.documents
            documents = await self._read_all(server, prefix)
            self._listings[key] = _Listing(time.monotonic() + self._ttl, documents)
            return documents

    async def _read_all(self, server: str, prefix: str) -> list[RankedText]:
        config = self._servers.get(server)
        if config is None:
            raise McpServerError(
                f"MCP server {server!r} is not configured in this deployment (give its url or "
                "command in MNEMO_NAVIGATOR_MCP_SERVERS)"
            )
        try:
            async with asyncio.timeout(self._timeout):
                documents = await self._fetch(config, prefix)
        except McpServerError as error:
            raise McpServerError(f"MCP server {server!r}: {error}") from None
        except TimeoutError:
            raise McpServerError(
                f"MCP server {server!r} did not answer within {self._timeout:g} s"
            ) from None
        except Exception as error:
            raise McpServerError(f"MCP server {server!r} failed: {_reason(error)}") from None
        self.reads += 1
        return documents

    async def _fetch(self, config: McpServer, prefix: str) -> list[RankedText]:
        async with AsyncExitStack() as stack:
            if config.url is not None:
                http = await stack.enter_async_context(
                    create_mcp_http_client(headers=dict(config.headers))
                )
                target: Any = streamable_http_client(config.url, http_client=http)
            elif config.command:
                target = StdioServerParameters(
                    command=config.command[0], args=config.command[1:], env=dict(config.env)
                )
            else:
                raise McpServerError("an MCP server needs a url or a command")
            client = await stack.enter_async_context(
                Client(target, read_timeout_seconds=self._timeout)
            )
            uris: list[tuple[str, str, str]] = []
            cursor: str | None = None
            while True:
                listed = await client.list_resources(cursor=cursor)
                for resource in listed.resources:
                    uri = str(resource.uri)
                    if uri.startswith(prefix):
                        uris.append(
                            (uri, resource.title or resource.name, resource.mime_type or "")
                        )
                if len(uris) > MAX_RESOURCES:
                    raise McpServerError(
                        f"more than {MAX_RESOURCES} resources under {prefix!r}; declare a "
                        "narrower URI prefix"
                    )
                cursor = listed.next_cursor
                if not cursor:
                    break
            documents: list[RankedText] = []
            for uri, title, mime in uris:
                read = await client.read_resource(uri)
                text = checked_text(uri, "\n".join(_texts(read.contents)))
                documents.append(RankedText(uri, title, text, 0.0, uri, (mime,) if mime else ()))
            return documents


def checked_text(uri: str, text: str) -> str:
    """`text` of the resource `uri`, if it is at most `MAX_RESOURCE_CHARS` characters."""
    if len(text) > MAX_RESOURCE_CHARS:
        raise McpServerError(
            f"resource {uri!r} is {len(text)} characters, more than the {MAX_RESOURCE_CHARS} a "
            "corpus document may have; declare a URI prefix without it"
        )
    return text


def _binding(entry: CorpusEntry) -> tuple[str, str]:
    mcp = entry.definition.get("corpus", {}).get("mcp") or {}
    return str(mcp.get("server", "")), str(mcp.get("resource_uri", ""))


def _texts(contents: Sequence[Any]) -> list[str]:
    return [content.text for content in contents if isinstance(getattr(content, "text", None), str)]


def _reason(error: BaseException) -> str:
    """One line for the 502: the innermost cause of an exception group."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    text = str(error).splitlines()[0] if str(error) else ""
    return f"{type(error).__name__}: {text}"[:300] if text else type(error).__name__
