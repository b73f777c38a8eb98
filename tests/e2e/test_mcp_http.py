"""MCP over streamable HTTP at the stack's navigator (`/mcp`), spoken to by the MCP SDK's own client
and by one Mnemo did not write, the MCP Inspector's CLI (installed under .local/mcp-inspector by
`tests/e2e/test_mcp.py`'s fixture): the bearer token of each request decides the tenant and the
end-client, exactly as for the HTTP API, and a request without one is refused."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.test_client import World, stack_world
from tests.e2e.test_mcp import INSPECTOR_HOME, inspector  # noqa: F401  (the Inspector's fixture)


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    with stack_world() as made:
        yield made


def _client(world: World, token: str) -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
    return Client(
        streamable_http_client(f"{world.url}/mcp", http_client=http), read_timeout_seconds=60
    )


def _text(result: Any) -> str:
    return " ".join(getattr(block, "text", "") for block in result.content)


async def test_the_sdk_client_over_streamable_http_reads_as_the_tenant_of_its_token(
    world: World,
) -> None:
    async with _client(world, world.token(world.tenant_a)) as mcp:
        tools = {tool.name for tool in (await mcp.list_tools()).tools}
        assert tools == {"navigate", "retrieve", "remember", "list_corpora"}
        walked = await mcp.call_tool(
            "navigate", {"corpus": world.corpus, "query": "remember recall", "budget": 20}
        )
        assert not walked.is_error, _text(walked)
        assert walked.structured_content is not None
        hits = {hit["id"] for hit in walked.structured_content["hits"]}
        assert hits
        assert all(hit.startswith("a") for hit in hits), hits
    async with _client(world, world.token(world.tenant_b)) as mcp:
        found = await mcp.call_tool(
            "retrieve", {"corpus": world.corpus, "query": "remember recall", "k": 20}
        )
        assert found.structured_content is not None
        ids = {item["id"] for item in found.structured_content["items"]}
        assert ids
        assert all(i.startswith("bc1-") for i in ids), ids
    confined = world.token(world.tenant_a, {"tenant_id": "c1"})
    async with _client(world, confined) as mcp:
        refused = await mcp.call_tool("navigate", {"corpus": world.corpus, "query": "remember"})
        assert refused.is_error
        assert "SCOPE_FORBIDDEN" in _text(refused)


def test_a_request_to_mcp_without_a_token_is_refused_with_401(world: World) -> None:
    answer = httpx.post(
        f"{world.url}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
        headers={"Accept": "application/json, text/event-stream"},
        timeout=30,
    )
    assert answer.status_code == 401
    assert answer.json()["error"]["code"] == "UNAUTHENTICATED"


def _inspect_http(binary: Path, world: World, token: str, *method: str) -> Any:
    result = subprocess.run(
        [
            str(binary),
            *("--cli", f"{world.url}/mcp", "--transport", "http"),
            *("--header", f"Authorization: Bearer {token}", *method),
        ],
        cwd=INSPECTOR_HOME / "node_modules",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, f"{result.stdout[-2000:]}\n{result.stderr[-3000:]}"
    return json.loads(result.stdout[result.stdout.index("{") :])


def test_the_mcp_inspector_navigates_the_stack_over_streamable_http(
    world: World,
    inspector: Path,  # noqa: F811  (the fixture imported above)
) -> None:
    token = world.token(world.tenant_a)
    listed = _inspect_http(inspector, world, token, "--method", "tools/list")
    assert {tool["name"] for tool in listed["tools"]} == {
        "navigate",
        "retrieve",
        "remember",
        "list_corpora",
    }
    called = _inspect_http(
        inspector,
        world,
        token,
        *("--method", "tools/call", "--tool-name", "navigate"),
        *("--tool-arg", f"corpus={world.corpus}", "--tool-arg", "query=remember recall"),
    )
    assert not called.get("isError"), called
    hits = called["structuredContent"]["hits"]
    assert hits
    assert all(hit["id"].startswith("a") for hit in hits), hits
