"""The forget route alone, over a recording stand-in for `Writes`: a document id holding '/' (a
file path) reaches the use case whole, encoded or not; the caller's principal, `wait` and
`event_id` are passed on; no token is a 401 before the use case is asked."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
from fastapi import FastAPI
from mnemo_auth import DEVELOPMENT_SECRET, Principal, TokenKeys, TokenVerifier, mint_token
from mnemo_navigator.routes import install_error_handlers
from mnemo_navigator.store_routes import store_router
from mnemo_navigator.writes import WriteResult

TENANT = uuid.UUID("00000000-0000-4000-8000-00000000000a")


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[Principal, str, str, dict[str, Any]]] = []

    async def forget(
        self, principal: Principal, store: str, document_id: str, **options: Any
    ) -> WriteResult:
        self.calls.append((principal, store, document_id, options))
        return WriteResult((uuid.uuid4(),), None)


async def test_an_id_holding_a_slash_reaches_the_use_case_whole_with_the_callers_options() -> None:
    recorder = Recorder()
    app = FastAPI()
    install_error_handlers(app, ())
    verifier = TokenVerifier(TokenKeys(secret=DEVELOPMENT_SECRET))
    app.include_router(store_router(recorder, verifier))  # type: ignore[arg-type]  # a stand-in
    token = mint_token(tenant=TENANT, secret=DEVELOPMENT_SECRET, scopes=("write",))
    headers = {"Authorization": f"Bearer {token}"}
    event = uuid.uuid4()
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://navigator") as client:
        for path in ("handbook/intro.md", "handbook%2Fintro.md"):
            answer = await client.delete(
                f"/v1/stores/Docs/rows/{path}",
                params={"wait": 2, "event_id": str(event)},
                headers=headers,
            )
            assert answer.status_code == 202, answer.text
            assert answer.json()["processed"] is None
        refused = await client.delete("/v1/stores/Docs/rows/x")
        assert refused.status_code == 401
    assert [(store, doc) for _, store, doc, _ in recorder.calls] == [
        ("Docs", "handbook/intro.md"),
        ("Docs", "handbook/intro.md"),
    ]
    principal, _, _, options = recorder.calls[0]
    assert principal.tenant == TENANT
    assert options["wait"] == 2
    assert options["event_id"] == event
