"""`mnemo audit verify` and `mnemo audit tail` against the real database."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import uuid

import asyncpg
from mnemo_store.audit_log import AuditLog

from tests.integration.audit.test_audit_chain_in_postgres import event, tamper


def mnemo(*args: str, url: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MNEMO_AUDIT_DATABASE_URL": url}
    return subprocess.run(
        [sys.executable, "-m", "mnemo_cli.main", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


async def test_verify_exits_0_on_a_sound_chain_and_1_naming_the_first_bad_seq(
    audit_log: AuditLog, owner: asyncpg.Connection, audit_dsn: str, owner_dsn: str
) -> None:
    tenant = uuid.uuid4()
    await audit_log.append(tenant, [event(n) for n in range(6)])
    sound = await asyncio.to_thread(
        mnemo, "audit", "verify", "--tenant", str(tenant), url=audit_dsn
    )
    assert sound.returncode == 0, sound.stderr
    assert "6 rows verify" in sound.stdout
    # A throwaway tenant's chain, tampered for good by the owner.
    async with owner.transaction():
        await tamper(owner, tenant, "UPDATE mnemo.audit_log SET producer = 'forger' WHERE seq = 3")
    for url in (audit_dsn, owner_dsn):
        broken = await asyncio.to_thread(
            mnemo, "audit", "verify", "--tenant", str(tenant), "--json", url=url
        )
        assert broken.returncode == 1, broken.stderr
        report = json.loads(broken.stdout)
        assert report["broken"]["seq"] == 3
        assert report["broken"]["problem"] == "altered"
        assert report["head_seq"] == 2


def test_verify_of_an_unknown_tenant_name_says_so(audit_dsn: str) -> None:
    result = mnemo("audit", "verify", "--tenant", "no-such-tenant-xyz", url=audit_dsn)
    assert result.returncode == 2
    assert "unknown tenant" in result.stderr


async def test_tail_prints_new_rows_as_they_arrive_and_ctrl_c_exits_0(
    audit_log: AuditLog, audit_dsn: str
) -> None:
    tenant = uuid.uuid4()
    await audit_log.append(tenant, [event(0)])
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "mnemo_cli.main",
        "audit",
        "tail",
        "--tenant",
        str(tenant),
        "--json",
        "--after-seq",
        "1",
        "--interval",
        "0.1",
        env={**os.environ, "MNEMO_AUDIT_DATABASE_URL": audit_dsn},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        sent = [event(n) for n in range(1, 4)]
        assert process.stdout is not None
        # The first row's line says tail is running and following; the rest arrive after it.
        await audit_log.append(tenant, sent[:1])
        lines = [json.loads(await asyncio.wait_for(process.stdout.readline(), 20))]
        await audit_log.append(tenant, sent[1:])
        lines += [
            json.loads(await asyncio.wait_for(process.stdout.readline(), 20)) for _ in sent[1:]
        ]
        assert [line["seq"] for line in lines] == [2, 3, 4]
        assert [line["event_id"] for line in lines] == [str(e.event_id) for e in sent]
        process.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(process.wait(), 20) == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
