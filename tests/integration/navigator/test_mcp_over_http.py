"""MCP over streamable HTTP at the navigator's `/mcp`, driven by the MCP SDK's own streamable-HTTP
client against the navigator in-process (real Postgres): the bearer token decides the tenant and
the pinned scope exactly as for the HTTP API, every call is audited as its HTTP twin, a request
without a valid token is refused before the transport reads it, and `remember` queues its rows
through the outbox like `POST /v1/stores/{store}/rows`. The navigator here writes its persist and
audit events to topics of this module's own, which no ingest or audit service reads."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import httpx2
import pytest
from fastapi import FastAPI
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mnemo_auth import DEVELOPMENT_SECRET, mint_token
from mnemo_events.settings import KafkaSettings
from mnemo_navigator.app import create_app
from mnemo_navigator.settings import Settings

from tests.integration.navigator.conftest import (
    PINNED,
    TWO_CLIENTS_DOCS,
    Declare,
    NewTenant,
    audited_records,
    navigator_dsn,
)

pytestmark = pytest.mark.timeout(120)


@dataclass
class Navigator:
    app: FastAPI
    pinned: dict[str, str]
    persist_topic: str

    @asynccontextmanager
    async def mcp(self, tenant: uuid.UUID, **claims: Any) -> AsyncIterator[Client]:
        """The SDK's client over streamable HTTP, with a token of `tenant`."""
        token = mint_token(tenant=tenant, secret=DEVELOPMENT_SECRET, **claims)
        http = httpx2.AsyncClient(
            transport=httpx2.ASGITransport(app=self.app),
            base_url="http://navigator",
            headers={"Authorization": f"Bearer {token}"},
        )
        async with http:
            transport = streamable_http_client("http://navigator/mcp", http_client=http)
            async with Client(transport, read_timeout_seconds=30) as client:
                yield client


@pytest.fixture(scope="module")
async def navigator(app_dsn: str, kafka_bootstrap: str) -> AsyncIterator[Navigator]:
    suffix = uuid.uuid4().hex[:10]
    pinned: dict[str, str] = {}
    persist_topic = f"test.mcp-persist.{suffix}.v1"
    settings = Settings(
        database_url=navigator_dsn(app_dsn),
        consume_requests=False,
        token_secret=DEVELOPMENT_SECRET,
        audit_topic=f"test.mcp-audit.{suffix}.v1",
        persist_topic=persist_topic,
        pool_size=4,
        kafka=KafkaSettings(bootstrap=kafka_bootstrap, partitions=1),
    )
    runtime = create_app(settings, pinned_scopes=pinned)
    assert runtime.app is not None
    await runtime.start()
    try:
        yield Navigator(runtime.app, pinned, persist_topic)
    finally:
        await runtime.stop()


def _text(result: Any) -> str:
    return " ".join(getattr(block, "text", "") for block in result.content)


async def test_each_tenant_navigates_its_own_rows_over_mcp_and_each_call_is_audited(
    navigator: Navigator, declare: Declare, new_tenant: NewTenant, owner_connection: Any
) -> None:
    arena = await declare()
    mine, theirs = await new_tenant(), await new_tenant()
    await arena.write(mine, [{"id": "m1", "tenant_id": "c1", "title": "alpha mine", "body": None}])
    await arena.write(
        theirs, [{"id": "t1", "tenant_id": "c1", "title": "alpha theirs", "body": None}]
    )
    async with navigator.mcp(mine) as mcp:
        tools = {tool.name for tool in (await mcp.list_tools()).tools}
        assert tools == {"navigate", "retrieve", "remember", "list_corpora"}
        walked = await mcp.call_tool("navigate", {"corpus": arena.name, "query": "alpha"})
        assert not walked.is_error, _text(walked)
        assert walked.structured_content is not None
        assert {hit["id"] for hit in walked.structured_content["hits"]} == {"m1"}
        listed = await mcp.call_tool("list_corpora", {})
        assert listed.structured_content is not None
        assert arena.name in {c["id"] for c in listed.structured_content["corpora"]}
    async with navigator.mcp(theirs) as mcp:
        found = await mcp.call_tool("retrieve", {"corpus": arena.name, "query": "alpha"})
        assert found.structured_content is not None
        assert {item["id"] for item in found.structured_content["items"]} == {"t1"}
    navigated = [
        r for r in await audited_records(owner_connection, mine) if r["corpus"] == arena.name
    ]
    assert [r["operation"] for r in navigated if r["operation"] == "navigate"] == ["navigate"]
    assert navigated[0]["returned_ids"] == ["m1"]
    theirs_audited = await audited_records(owner_connection, theirs)
    assert [r["operation"] for r in theirs_audited] == ["retrieve"]


