"""Navigate, retrieve, search and page over the HTTP API against real Postgres rows."""

from __future__ import annotations

import json
import uuid

import asyncpg

from tests.integration.navigator.conftest import PINNED, Declare, NewTenant, Service


def docs(sub: str, prefix: str) -> list[dict[str, object]]:
    return [
        {
            "id": f"{prefix}-a",
            "tenant_id": sub,
            "title": "liability cap overview",
            "body": "the cap",
        },
        {"id": f"{prefix}-b", "tenant_id": sub, "title": "liability limitation", "body": "limits"},
        {"id": f"{prefix}-c", "tenant_id": sub, "title": "termination notice", "body": "notice"},
    ]


def edges(sub: str, prefix: str) -> list[dict[str, object]]:
    return [
        {
            "from_id": f"{prefix}-a",
            "to_id": f"{prefix}-b",
            "etype": "cite",
            "weight": 0.5,
            "tenant_id": sub,
        },
        {
            "from_id": f"{prefix}-a",
            "to_id": f"{prefix}-c",
            "etype": "elaborate",
            "weight": 0.5,
            "tenant_id": sub,
        },
    ]


async def test_a_navigation_returns_hits_trail_coverage_and_the_revision_it_saw(
    declare: Declare, new_tenant: NewTenant, service: Service
) -> None:
    arena = await declare()
    tenant = await new_tenant()
    await arena.write(tenant, docs("c1", "x"), edges("c1", "x"))
    response = await service.client.post(
        f"/v1/corpora/{arena.name}/navigate",
        json={"query": "liability cap termination"},
        headers=service.token(tenant),
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert next(hit["id"] for hit in body["hits"]) == "x-a"
    assert body["revision"] >= 1
    assert body["trail"]
    assert 0 <= body["coverage"] <= 1


async def test_a_client_token_sees_only_its_end_client_whatever_where_it_sends(
    declare: Declare, new_tenant: NewTenant, service: Service
) -> None:
    arena = await declare()
    service.pinned[arena.name] = PINNED
    tenant = await new_tenant()
    await arena.write(
        tenant, docs("c1", "one") + docs("c2", "two"), edges("c1", "one") + edges("c2", "two")
    )
    headers = service.token(tenant, client={"tenant_id": "c1"})
    for where in (None, "tenant_id LIKE '%'", "tenant_id == 'c2'", "tenant_id != 'c1'"):
        response = await service.client.post(
            f"/v1/corpora/{arena.name}/navigate",
            json={"query": "liability cap termination notice", "budget": 10, "where": where},
            headers=headers,
        )
        assert response.status_code == 200, response.text
        assert all(hit["id"].startswith("one-") for hit in response.json()["hits"]), where
        retrieved = await service.client.post(
            f"/v1/corpora/{arena.name}/retrieve",
            json={"query": "liability notice", "k": 10, "where": where},
            headers=headers,
        )
        assert retrieved.status_code == 200, retrieved.text
        assert all(item["id"].startswith("one-") for item in retrieved.json()["items"]), where
    wide = await service.client.post(
        f"/v1/corpora/{arena.name}/retrieve",
        json={"query": "liability notice", "k": 10},
        headers=service.token(tenant),
    )
    assert {item["id"][:4] for item in wide.json()["items"]} == {"one-", "two-"}


async def test_a_client_token_on_a_corpus_without_a_pinned_scope_is_refused(
    declare: Declare, new_tenant: NewTenant, service: Service
) -> None:
    arena = await declare()
    tenant = await new_tenant()
    response = await service.client.post(
        f"/v1/corpora/{arena.name}/navigate",
        json={"query": "liability"},
        headers=service.token(tenant, client={"tenant_id": "c1"}),
    )
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "SCOPE_FORBIDDEN"


async def test_requests_without_a_valid_token_get_401_and_nothing_else(
    declare: Declare, new_tenant: NewTenant, service: Service
) -> None:
    arena = await declare()
    url = f"/v1/corpora/{arena.name}/navigate"
    assert (await service.client.post(url, json={"query": "x"})).status_code == 401
    bad = {"Authorization": "Bearer not-a-token"}
    assert (await service.client.post(url, json={"query": "x"}, headers=bad)).status_code == 401
    from mnemo_auth import mint_token

    forged = mint_token(tenant=await new_tenant(), secret="another-key-entirely-32-bytes-long!")
    response = await service.client.post(
        url, json={"query": "x"}, headers={"Authorization": f"Bearer {forged}"}
    )
    assert response.status_code == 401
    assert "hits" not in response.text


async def test_a_corpus_that_is_not_published_answers_409_naming_its_status(
    declare: Declare, new_tenant: NewTenant, service: Service
) -> None:
    arena = await declare(status="draft")
    response = await service.client.post(
        f"/v1/corpora/{arena.name}/navigate",
        json={"query": "x"},
        headers=service.token(await new_tenant()),
    )
    assert response.status_code == 409
    assert "draft" in response.json()["error"]["message"]


async def test_every_navigate_retrieve_and_search_queues_exactly_one_audit_event(
    declare: Declare, new_tenant: NewTenant, service: Service, owner_connection: asyncpg.Connection
) -> None:
    arena = await declare()
    tenant = await new_tenant()
    await arena.write(tenant, docs("c1", "x"), edges("c1", "x"))
    headers = service.token(tenant)
    base = f"/v1/corpora/{arena.name}"
    assert (
        await service.client.post(f"{base}/navigate", json={"query": "liability"}, headers=headers)
    ).status_code == 200
    assert (
        await service.client.post(f"{base}/retrieve", json={"query": "liability"}, headers=headers)
    ).status_code == 200
    search = await service.client.post(
        f"{base}/search",
        json={"collection": arena.name, "goal": {"query": "liability"}},
        headers=headers,
    )
    assert search.status_code == 200
    assert search.json()["chunks"][0]["tags"] == []
    async with owner_connection.transaction():
        await owner_connection.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
        rows = await owner_connection.fetch(
            "SELECT topic, key, payload::text AS payload FROM mnemo.outbox ORDER BY seq"
        )
    records = [json.loads(row["payload"])["data"]["record"] for row in rows]
    assert [r["operation"] for r in records] == ["navigate", "retrieve", "search"]
    for row, record in zip(rows, records, strict=True):
        assert row["topic"] == "mnemo.audit.v1"
        assert bytes(row["key"]) == str(tenant).encode()
        assert record["action"] == f"corpus:{arena.name}:query"
        assert record["k_returned"] == len(record["returned_ids"]) >= 1
        assert record["scope_digest"]
        assert record["principal"]
        assert record["query_digest"]
        assert record["latency_ms"] >= 0


async def test_documents_page_through_the_corpus_in_id_order(
    declare: Declare, new_tenant: NewTenant, service: Service
) -> None:
    arena = await declare()
    tenant = await new_tenant()
    await arena.write(tenant, docs("c1", "x") + docs("c1", "y"))
    seen: list[str] = []
    after = None
    while True:
        params = {"limit": 4} if after is None else {"limit": 4, "after": after}
        page = await service.client.get(
            f"/v1/corpora/{arena.name}/documents", params=params, headers=service.token(tenant)
        )
        assert page.status_code == 200, page.text
        seen += [doc["id"] for doc in page.json()["documents"]]
        after = page.json()["next_after"]
        if after is None:
            break
    assert seen == sorted(seen)
    assert len(seen) == 6


async def test_another_tenants_token_sees_nothing_of_this_tenant(
    declare: Declare, new_tenant: NewTenant, service: Service
) -> None:
    arena = await declare()
    tenant, other = await new_tenant(), await new_tenant()
    await arena.write(tenant, docs("c1", "x"), edges("c1", "x"))
    response = await service.client.post(
        f"/v1/corpora/{arena.name}/retrieve",
        json={"query": "liability"},
        headers=service.token(other),
    )
    assert response.status_code == 200
    assert response.json()["items"] == []
    _ = uuid


async def test_a_where_on_a_documents_only_column_scopes_the_documents_and_their_edges(
    declare: Declare, new_tenant: NewTenant, service: Service
) -> None:
    arena = await declare()
    service.pinned[arena.name] = PINNED
    tenant = await new_tenant()
    await arena.write(
        tenant, docs("c1", "one") + docs("c2", "two"), edges("c1", "one") + edges("c2", "two")
    )
    headers = service.token(tenant, client={"tenant_id": "c1"})
    where = "title LIKE 'liability%'"  # `title` is a column of the documents store only
    response = await service.client.post(
        f"/v1/corpora/{arena.name}/navigate",
        json={"query": "liability cap termination notice", "budget": 10, "where": where},
        headers=headers,
    )
    assert response.status_code == 200, response.text
    hits = {hit["id"] for hit in response.json()["hits"]}
    assert hits
    assert hits <= {"one-a", "one-b"}
    retrieved = await service.client.post(
        f"/v1/corpora/{arena.name}/retrieve",
        json={"query": "liability notice", "k": 10, "where": where},
        headers=headers,
    )
    assert retrieved.status_code == 200, retrieved.text
    assert {item["id"] for item in retrieved.json()["items"]} <= {"one-a", "one-b"}
    for unknown in ("colour == 'red'", "weight > 0.1"):  # on neither store / edges only
        refused = await service.client.post(
            f"/v1/corpora/{arena.name}/navigate",
            json={"query": "liability", "where": unknown},
            headers=headers,
        )
        assert refused.status_code == 422, refused.text
        assert f"'{unknown.split()[0]}'" in refused.text
