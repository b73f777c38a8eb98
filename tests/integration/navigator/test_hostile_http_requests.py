"""The probe's request-level findings of issue 20, against the navigator app in-process: bodies
read before the token was checked and never bounded, a search body that took any field and any
goal (a 40k-token goal answered 500, a lone surrogate 500), a documents page that left no audit
row, and tokens of tenants that do not exist served and remembered."""

from __future__ import annotations

import json
import uuid
from collections.abc import MutableMapping
from typing import Any

import asyncpg
import pytest

from tests.integration.navigator.conftest import Declare, NewTenant, Service

pytestmark = pytest.mark.timeout(60)

DOCS = [
    {"id": "a", "tenant_id": "c1", "title": "alpha notes", "body": "river stone"},
    {"id": "b", "tenant_id": "c1", "title": "alpha ledger", "body": "field memory"},
]
EDGES = [{"from_id": "a", "to_id": "b", "etype": "ref", "weight": 1.0, "tenant_id": "c1"}]
TEN_MB = 10 * 1024 * 1024


class Exchange:
    """One request sent straight to the ASGI app: what it read of the body, what it answered."""

    def __init__(self, chunks: int, chunk: bytes = b"x" * 65536) -> None:
        self.chunks, self.chunk = chunks, chunk
        self.reads = 0
        self.status: int | None = None
        self.headers: dict[bytes, bytes] = {}
        self.body = b""

    async def receive(self) -> MutableMapping[str, Any]:
        self.reads += 1
        more = self.reads < self.chunks
        return {"type": "http.request", "body": self.chunk, "more_body": more}

    async def send(self, message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
            self.headers = dict(message.get("headers", []))
        elif message["type"] == "http.response.body":
            self.body += message.get("body", b"")

    async def post(
        self, service: Service, path: str, headers: dict[str, str], length: int | None
    ) -> Exchange:
        raw = [(k.lower().encode(), v.encode()) for k, v in headers.items()]
        raw.append((b"content-type", b"application/json"))
        if length is not None:
            raw.append((b"content-length", str(length).encode()))
        else:
            raw.append((b"transfer-encoding", b"chunked"))
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "POST",
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": b"",
            "root_path": "",
            "headers": raw,
            "client": ("127.0.0.1", 1),
            "server": ("navigator", 80),
            "state": {},
        }
        assert service.runtime.app is not None
        await service.runtime.app(scope, self.receive, self.send)
        return self


async def outbox(owner: asyncpg.Connection, tenant: uuid.UUID) -> list[dict[str, Any]]:
    async with owner.transaction():
        await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
        rows = await owner.fetch("SELECT payload::text AS p FROM mnemo.outbox ORDER BY seq")
    return [json.loads(r["p"])["data"]["record"] for r in rows]


async def test_a_ten_megabyte_body_without_a_token_is_refused_401_without_being_read(
    declare: Declare, service: Service
) -> None:
    arena = await declare()
    path = f"/v1/corpora/{arena.name}/search"
    for headers in ({}, {"Authorization": "Bearer not-a-token"}):
        for length in (TEN_MB, None):
            exchange = await Exchange(chunks=160).post(service, path, headers, length)
            assert exchange.status == 401, exchange.body
            assert exchange.reads == 0
            assert exchange.headers[b"connection"] == b"close"
            assert json.loads(exchange.body)["error"]["code"] == "UNAUTHENTICATED"


async def test_a_body_over_the_limit_is_refused_413_unread_or_as_soon_as_it_passes_it(
    declare: Declare, new_tenant: NewTenant, service: Service
) -> None:
    arena = await declare()
    headers = service.token(await new_tenant())
    path = f"/v1/corpora/{arena.name}/retrieve"
    declared = await Exchange(chunks=160).post(service, path, headers, TEN_MB)
    assert declared.status == 413
    assert declared.reads == 0
    assert "at most 1048576" in json.loads(declared.body)["error"]["message"]
    streamed = await Exchange(chunks=160).post(service, path, headers, None)
    assert streamed.status == 413
    assert json.loads(streamed.body)["error"]["code"] == "PAYLOAD_TOO_LARGE"
    assert streamed.reads == 1024**2 // 65536 + 1  # the first chunk past 1 MiB, nothing after
    assert streamed.headers[b"connection"] == b"close"


