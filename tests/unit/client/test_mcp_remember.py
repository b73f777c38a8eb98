"""The MCP `remember` tool over a client whose navigator is an `httpx.MockTransport`: the memory
and its edges go to `POST /v1/stores/{store}/rows` with an event id per row, the wait is passed
on, and a refusal (or edges without their store) is a tool error saying why."""

from __future__ import annotations

import json
import uuid

import httpx
from mcp import Client
from mnemo_client import AsyncMnemoClient, RetryPolicy
from mnemo_client.mcp_server import build_server


def _navigator(seen: list[httpx.Request]) -> AsyncMnemoClient:
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if "/Forbidden/" in request.url.path:
            return httpx.Response(
                403, json={"error": {"code": "FORBIDDEN", "message": "needs scope 'write'"}}
            )
        ids = json.loads(request.content)["event_ids"]
        wait = request.url.params.get("wait")
        return httpx.Response(202, json={"event_ids": ids, "processed": ids if wait else None})

    return AsyncMnemoClient(
        "http://nav.test",
        "caller-token",
        retry=RetryPolicy(attempts=1),
        transport=httpx.MockTransport(handler),
    )


async def test_remember_writes_the_memory_then_its_edges_each_row_with_an_event_id() -> None:
    seen: list[httpx.Request] = []
    memory = {"id": "m1", "title": "the cap is 2M", "tenant_id": "c1"}
    edge = {"from_id": "m1", "to_id": "m0", "etype": "supersedes", "weight": 0.9}
    async with Client(build_server(_navigator(seen), [])) as mcp:
        result = await mcp.call_tool(
            "remember",
            {"store": "Docs", "memory": memory, "edges": [edge], "edge_store": "Edges", "wait": 5},
        )
    assert not result.is_error, result.content
    assert [r.url.path for r in seen] == ["/v1/stores/Docs/rows", "/v1/stores/Edges/rows"]
    assert {r.url.params["wait"] for r in seen} == {"5"}
    bodies = [json.loads(r.content) for r in seen]
    assert [b["rows"] for b in bodies] == [[memory], [edge]]
    answer = result.structured_content
    assert answer is not None
    assert answer["memory_event_id"] == bodies[0]["event_ids"][0]
    assert answer["edge_event_ids"] == bodies[1]["event_ids"]
    assert answer["processed"] == bodies[0]["event_ids"] + bodies[1]["event_ids"]
    assert all(uuid.UUID(i).version == 4 for b in bodies for i in b["event_ids"])
    assert {r.headers["Authorization"] for r in seen} == {"Bearer caller-token"}


async def test_remember_without_wait_reports_nothing_processed_and_sends_no_wait() -> None:
    seen: list[httpx.Request] = []
    async with Client(build_server(_navigator(seen), [])) as mcp:
        result = await mcp.call_tool("remember", {"store": "Docs", "memory": {"id": "m2"}})
    assert not result.is_error
    assert result.structured_content is not None
    assert result.structured_content["processed"] is None
    assert result.structured_content["edge_event_ids"] == []
    assert "wait" not in seen[0].url.params


async def test_edges_without_their_store_or_a_refused_write_are_tool_errors_saying_why() -> None:
    seen: list[httpx.Request] = []
    async with Client(build_server(_navigator(seen), [])) as mcp:
        orphan = await mcp.call_tool(
            "remember", {"store": "Docs", "memory": {"id": "m3"}, "edges": [{"from_id": "m3"}]}
        )
        refused = await mcp.call_tool("remember", {"store": "Forbidden", "memory": {"id": "m4"}})
    assert orphan.is_error
    assert "edge_store" in " ".join(getattr(b, "text", "") for b in orphan.content)
    assert refused.is_error
    assert "needs scope 'write'" in " ".join(getattr(b, "text", "") for b in refused.content)
    assert [r.url.path for r in seen] == ["/v1/stores/Forbidden/rows"]