async def test_a_client_token_over_mcp_is_confined_to_its_pinned_scope(
    navigator: Navigator, declare: Declare, new_tenant: NewTenant
) -> None:
    arena = await declare()
    tenant = await new_tenant()
    await arena.write(tenant, TWO_CLIENTS_DOCS)
    async with navigator.mcp(tenant, client={"tenant_id": "c1"}) as mcp:
        refused = await mcp.call_tool("retrieve", {"corpus": arena.name, "query": "alpha"})
        assert refused.is_error
        assert "pinned scope" in _text(refused)
        navigator.pinned[arena.name] = PINNED
        try:
            found = await mcp.call_tool(
                "retrieve", {"corpus": arena.name, "query": "alpha", "where": "tenant_id LIKE '%'"}
            )
        finally:
            navigator.pinned.pop(arena.name)
    assert found.structured_content is not None
    assert {item["id"] for item in found.structured_content["items"]} == {"a"}


async def test_remember_over_mcp_queues_the_rows_of_the_tokens_tenant_in_the_outbox(
    navigator: Navigator, declare: Declare, new_tenant: NewTenant, owner_connection: Any
) -> None:
    arena = await declare()
    tenant = await new_tenant()
    memory = {"id": "r1", "tenant_id": "c1", "title": "remembered", "body": None}
    edge = {"from_id": "r1", "to_id": "a", "etype": "cite", "weight": 0.5, "tenant_id": "c1"}
    async with navigator.mcp(tenant, scopes=("read", "write")) as mcp:
        result = await mcp.call_tool(
            "remember",
            {
                "store": arena.corpus.documents.name,
                "memory": memory,
                "edges": [edge],
                "edge_store": arena.corpus.relations.name,
            },
        )
    assert not result.is_error, _text(result)
    assert result.structured_content is not None
    ids = [
        result.structured_content["memory_event_id"],
        *result.structured_content["edge_event_ids"],
    ]
    async with owner_connection.transaction():
        await owner_connection.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
        rows = await owner_connection.fetch(
            "SELECT event_id::text AS id, payload::text AS p, published_at FROM mnemo.outbox"
            " WHERE topic = $1 ORDER BY seq",
            navigator.persist_topic,
        )
    assert [r["id"] for r in rows] == ids
    assert all(r["published_at"] is not None for r in rows)
    assert json.loads(rows[0]["p"])["data"]["values"] == memory
    async with navigator.mcp(tenant) as reader:
        refused = await reader.call_tool(
            "remember", {"store": arena.corpus.documents.name, "memory": memory}
        )
    assert refused.is_error
    assert "write" in _text(refused)


async def _over_http(
    navigator: Navigator, tenant: uuid.UUID, path: str, body: dict[str, Any], **claims: Any
) -> httpx.Response:
    """`body` posted to the navigator's HTTP API at `path` with a token of `tenant`."""
    token = mint_token(tenant=tenant, secret=DEVELOPMENT_SECRET, **claims)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=navigator.app), base_url="http://navigator"
    ) as client:
        return await client.post(path, json=body, headers={"Authorization": f"Bearer {token}"})


def _uncached(answer: dict[str, Any]) -> dict[str, Any]:
    """An answer without whether it found the graph cached (diagnostics' `cache`)."""
    if "diagnostics" not in answer:
        return answer
    diagnostics = {k: v for k, v in answer["diagnostics"].items() if k != "cache"}
    return {**answer, "diagnostics": diagnostics}


def _comparable(record: dict[str, Any]) -> dict[str, Any]:
    """An audit record without what differs between two requests (time and trace)."""
    return {k: v for k, v in record.items() if k not in {"latency_ms", "trace_id"}}


