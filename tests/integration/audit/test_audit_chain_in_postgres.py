"""The database links every tenant's audit chain itself; only the audit role appends; tampering shows."""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest
from mnemo_store.audit_chain import GENESIS_HASH, chain_document, link_hash
from mnemo_store.audit_log import AuditLog, NewAuditEvent, verify_tenant

from tests.integration.audit.conftest import RoleDsn

OTHER_ROLES = ("mnemo_app", "mnemo_ingest", "mnemo_navigator", "mnemo_classifier")


def event(n: int = 0, **payload: object) -> NewAuditEvent:
    return NewAuditEvent(
        event_id=uuid.uuid4(),
        kind="query",
        occurred_at=datetime.now(UTC) + timedelta(microseconds=n),
        producer="test",
        trace=None,
        payload={"action": "corpus:Docs:query", "corpus": "Docs", "n": n, **payload},
    )


async def test_the_database_assigns_seq_and_links_each_row_to_the_one_before(
    audit_log: AuditLog,
) -> None:
    tenant = uuid.uuid4()
    events = [event(n, latency_ms=1.25 * n, ids=["a", "é😀"]) for n in range(5)]
    seqs = await audit_log.append(tenant, events)
    assert [seqs[e.event_id] for e in events] == [1, 2, 3, 4, 5]
    rows = await audit_log.page(tenant)
    prev = GENESIS_HASH
    for row, sent in zip(rows, events, strict=True):
        assert row.event_id == sent.event_id
        assert row.payload == sent.payload
        assert row.prev_hash == prev
        assert row.hash == link_hash(prev, chain_document(row))
        prev = row.hash
    assert (await audit_log.verify(tenant)).ok


async def test_appending_the_same_event_again_adds_nothing(audit_log: AuditLog) -> None:
    tenant = uuid.uuid4()
    first, second = event(1), event(2)
    assert await audit_log.append(tenant, [first, first]) == {first.event_id: 1}
    assert await audit_log.append(tenant, [first, second]) == {second.event_id: 2}
    report = await audit_log.verify(tenant)
    assert (report.ok, report.rows, report.head_seq) == (True, 2, 2)


async def test_three_tenants_written_concurrently_each_get_a_contiguous_verifying_chain(
    audit_log: AuditLog,
) -> None:
    tenants = [uuid.uuid4() for _ in range(3)]

    async def writer(tenant: uuid.UUID, start: int) -> None:
        for batch in range(10):
            await audit_log.append(tenant, [event(start + batch * 5 + i) for i in range(5)])

    await asyncio.gather(*(writer(t, w * 1000) for t in tenants for w in range(3)))
    for tenant in tenants:
        report = await audit_log.verify(tenant)
        assert report.ok, report.broken
        assert (report.rows, report.head_seq) == (150, 150)


@pytest.mark.parametrize("role", OTHER_ROLES)
async def test_the_adversarial_insert_fails_for_every_role_but_audit(
    role_dsn: RoleDsn, audit_log: AuditLog, role: str
) -> None:
    tenant = uuid.uuid4()
    await audit_log.append(tenant, [event(1)])
    connection = await asyncpg.connect(role_dsn(role))
    try:
        forged = (
            "INSERT INTO mnemo.audit_log (axon_tenant, seq, event_id, kind, occurred_at, payload,"
            " producer, prev_hash, hash) VALUES ($1, 2, $2, 'query', now(), '{}', 'x',"
            " '\\xdead'::bytea, '\\xbeef'::bytea)"
        )
        plain = (
            "INSERT INTO mnemo.audit_log (axon_tenant, event_id, kind, occurred_at, payload,"
            " producer) VALUES ($1, $2, 'query', now(), '{}', 'x')"
        )
        for statement, args in (
            (forged, (tenant, uuid.uuid4())),
            (plain, (tenant, uuid.uuid4())),
            ("UPDATE mnemo.audit_log SET kind = 'x'", ()),
            ("DELETE FROM mnemo.audit_log", ()),
            ("TRUNCATE mnemo.audit_log", ()),
        ):
            with pytest.raises(asyncpg.InsufficientPrivilegeError):
                async with connection.transaction():
                    await connection.execute(
                        "SELECT set_config('mnemo.tenant', $1, true)", str(tenant)
                    )
                    await connection.execute(statement, *args)
    finally:
        await connection.close()
    report = await audit_log.verify(tenant)
    assert (report.ok, report.head_seq) == (True, 1)


