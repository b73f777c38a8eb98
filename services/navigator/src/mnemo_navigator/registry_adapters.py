"""Adapters of the registry ports: `PostgresRegistry` reads routes and corpora through
`mnemo_store.registry` (the registry's one home) on the navigator's pool; `HttpGateway` POSTs a
prefetch's search to a gateway with httpx, bounded in time and in bytes."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

import asyncpg
import httpx
from mnemo_store.registry import (
    CorpusRow,
    Route,
    list_corpora,
    list_routes,
    read_corpus,
    read_route,
    routes_naming,
)

from mnemo_navigator.prefetch import GatewayError, GatewayReply


class PostgresRegistry:
    """`Registry` (and the catalogue's reads) over the navigator's pool."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool

    async def route(self, route_id: str, version: str | None) -> Route | None:
        return await read_route(self._pool, route_id, version)

    async def corpus(self, corpus_id: str) -> CorpusRow | None:
        return await read_corpus(self._pool, corpus_id)

    async def corpora(self) -> list[CorpusRow]:
        return await list_corpora(self._pool)

    async def routes(self) -> list[Route]:
        return await list_routes(self._pool)

    async def uses(self, corpus_id: str) -> list[Route]:
        return await routes_naming(self._pool, corpus_id)


class HttpGateway:
    """`Gateway` over one shared httpx client: at most `timeout` seconds per request (connect and
    the whole exchange), at most `max_bytes` of answer; redirects are not followed."""

    def __init__(self, timeout: float, max_bytes: int = 4 * 1024 * 1024) -> None:
        self._timeout = timeout
        self._max_bytes = max_bytes
        self._client = httpx.AsyncClient(
            timeout=httpx.Timeout(timeout), follow_redirects=False, trust_env=False
        )

    async def post(
        self, url: str, body: Mapping[str, Any], headers: Mapping[str, str]
    ) -> GatewayReply:
        try:
            async with (
                asyncio.timeout(self._timeout),
                self._client.stream(
                    "POST", url, content=json.dumps(body).encode("utf-8"), headers=dict(headers)
                ) as response,
            ):
                data = bytearray()
                async for part in response.aiter_bytes():
                    data.extend(part)
                    if len(data) > self._max_bytes:
                        raise GatewayError(f"answered more than {self._max_bytes} bytes")
                status = response.status_code
        except (TimeoutError, httpx.TimeoutException):
            raise GatewayError(f"did not answer within {self._timeout:g} s") from None
        except httpx.InvalidURL as error:
            raise GatewayError(f"has an unusable url ({error})") from None
        except httpx.HTTPError as error:
            raise GatewayError(f"could not be reached ({type(error).__name__})") from None
        try:
            parsed: object = json.loads(data)
        except ValueError:
            parsed = None
        return GatewayReply(status, parsed)

    async def close(self) -> None:
        await self._client.aclose()
