"""A query's audit event names the end-client a client-confined token was confined to, as a
structured `client` object (the audit API confines client tokens by it), and none for a
tenant-wide token."""

from __future__ import annotations

import json
import uuid

import asyncpg
import pytest

from tests.integration.navigator.conftest import PINNED, Declare, NewTenant, Service

pytestmark = pytest.mark.timeout(60)

DOCS = [
    {"id": "a", "tenant_id": "c1", "title": "alpha notes", "body": None},
    {"id": "b", "tenant_id": "c2", "title": "alpha other", "body": None},
]


async def audited(owner: asyncpg.Connection, tenant: uuid.UUID) -> list[dict[str, object]]:
    async with owner.transaction():
        await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
        rows = await owner.fetch("SELECT payload::text AS p FROM mnemo.outbox ORDER BY seq")
    return [json.loads(r["p"])["data"]["record"] for r in rows]


async def test_the_audit_event_of_a_query_names_the_tokens_end_client(
    declare: Declare, new_tenant: NewTenant, service: Service, owner_connection: asyncpg.Connection
) -> None:
    arena = await declare()
    tenant = await new_tenant()
    await arena.write(tenant, DOCS)
    service.pinned[arena.name] = PINNED
    base = f"/v1/corpora/{arena.name}"
    for claim in ({"tenant_id": "c1"}, {"tenant_id": "c2", "note": "x\x00y"}, None):
        answer = await service.client.post(
            f"{base}/retrieve", json={"query": "alpha"}, headers=service.token(tenant, client=claim)
        )
        assert answer.status_code == 200, answer.text
    records = await audited(owner_connection, tenant)
    assert [r["client"] for r in records] == [
        {"tenant_id": "c1"},
        {"tenant_id": "c2", "note": "x\ufffdy"},
        None,
    ]
