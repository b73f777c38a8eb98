"""`forget` over `httpx.MockTransport`: the call it sends (DELETE, the command's id and the wait as
query parameters), the typed answer, one command id across a retried 503, the navigator's 404
raised as `NotFoundError`, an id holding '/' sent encoded, and an empty one refused before anything
is sent."""

from __future__ import annotations

import uuid

import httpx
import pytest
from mnemo_client import AsyncMnemoClient, ForgetAccepted, MnemoClient, NotFoundError, RetryPolicy

URL = "http://navigator.test"
RETRY = RetryPolicy(attempts=3, base_delay=0.0, max_delay=0.0)


def test_forget_sends_a_delete_with_its_command_id_and_keeps_it_across_a_retried_503() -> None:
    seen: list[httpx.Request] = []
    event = uuid.uuid4()

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if len(seen) == 1:
            return httpx.Response(503, json={"error": {"code": "UNAVAILABLE", "message": "x"}})
        return httpx.Response(202, json={"event_id": str(event), "processed": True})

    transport = httpx.MockTransport(handler)
    with MnemoClient(URL, "tok", retry=RETRY, transport=transport) as client:
        answer = client.forget("Memory Docs", "d 1", wait=5)
    assert answer == ForgetAccepted(event_id=event, processed=True)
    assert [r.method for r in seen] == ["DELETE", "DELETE"]
    assert seen[0].url.raw_path.split(b"?")[0] == b"/v1/stores/Memory%20Docs/rows/d%201"
    assert seen[0].url.params["wait"] == "5"
    assert seen[0].url.params["event_id"] == seen[1].url.params["event_id"]
    assert seen[0].headers["Authorization"] == "Bearer tok"


async def test_the_async_client_raises_the_navigators_404_for_a_document_it_cannot_see() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            404, json={"error": {"code": "NOT_FOUND", "message": "no document 'd1'"}}
        )

    transport = httpx.MockTransport(handler)
    async with AsyncMnemoClient(URL, "tok", retry=RETRY, transport=transport) as client:
        with pytest.raises(NotFoundError, match="no document"):
            await client.forget("Docs", "d1")


def test_an_id_holding_a_slash_is_sent_encoded_and_an_empty_one_is_refused_before_sending() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(202, json={"event_id": str(uuid.uuid4()), "processed": None})

    with MnemoClient(URL, "tok", transport=httpx.MockTransport(handler)) as client:
        client.forget("Docs", "handbook/intro.md")
        with pytest.raises(ValueError, match="must not be empty"):
            client.forget("Docs", "")
    assert len(seen) == 1
    assert seen[0].url.raw_path.split(b"?")[0] == b"/v1/stores/Docs/rows/handbook%2Fintro.md"