@pytest.mark.parametrize(
    ("tool", "arguments", "found"),
    [("navigate", {"budget": 5}, "hits"), ("retrieve", {"k": 5}, "items")],
)
async def test_a_read_tool_call_answers_and_is_audited_exactly_as_its_http_twin(
    navigator: Navigator,
    declare: Declare,
    new_tenant: NewTenant,
    owner_connection: Any,
    tool: str,
    arguments: dict[str, Any],
    found: str,
) -> None:
    arena = await declare(adaptive=False)
    tenant = await new_tenant()
    await arena.write(tenant, TWO_CLIENTS_DOCS)
    navigator.pinned[arena.name] = PINNED
    try:
        answered = await _over_http(
            navigator,
            tenant,
            f"/v1/corpora/{arena.name}/{tool}",
            {"query": "alpha", **arguments},
            client={"tenant_id": "c2"},
        )
        async with navigator.mcp(tenant, client={"tenant_id": "c2"}) as mcp:
            called = await mcp.call_tool(
                tool, {"corpus": arena.name, "query": "alpha", **arguments}
            )
    finally:
        navigator.pinned.pop(arena.name)
    assert answered.status_code == 200, answered.text
    assert not called.is_error, _text(called)
    # The first request loads the graph, the second finds it cached: all else is the same.
    assert _uncached(called.structured_content) == _uncached(answered.json())
    assert {item["id"] for item in called.structured_content[found]} == {"b"}
    http_record, mcp_record = [
        r for r in await audited_records(owner_connection, tenant) if r["corpus"] == arena.name
    ]
    assert mcp_record["operation"] == tool
    assert mcp_record["client"] == {"tenant_id": "c2"}
    assert mcp_record["returned_ids"] == ["b"]
    assert _comparable(mcp_record) == _comparable(http_record)


REFUSALS = [
    ("unknown corpus", {"corpus": "no-such-corpus", "query": "alpha"}, {}),
    ("invalid filter", {"query": "alpha", "where": "tenant_id =="}, {}),
    ("corpus id with a slash", {"corpus": "a/b", "query": "alpha"}, {}),
    ("client token, no pinned scope", {"query": "alpha"}, {"client": {"tenant_id": "c1"}}),
    ("token without the read scope", {"query": "alpha"}, {"scopes": ("write",)}),
]
"""Read tool calls the navigator refuses: what is wrong, the call's arguments, the token's claims."""


@pytest.mark.parametrize(
    ("tool", "case", "arguments", "claims"),
    [
        *[("navigate", *refusal) for refusal in REFUSALS],
        ("navigate", "unknown seed", {"query": "", "seed": "not-there"}, {}),
        *[("retrieve", *refusal) for refusal in REFUSALS],
    ],
)
async def test_a_refused_read_tool_call_carries_the_http_apis_status_code_and_message(
    navigator: Navigator,
    declare: Declare,
    new_tenant: NewTenant,
    tool: str,
    case: str,
    arguments: dict[str, Any],
    claims: dict[str, Any],
) -> None:
    arena = await declare()
    tenant = await new_tenant()
    await arena.write(tenant, TWO_CLIENTS_DOCS)
    call = {"corpus": arena.name, **arguments}
    body = {"query": call["query"]} | ({"from": call["seed"]} if "seed" in call else {})
    body |= {"where": call["where"]} if "where" in call else {}
    answered = await _over_http(
        navigator, tenant, f"/v1/corpora/{call['corpus']}/{tool}", body, **claims
    )
    async with navigator.mcp(tenant, **claims) as mcp:
        refused = await mcp.call_tool(tool, call)
    assert refused.is_error, case
    error = answered.json()["error"]
    if answered.status_code == 404 and "/" in call["corpus"]:
        # No route matches a path with one more segment; the tool checks the id as the route's
        # path parameter does and says why.
        assert "HTTP 422 INVALID_REQUEST" in _text(refused)
        return
    assert _text(refused).endswith(
        f": the navigator answered HTTP {answered.status_code} {error['code']}: {error['message']}"
    ), case


@pytest.mark.parametrize("authorization", [None, "Bearer not-a-token", "Basic abc"])
async def test_a_request_without_a_valid_bearer_token_is_refused_with_401(
    navigator: Navigator, authorization: str | None
) -> None:
    headers = {"Accept": "application/json, text/event-stream"}
    if authorization:
        headers["Authorization"] = authorization
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=navigator.app), base_url="http://navigator"
    ) as client:
        answer = await client.post(
            "/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
            headers=headers,
        )
    assert answer.status_code == 401
    assert answer.json()["error"]["code"] == "UNAUTHENTICATED"
