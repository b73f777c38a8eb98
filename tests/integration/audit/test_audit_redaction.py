"""Chain version 2: a row's link covers a digest of its payload, so redacting the payload keeps
the row's place and link; redaction is the one change the log accepts, once, and nothing else."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest
from mnemo_store.audit_chain import payload_digest
from mnemo_store.audit_log import AuditLog, NewAuditEvent, verify_tenant

REDACT = (
    "UPDATE mnemo.audit_log SET payload = '{}'::jsonb, redacted_at = now()"
    " WHERE axon_tenant = $1 AND seq = $2"
)


def event(n: int, **payload: object) -> NewAuditEvent:
    return NewAuditEvent(
        event_id=uuid.uuid4(),
        kind="query",
        occurred_at=datetime.now(UTC) + timedelta(microseconds=n),
        producer="test",
        trace=None,
        payload={"action": "corpus:Docs:query", "n": n, "query": f"secret {n}", **payload},
    )


class RollbackError(Exception):
    """Raised to roll the owner's tampering back."""


async def as_owner(
    owner: asyncpg.Connection, tenant: uuid.UUID, statement: str, *args: object
) -> None:
    async with owner.transaction():
        await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
        await owner.execute(statement, *args)


async def test_the_database_stores_the_digest_python_computes_for_each_payload(
    audit_log: AuditLog,
) -> None:
    tenant = uuid.uuid4()
    events = [event(1, ids=["é😀", "a"], score=0.1 + 0.2), event(2, nested={"z": [1, None, True]})]
    await audit_log.append(tenant, events)
    rows = await audit_log.page(tenant)
    assert [row.payload_digest for row in rows] == [payload_digest(e.payload) for e in events]
    assert (await audit_log.verify(tenant)).ok


async def test_a_redacted_row_keeps_its_place_and_link_and_verify_reports_it(
    audit_log: AuditLog, owner: asyncpg.Connection
) -> None:
    tenant = uuid.uuid4()
    await audit_log.append(tenant, [event(n) for n in range(6)])
    before = await audit_log.verify(tenant)
    await as_owner(owner, tenant, REDACT, tenant, 3)
    rows = await audit_log.page(tenant)
    assert rows[2].redacted
    assert rows[2].payload == {}
    assert not any(row.redacted for i, row in enumerate(rows) if i != 2)
    report = await audit_log.verify(tenant)
    assert report.ok, report.broken
    assert (report.rows, report.redacted, report.head_hash) == (6, 1, before.head_hash)
    # The chain goes on after a redacted row.
    await audit_log.append(tenant, [event(7)])
    assert (await audit_log.verify(tenant)).ok


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE mnemo.audit_log SET payload = '{\"n\": 1}'::jsonb, redacted_at = now() WHERE seq = 2",
        "UPDATE mnemo.audit_log SET payload = '{}'::jsonb WHERE seq = 2",
        "UPDATE mnemo.audit_log SET payload = '{}'::jsonb, redacted_at = now(), kind = 'x' WHERE seq = 2",
        "UPDATE mnemo.audit_log SET payload = '{}'::jsonb, redacted_at = now(),"
        " payload_digest = sha256('x') WHERE seq = 2",
        "UPDATE mnemo.audit_log SET redacted_at = NULL, payload = '{\"n\": 1}' WHERE seq = 1",
        "UPDATE mnemo.audit_log SET redacted_at = now(), payload = '{}' WHERE seq = 1",
        "DELETE FROM mnemo.audit_log WHERE seq = 1",
    ],
    ids=[
        "rewrite-as-redaction",
        "empty-without-mark",
        "redact-and-change-kind",
        "redact-and-change-digest",
        "un-redact",
        "redact-twice",
        "delete-redacted",
    ],
)
async def test_the_owner_can_redact_a_payload_and_nothing_more(
    audit_log: AuditLog, owner: asyncpg.Connection, statement: str
) -> None:
    tenant = uuid.uuid4()
    await audit_log.append(tenant, [event(1), event(2)])
    await as_owner(owner, tenant, REDACT, tenant, 1)
    with pytest.raises(asyncpg.InsufficientPrivilegeError, match="append-only"):
        await as_owner(owner, tenant, statement)
    report = await audit_log.verify(tenant)
    assert (report.ok, report.rows, report.redacted) == (True, 2, 1)


async def test_a_redacted_row_whose_digest_is_rewritten_breaks_the_chain_there(
    audit_log: AuditLog, owner: asyncpg.Connection
) -> None:
    tenant = uuid.uuid4()
    await audit_log.append(tenant, [event(n) for n in range(4)])
    await as_owner(owner, tenant, REDACT, tenant, 2)
    with pytest.raises(RollbackError):
        async with owner.transaction():
            await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
            await owner.execute("ALTER TABLE mnemo.audit_log DISABLE TRIGGER audit_log_append_only")
            await owner.execute(
                "UPDATE mnemo.audit_log SET payload_digest = sha256('forged') WHERE seq = 2"
            )
            await owner.execute("ALTER TABLE mnemo.audit_log ENABLE TRIGGER audit_log_append_only")
            report = await verify_tenant(owner, tenant)
            assert report.broken is not None
            assert (report.broken.seq, report.broken.problem, report.head_seq) == (2, "altered", 1)
            raise RollbackError
    assert (await audit_log.verify(tenant)).ok
