"""A busy navigator's answer over HTTP: 503 `BUSY`, the reason, and when to retry."""

from __future__ import annotations

import httpx
from fastapi import FastAPI
from mnemo_navigator.errors import NavigatorBusyError
from mnemo_navigator.routes import install_error_handlers


async def test_busy_is_a_503_saying_why_and_when_to_retry() -> None:
    app = FastAPI()
    install_error_handlers(app, ())

    @app.post("/navigate")
    async def navigate() -> None:
        raise NavigatorBusyError("navigator busy: 64 navigations in flight")

    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://navigator") as client:
        answer = await client.post("/navigate")
    assert answer.status_code == 503
    assert answer.headers["retry-after"] == "1"
    assert answer.json()["error"]["code"] == "BUSY"
    assert "64 navigations in flight" in answer.json()["error"]["message"]
