"""The lock that orders a tenant's audit appends is one only the audit role can take (0010)."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime

import asyncpg
import pytest
from mnemo_store.audit_log import AuditLog, NewAuditEvent

from tests.integration.audit.conftest import RoleDsn

OTHER_ROLES = ("mnemo_app", "mnemo_ingest", "mnemo_navigator", "mnemo_classifier", "mnemo_relay")
# The advisory lock migration 0007 ordered appends with: (class "mnau", hashtext(tenant)).
OLD_LOCK = "SELECT pg_advisory_xact_lock(1835950453, hashtext($1::text))"
DEADLINE = 10.0


def event() -> NewAuditEvent:
    return NewAuditEvent(
        event_id=uuid.uuid4(),
        kind="query",
        occurred_at=datetime.now(UTC),
        producer="test",
        trace=None,
        payload={"action": "corpus:Docs:query"},
    )


@pytest.mark.parametrize("role", OTHER_ROLES)
async def test_another_role_holding_the_old_advisory_lock_does_not_stall_audit_appends(
    role_dsn: RoleDsn, audit_log: AuditLog, role: str
) -> None:
    tenant = uuid.uuid4()
    await audit_log.append(tenant, [event()])
    other = await asyncpg.connect(role_dsn(role))
    try:
        async with other.transaction():
            await other.execute(OLD_LOCK, str(tenant))
            appended = await asyncio.wait_for(audit_log.append(tenant, [event()]), DEADLINE)
        assert list(appended.values()) == [2]
    finally:
        await other.close()


@pytest.mark.parametrize("role", OTHER_ROLES)
async def test_no_other_role_can_lock_a_tenants_chain_head(
    role_dsn: RoleDsn, audit_log: AuditLog, role: str
) -> None:
    tenant = uuid.uuid4()
    await audit_log.append(tenant, [event()])
    other = await asyncpg.connect(role_dsn(role))
    try:
        async with other.transaction():
            await other.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
            with pytest.raises(asyncpg.InsufficientPrivilegeError, match="permission denied"):
                await other.execute(
                    "SELECT 1 FROM mnemo.audit_chain_heads WHERE axon_tenant = $1 FOR UPDATE",
                    tenant,
                )
    finally:
        await other.close()


async def test_the_chain_head_follows_every_append(audit_log: AuditLog, audit_dsn: str) -> None:
    tenant = uuid.uuid4()
    for _ in range(3):
        await audit_log.append(tenant, [event(), event()])
    connection = await asyncpg.connect(audit_dsn)
    try:
        async with connection.transaction():
            await connection.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
            head = await connection.fetchval(
                "SELECT seq FROM mnemo.audit_chain_heads WHERE axon_tenant = $1", tenant
            )
    finally:
        await connection.close()
    assert head == 6
    assert (await audit_log.verify(tenant)).ok
