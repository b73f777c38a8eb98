"""Adaptive memory and the graph cache against real Postgres: reinforcement lands and changes the
next navigation's EPR, concurrent navigations lose no update and never deadlock, a write committed
before a request is always seen, and the navigator's own reinforcement keeps the cache warm."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import asyncpg
import pytest

from tests.integration.navigator.conftest import Declare, NewTenant, Service

DOCS = [
    {"id": "a", "tenant_id": "c1", "title": "alpha liability", "body": None},
    {"id": "b", "tenant_id": "c1", "title": "beta cap", "body": None},
    {"id": "c", "tenant_id": "c1", "title": "gamma notice", "body": None},
]
EDGES = [
    {"from_id": "a", "to_id": "b", "etype": "cite", "weight": 0.5, "tenant_id": "c1"},
    {"from_id": "a", "to_id": "c", "etype": "cite", "weight": 0.5, "tenant_id": "c1"},
]


async def weights(owner: asyncpg.Connection, table: str, tenant: uuid.UUID) -> dict[str, float]:
    async with owner.transaction():
        await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
        rows = await owner.fetch(f'SELECT from_id, to_id, weight FROM axon_stores."{table}"')
    return {f"{r['from_id']}->{r['to_id']}": r["weight"] for r in rows}


async def navigate(service: Service, corpus: str, tenant: uuid.UUID, query: str) -> dict[str, Any]:
    response = await service.client.post(
        f"/v1/corpora/{corpus}/navigate",
        json={"query": query, "from": "a", "budget": 2},
        headers=service.token(tenant),
    )
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


async def test_reinforcement_lands_in_the_store_and_changes_the_next_navigations_epr(
    declare: Declare, new_tenant: NewTenant, service: Service, owner_connection: asyncpg.Connection
) -> None:
    arena = await declare()
    tenant = await new_tenant()
    await arena.write(tenant, DOCS, EDGES)
    first = await navigate(service, arena.name, tenant, "alpha beta")  # s = 1: s̄ = 1, Δ = 0
    assert await weights(owner_connection, arena.corpus.relations.name, tenant) == {
        "a->b": 0.5,
        "a->c": 0.5,
    }
    # Budget 2 covers two of three terms: a lower score than the baseline, so a->b weakens.
    await navigate(service, arena.name, tenant, "alpha beta gamma")
    after = await weights(owner_connection, arena.corpus.relations.name, tenant)
    assert after["a->b"] < 0.5
    assert after["a->c"] == 0.5
    third = await navigate(service, arena.name, tenant, "alpha beta")
    assert third["revision"] > first["revision"]
    assert third["diagnostics"]["cache"] == "hit"  # its own reinforcement did not cost a reload
    epr_first = {hit["id"]: hit["epr"] for hit in first["hits"]}
    epr_third = {hit["id"]: hit["epr"] for hit in third["hits"]}
    assert epr_first["b"] != epr_third["b"]


async def test_sixteen_concurrent_navigations_lose_no_update_and_never_deadlock(
    declare: Declare, new_tenant: NewTenant, service: Service, owner_connection: asyncpg.Connection
) -> None:
    arena = await declare()
    tenant = await new_tenant()
    await arena.write(tenant, DOCS, EDGES)
    await navigate(service, arena.name, tenant, "alpha beta")  # the scope's baseline: s = 1
    results = await asyncio.gather(
        *(navigate(service, arena.name, tenant, "alpha beta gamma") for _ in range(16))
    )
    assert len(results) == 16
    async with owner_connection.transaction():
        await owner_connection.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
        outcomes = await owner_connection.fetch(
            "SELECT seq, score, traversed::text AS traversed FROM mnemo.nav_outcomes"
            " WHERE corpus_id = $1 ORDER BY seq",
            arena.name,
        )
    assert [row["seq"] for row in outcomes] == list(range(1, 18))
    # Replay the incremental rule over the recorded outcomes in sequence order: the store must
    # hold exactly what it gives (a lost update would leave an edge short of it).
    expected = {"a->b": 0.5, "a->c": 0.5}
    scores: list[float] = []
    for row in outcomes:
        scores.append(row["score"])
        delta = 0.1 * (row["score"] - sum(scores) / len(scores))
        for edge in json.loads(row["traversed"]):
            key = f"{edge['from']}->{edge['to']}"
            if delta != 0.0:
                expected[key] = min(max(expected[key] + delta, 0.001), 1.0)
    after = await weights(owner_connection, arena.corpus.relations.name, tenant)
    assert after == pytest.approx(expected, abs=1e-12)


async def test_a_write_committed_before_a_navigation_is_always_seen(
    declare: Declare, new_tenant: NewTenant, service: Service
) -> None:
    arena = await declare(adaptive=False)
    tenant = await new_tenant()
    await arena.write(tenant, DOCS, EDGES)
    warm = await navigate(service, arena.name, tenant, "alpha beta")
    again = await navigate(service, arena.name, tenant, "alpha beta")
    assert again["diagnostics"]["cache"] == "hit"
    for k in range(5):
        new_id = f"n{k}"
        await arena.write(
            tenant,
            [{"id": new_id, "tenant_id": "c1", "title": f"fresh{k} words", "body": None}],
            [{"from_id": "a", "to_id": new_id, "etype": "cite", "weight": 1.0, "tenant_id": "c1"}],
        )
        seen = await navigate(service, arena.name, tenant, f"alpha fresh{k}")
        assert new_id in [hit["id"] for hit in seen["hits"]]
        assert seen["revision"] > warm["revision"]
