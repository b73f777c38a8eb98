"""The navigator served by its real runtime (uvicorn on an ephemeral port, in this process): a
connection that sends nothing, or only part of a request head, is closed after the header time-out,
and connections beyond the cap close the least recently active idle ones instead of piling up
(uvicorn kept every such connection open until the process ran out of file descriptors)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import httpx
import pytest
from mnemo_auth import DEVELOPMENT_SECRET
from mnemo_navigator.settings import Settings

from tests.infrastructure import free_port
from tests.integration.navigator.conftest import navigator_dsn, serving_navigator

pytestmark = pytest.mark.timeout(60)

CAP = 20


@pytest.fixture
async def port(app_dsn: str, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[int]:
    monkeypatch.setenv("MNEMO_HTTP_MAX_CONNECTIONS", str(CAP))
    monkeypatch.setenv("MNEMO_HTTP_HEADER_TIMEOUT_SECONDS", "1")
    settings = Settings(
        port=free_port(),
        database_url=navigator_dsn(app_dsn),
        consume_requests=False,
        token_secret=DEVELOPMENT_SECRET,
    )
    async with serving_navigator(settings, probe="/healthz", within=20):
        yield settings.port


async def test_a_silent_or_half_sent_connection_is_closed_after_the_header_time_out(
    port: int,
) -> None:
    silent_reader, silent = await asyncio.open_connection("127.0.0.1", port)
    partial_reader, partial = await asyncio.open_connection("127.0.0.1", port)
    partial.write(b"POST /v1/corpora/x/search HTTP/1.1\r\nHost: navigator\r\n")
    await partial.drain()
    started = time.monotonic()
    try:
        assert await asyncio.wait_for(silent_reader.read(), 5) == b""
        assert await asyncio.wait_for(partial_reader.read(), 5) == b""
    finally:
        silent.close()
        partial.close()
    assert 0.8 < time.monotonic() - started < 4


async def test_connections_beyond_the_cap_close_idle_ones_and_healthz_still_answers(
    port: int,
) -> None:
    held = []
    for _ in range(CAP * 5):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        held.append((reader, writer))
    try:
        async with httpx.AsyncClient(timeout=1) as client:
            assert (await client.get(f"http://127.0.0.1:{port}/healthz")).status_code == 200
        # The oldest idle connections were closed to make room, well before their time-out.
        closed = 0
        for reader, _ in held[: CAP * 4]:
            if await asyncio.wait_for(reader.read(), 0.5) == b"":
                closed += 1
        assert closed == CAP * 4
    finally:
        for _, writer in held:
            writer.close()