async def test_the_audit_role_may_append_but_never_choose_a_link_nor_change_a_row(
    audit_dsn: str, owner: asyncpg.Connection
) -> None:
    tenant = uuid.uuid4()
    connection = await asyncpg.connect(audit_dsn)
    try:
        for statement in (
            "INSERT INTO mnemo.audit_log (axon_tenant, seq, event_id, kind, occurred_at, payload,"
            " producer) VALUES ($1, 7, $2, 'query', now(), '{}', 'x')",
            "INSERT INTO mnemo.audit_log (axon_tenant, event_id, kind, occurred_at, payload,"
            " producer, hash) VALUES ($1, $2, 'query', now(), '{}', 'x', '\\xbeef'::bytea)",
        ):
            with pytest.raises(asyncpg.InsufficientPrivilegeError):
                async with connection.transaction():
                    await connection.execute(
                        "SELECT set_config('mnemo.tenant', $1, true)", str(tenant)
                    )
                    await connection.execute(statement, tenant, uuid.uuid4())
        for statement in ("UPDATE mnemo.audit_log SET kind = 'x'", "DELETE FROM mnemo.audit_log"):
            with pytest.raises(asyncpg.InsufficientPrivilegeError):
                async with connection.transaction():
                    await connection.execute(
                        "SELECT set_config('mnemo.tenant', $1, true)", str(tenant)
                    )
                    await connection.execute(statement)
    finally:
        await connection.close()
    # The owner holds every privilege, and the trigger still refuses a chosen link.
    with pytest.raises(asyncpg.InsufficientPrivilegeError, match="computed by the database"):
        async with owner.transaction():
            await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
            await owner.execute(
                "INSERT INTO mnemo.audit_log (axon_tenant, seq, event_id, kind, occurred_at,"
                " payload, producer) VALUES ($1, 1, $2, 'query', now(), '{}', 'x')",
                tenant,
                uuid.uuid4(),
            )


async def tamper(owner: asyncpg.Connection, tenant: uuid.UUID, *statements: str) -> None:
    """Run `statements` as the table owner with the append-only trigger off, inside the caller's
    transaction (ALTER TABLE … DISABLE TRIGGER is transactional: the rollback re-enables it)."""
    await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
    await owner.execute("ALTER TABLE mnemo.audit_log DISABLE TRIGGER audit_log_append_only")
    for statement in statements:
        await owner.execute(statement)
    await owner.execute("ALTER TABLE mnemo.audit_log ENABLE TRIGGER audit_log_append_only")


class RollbackError(Exception):
    pass


@pytest.mark.parametrize(
    ("statements", "seq", "problem"),
    [
        (
            ["UPDATE mnemo.audit_log SET payload = jsonb_set(payload, '{n}', '999') WHERE seq = 4"],
            4,
            "altered",
        ),
        (
            ["UPDATE mnemo.audit_log SET occurred_at = occurred_at + interval '1 s' WHERE seq = 6"],
            6,
            "altered",
        ),
        (["DELETE FROM mnemo.audit_log WHERE seq = 3"], 3, "missing"),
        (
            [
                "UPDATE mnemo.audit_log SET seq = -5 WHERE seq = 5",
                "UPDATE mnemo.audit_log SET seq = 5 WHERE seq = 6",
                "UPDATE mnemo.audit_log SET seq = 6 WHERE seq = -5",
            ],
            5,
            "reordered",
        ),
        (
            # Delete a row and renumber the rest to close the gap: the links give it away. The
            # renumbering goes through negative values, so no row ever takes a (tenant, seq) that
            # another still holds, whatever order Postgres visits them in (one `seq = seq - 1`
            # collides on the primary key when it meets seq 4 before seq 3).
            [
                "DELETE FROM mnemo.audit_log WHERE seq = 2",
                "UPDATE mnemo.audit_log SET seq = -(seq - 1) WHERE seq > 2",
                "UPDATE mnemo.audit_log SET seq = -seq WHERE seq < 0",
            ],
            2,
            "reordered",
        ),
    ],
    ids=["alter-payload", "alter-time", "delete", "swap", "delete-and-renumber"],
)
async def test_verify_names_the_first_bad_seq_after_the_owner_tampers(
    audit_log: AuditLog,
    owner: asyncpg.Connection,
    statements: list[str],
    seq: int,
    problem: str,
) -> None:
    tenant = uuid.uuid4()
    await audit_log.append(tenant, [event(n) for n in range(8)])
    with pytest.raises(RollbackError):
        async with owner.transaction():
            await tamper(owner, tenant, *statements)
            report = await verify_tenant(owner, tenant)
            assert report.broken is not None
            assert (report.broken.seq, report.broken.problem) == (seq, problem), report.broken
            assert report.head_seq == seq - 1
            raise RollbackError
    assert (await audit_log.verify(tenant)).ok


async def test_a_tenant_never_reads_another_tenants_audit_rows(audit_log: AuditLog) -> None:
    mine, theirs = uuid.uuid4(), uuid.uuid4()
    await audit_log.append(theirs, [event(1, secret="theirs")])
    await audit_log.append(mine, [event(2)])
    rows = await audit_log.page(mine)
    assert [row.tenant for row in rows] == [mine]
    assert "theirs" not in json.dumps([dict(r.payload) for r in rows])