async def test_search_refuses_fields_beyond_collection_and_goal(
    declare: Declare, new_tenant: NewTenant, service: Service
) -> None:
    arena = await declare()
    response = await service.client.post(
        f"/v1/corpora/{arena.name}/search",
        json={"collection": arena.name, "goal": {"query": "alpha"}, "padding": "x" * 1000},
        headers=service.token(await new_tenant()),
    )
    assert response.status_code == 422, response.text
    assert "padding" in response.json()["error"]["message"]


@pytest.mark.parametrize("words", [1_100, 40_000])
async def test_a_goal_longer_than_4096_characters_is_a_422_saying_so(
    declare: Declare, new_tenant: NewTenant, service: Service, words: int
) -> None:
    arena = await declare()
    tenant = await new_tenant()
    await arena.write(tenant, DOCS)
    goal = " ".join(f"w{n}" for n in range(words))
    for body in ({"query": goal}, {"anything": goal}):
        response = await service.client.post(
            f"/v1/corpora/{arena.name}/search",
            json={"collection": arena.name, "goal": body},
            headers=service.token(tenant),
        )
        assert response.status_code == 422, response.text[:300]
        assert "at most 4096" in response.json()["error"]["message"]


async def test_a_lone_surrogate_in_a_goal_is_a_422_not_a_500(
    declare: Declare, new_tenant: NewTenant, service: Service, owner_connection: asyncpg.Connection
) -> None:
    arena = await declare()
    tenant = await new_tenant()
    await arena.write(tenant, DOCS)
    for goal, said in (
        ('{"query": "alpha \\ud800"}', "lone surrogate"),
        ('{"topic": 1, "x": "alpha \\udfff"}', "lone surrogate"),
        ('{"x\\udfff": "alpha"}', "unicode string"),  # a key: pydantic's own refusal
    ):
        response = await service.client.post(
            f"/v1/corpora/{arena.name}/search",
            content=f'{{"collection": "{arena.name}", "goal": {goal}}}'.encode(),
            headers={**service.token(tenant), "Content-Type": "application/json"},
        )
        assert response.status_code == 422, response.text
        assert said in response.json()["error"]["message"]
    assert await outbox(owner_connection, tenant) == []


async def test_a_documents_page_writes_one_audit_row_like_the_other_reads(
    declare: Declare, new_tenant: NewTenant, service: Service, owner_connection: asyncpg.Connection
) -> None:
    arena = await declare()
    tenant = await new_tenant()
    await arena.write(tenant, DOCS)
    response = await service.client.get(
        f"/v1/corpora/{arena.name}/documents",
        params={"limit": 1, "after": "0"},
        headers=service.token(tenant),
    )
    assert response.status_code == 200, response.text
    [record] = await outbox(owner_connection, tenant)
    assert record["operation"] == "documents"
    assert record["action"] == f"corpus:{arena.name}:query"
    assert record["returned_ids"] == ["a"]
    assert record["query"] == "documents limit=1 after=0"


async def test_a_token_of_a_tenant_that_does_not_exist_is_refused_and_leaves_no_rows(
    declare: Declare, new_tenant: NewTenant, service: Service, owner_connection: asyncpg.Connection
) -> None:
    arena = await declare()
    ghost = uuid.uuid4()
    headers = service.token(ghost)
    base = f"/v1/corpora/{arena.name}"
    answers = [
        await service.client.post(f"{base}/navigate", json={"query": "alpha"}, headers=headers),
        await service.client.post(f"{base}/retrieve", json={"query": "alpha"}, headers=headers),
        await service.client.post(
            f"{base}/search", json={"collection": arena.name, "goal": {"q": 1}}, headers=headers
        ),
        await service.client.get(f"{base}/documents", headers=headers),
    ]
    for answer in answers:
        assert answer.status_code == 403, answer.text
        assert answer.json()["error"]["code"] == "UNKNOWN_TENANT"
        assert "unknown tenant" in answer.json()["error"]["message"]
    assert await outbox(owner_connection, ghost) == []
    async with owner_connection.transaction():
        await owner_connection.execute("SELECT set_config('mnemo.tenant', $1, true)", str(ghost))
        assert await owner_connection.fetchval("SELECT count(*) FROM mnemo.nav_outcomes") == 0
    # A tenant created a moment ago is served at once (a tenant not found is never cached).
    tenant = await new_tenant()
    await arena.write(tenant, DOCS, EDGES)
    fresh = await service.client.post(
        f"{base}/navigate", json={"query": "alpha"}, headers=service.token(tenant)
    )
    assert fresh.status_code == 200, fresh.text
