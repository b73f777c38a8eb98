"""Upgrading a deployment that already holds audit chains (migration 0014, chain version 2): a
chain that verifies under version 1 is relinked and verifies after the upgrade, and appends go on
from its head; a chain the owner tampered with keeps its break where it was, with the old hashes
from there on, instead of being laundered into a valid chain."""

from __future__ import annotations

import uuid

import asyncpg
from mnemo_store.audit_log import AuditLog, verify_tenant

from tests.integration.audit.test_audit_chain_in_postgres import event, tamper
from tests.integration.scratch_database import migrate, on_database, scratch_database

BEFORE_CHAIN_V2 = "0013_forget_and_truncate"


async def hashes(owner: asyncpg.Connection, tenant: uuid.UUID) -> dict[int, bytes]:
    async with owner.transaction():
        await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
        rows = await owner.fetch(
            "SELECT seq, hash FROM mnemo.audit_log WHERE axon_tenant = $1 ORDER BY seq", tenant
        )
    return {row["seq"]: bytes(row["hash"]) for row in rows}


async def test_upgrading_relinks_intact_chains_and_keeps_a_tampered_one_broken_where_it_was(
    superuser_dsn: str, owner_dsn: str
) -> None:
    intact, tampered = uuid.uuid4(), uuid.uuid4()
    async with scratch_database(superuser_dsn, owner_dsn, "mnemo_chain_", BEFORE_CHAIN_V2) as name:
        owner_url, audit_url = (
            on_database(owner_dsn, name),
            on_database(owner_dsn, name, "mnemo_audit"),
        )
        async with await AuditLog.connect(audit_url, max_size=2) as log:
            await log.append(intact, [event(n) for n in range(5)])
            await log.append(tampered, [event(n) for n in range(5)])
        owner = await asyncpg.connect(owner_url)
        try:
            async with owner.transaction():
                await tamper(
                    owner,
                    tampered,
                    "UPDATE mnemo.audit_log SET payload = jsonb_set(payload, '{n}', '999')"
                    " WHERE seq = 3",
                )
            before = {tenant: await hashes(owner, tenant) for tenant in (intact, tampered)}
        finally:
            await owner.close()

        await migrate(owner_url)

        owner = await asyncpg.connect(owner_url)
        try:
            good = await verify_tenant(owner, intact)
            assert (good.ok, good.rows, good.head_seq) == (True, 5, 5)
            after = await hashes(owner, intact)
            assert all(after[seq] != before[intact][seq] for seq in range(1, 6))  # relinked
            bad = await verify_tenant(owner, tampered)
            assert bad.broken is not None
            assert (bad.broken.seq, bad.head_seq) == (3, 2), bad.broken
            kept = await hashes(owner, tampered)
            assert [kept[seq] != before[tampered][seq] for seq in range(1, 6)] == [
                True,
                True,
                False,
                False,
                False,
            ]
        finally:
            await owner.close()
        async with await AuditLog.connect(audit_url, max_size=2) as log:
            await log.append(intact, [event(9)])
            report = await log.verify(intact)
        assert (report.ok, report.rows, report.head_seq) == (True, 6, 6)
