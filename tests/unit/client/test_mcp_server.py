"""The MCP server over a client whose navigator is an `httpx.MockTransport`, reached in process
by the SDK's own client: the tools and resources it offers, the token it forwards, and the
navigator's refusals returned as tool errors with their reason."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp_types import TextResourceContents
from mnemo_client import AsyncMnemoClient, RetryPolicy
from mnemo_client.mcp_server import build_server

DOCS = [
    {"id": "cap", "title": "liability cap", "body": "capped", "source_uri": "mnemo://Memory/cap"},
    {"id": "plan", "title": "hosting plan", "body": None, "source_uri": "mnemo://Memory/plan"},
]
NAVIGATED = {
    "hits": [
        {
            "id": "cap",
            "title": "liability cap",
            "score": 0.9,
            "gain": 0.5,
            "epr": 0.1,
            "via": None,
            "restart": True,
            "contradicts": ["plan"],
            "source_uri": "mnemo://Memory/cap",
        }
    ],
    "trail": "cap",
    "coverage": 1.0,
    "diagnostics": {},
    "revision": 4,
}


def _navigator(seen: list[httpx.Request]) -> AsyncMnemoClient:
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        corpus = request.url.raw_path.split(b"/")[3].decode()
        if corpus == "Secret":
            return httpx.Response(
                403, json={"error": {"code": "FORBIDDEN", "message": "no pinned scope"}}
            )
        if corpus != "Memory":
            return httpx.Response(
                404, json={"error": {"code": "NOT_FOUND", "message": f"no corpus {corpus}"}}
            )
        if request.url.path.endswith("/navigate"):
            return httpx.Response(200, json=NAVIGATED)
        if request.url.path.endswith("/retrieve"):
            return httpx.Response(200, json={"items": []})
        limit = int(request.url.params["limit"])
        return httpx.Response(
            200, json={"documents": DOCS[:limit], "next_after": None, "revision": 4}
        )

    return AsyncMnemoClient(
        "http://nav.test",
        "caller-token",
        retry=RetryPolicy(attempts=1),
        transport=httpx.MockTransport(handler),
    )


async def test_it_offers_navigate_retrieve_and_list_corpora_and_forwards_the_callers_token() -> (
    None
):
    seen: list[httpx.Request] = []
    async with Client(build_server(_navigator(seen), ["Memory", "Secret"])) as mcp:
        tools = {tool.name: tool for tool in (await mcp.list_tools()).tools}
        assert set(tools) == {"navigate", "retrieve", "remember", "list_corpora"}
        assert {"corpus", "query", "seed", "budget"} <= set(
            tools["navigate"].input_schema["properties"]
        )

        result = await mcp.call_tool("navigate", {"corpus": "Memory", "query": "cap", "seed": "x"})
        assert not result.is_error
        assert result.structured_content is not None
        assert result.structured_content["hits"][0]["contradicts"] == ["plan"]

        listed = await mcp.call_tool("list_corpora", {})
        assert listed.structured_content is not None
        corpora = listed.structured_content["corpora"]
        assert [(c["id"], c["revision"]) for c in corpora] == [("Memory", 4), ("Secret", None)]
        assert "no pinned scope" in corpora[1]["error"]
    navigate = next(r for r in seen if r.url.path.endswith("/navigate"))
    assert json.loads(navigate.content) == {"query": "cap", "from": "x"}
    assert {r.headers["Authorization"] for r in seen} == {"Bearer caller-token"}


@pytest.mark.parametrize(("corpus", "reason"), [("Secret", "403 FORBIDDEN"), ("Gone", "404")])
async def test_a_refusal_of_the_navigator_is_a_tool_error_saying_why(
    corpus: str, reason: str
) -> None:
    async with Client(build_server(_navigator([]), [])) as mcp:
        result = await mcp.call_tool("retrieve", {"corpus": corpus, "query": "cap"})
    assert result.is_error
    text = " ".join(getattr(block, "text", "") for block in result.content)
    assert reason in text


async def test_resources_list_corpora_and_read_a_corpus_and_one_document() -> None:
    async with Client(build_server(_navigator([]), ["Memory"])) as mcp:
        listed = await mcp.list_resources()
        assert [str(r.uri) for r in listed.resources] == ["mnemo://corpora"]
        templates = {
            t.uri_template for t in (await mcp.list_resource_templates()).resource_templates
        }
        assert templates == {
            "mnemo://corpora/{corpus}",
            "mnemo://corpora/{corpus}/documents/{document}",
        }
        corpus = _json(await mcp.read_resource("mnemo://corpora/Memory"))
        assert corpus["revision"] == 4
        assert [d["uri"] for d in corpus["documents"]] == [
            "mnemo://corpora/Memory/documents/cap",
            "mnemo://corpora/Memory/documents/plan",
        ]
        document = _json(await mcp.read_resource("mnemo://corpora/Memory/documents/plan"))
        assert document == DOCS[1]


def _json(result: Any) -> Any:
    (content,) = result.contents
    assert isinstance(content, TextResourceContents)
    return json.loads(content.text)
