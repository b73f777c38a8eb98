"""Text the caller controls that reaches the audit event, a search goal and a token's `client`
claim, may hold a NUL, which Postgres cannot store: the request is answered and audited (the NUL
stored as U+FFFD), not failed with a 500 as it was (found by the chaos leak test)."""

from __future__ import annotations

import asyncpg
import pytest

from tests.integration.navigator.conftest import (
    Declare,
    NewTenant,
    Service,
    audited_records,
    two_clients_corpus,
)

pytestmark = pytest.mark.timeout(60)


async def test_a_nul_in_a_search_goal_or_a_client_claim_is_audited_not_a_500(
    declare: Declare, new_tenant: NewTenant, service: Service, owner_connection: asyncpg.Connection
) -> None:
    name, tenant = await two_clients_corpus(declare, new_tenant, service)
    base = f"/v1/corpora/{name}"
    search = await service.client.post(
        f"{base}/search",
        json={"collection": name, "goal": {"query": "alpha\x00notes"}},
        headers=service.token(tenant),
    )
    assert search.status_code == 200, search.text
    claim = {"tenant_id": "c1", "note": "x\x00y"}
    retrieve = await service.client.post(
        f"{base}/retrieve", json={"query": "alpha"}, headers=service.token(tenant, client=claim)
    )
    assert retrieve.status_code == 200, retrieve.text
    assert [item["id"] for item in retrieve.json()["items"]] == ["a"]
    records = await audited_records(owner_connection, tenant)
    assert [r["query"] for r in records] == ["alpha\ufffdnotes", "alpha"]
    assert "x\ufffdy" in str(records[1]["principal"])
