"""A query's audit event names the end-client a client-confined token was confined to, as a
structured `client` object (the audit API confines client tokens by it), and none for a
tenant-wide token."""

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


async def test_the_audit_event_of_a_query_names_the_tokens_end_client(
    declare: Declare, new_tenant: NewTenant, service: Service, owner_connection: asyncpg.Connection
) -> None:
    name, tenant = await two_clients_corpus(declare, new_tenant, service)
    base = f"/v1/corpora/{name}"
    for claim in ({"tenant_id": "c1"}, {"tenant_id": "c2", "note": "x\x00y"}, None):
        answer = await service.client.post(
            f"{base}/retrieve", json={"query": "alpha"}, headers=service.token(tenant, client=claim)
        )
        assert answer.status_code == 200, answer.text
    records = await audited_records(owner_connection, tenant)
    assert [r["client"] for r in records] == [
        {"tenant_id": "c1"},
        {"tenant_id": "c2", "note": "x\ufffdy"},
        None,
    ]
