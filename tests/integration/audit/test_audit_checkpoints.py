"""The audit service anchors each chain's head on a compacted Kafka topic, and `mnemo audit verify
--checkpoints` sees what the rows alone cannot: a tail cut off, or a chain rewritten and relinked
from some row on, by the owner role (which can switch the log's triggers off)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from mnemo_cli.main import main
from mnemo_events.audit_checkpoints import Checkpoint, read_checkpoints
from mnemo_events.settings import KafkaSettings
from mnemo_store.audit_chain import chain_document, link_hash, payload_digest
from mnemo_store.audit_log import AuditLog

from tests.integration.audit.service import AuditProcess, audit_process, produce, query_event
from tests.waiting import eventually

_COLUMNS = (
    "axon_tenant, seq, event_id, kind, occurred_at, producer, trace, payload, prev_hash, hash,"
    " recorded_at, payload_digest, redacted_at"
)


@pytest.fixture
def service(audit_dsn: str, kafka_bootstrap: str, tmp_path: Path) -> Iterator[AuditProcess]:
    topic = f"mnemo.audit.checkpoints.test-{uuid.uuid4().hex[:10]}"
    process = audit_process(
        audit_dsn,
        kafka_bootstrap,
        tmp_path,
        MNEMO_AUDIT_CHECKPOINT_TOPIC=topic,
        MNEMO_AUDIT_CHECKPOINT_INTERVAL_SECONDS="0.3",
    )
    yield process
    process.kill()


def checkpoint_topic(service: AuditProcess) -> str:
    return service.env["MNEMO_AUDIT_CHECKPOINT_TOPIC"]


async def verify(
    capsys: pytest.CaptureFixture[str], service: AuditProcess, tenant: uuid.UUID
) -> tuple[int, dict[str, Any]]:
    capsys.readouterr()
    code = await asyncio.to_thread(
        main,
        [
            "audit",
            "verify",
            "--tenant",
            str(tenant),
            "--database-url",
            service.env["MNEMO_AUDIT_DATABASE_URL"],
            "--checkpoints",
            "--checkpoint-topic",
            checkpoint_topic(service),
            "--json",
        ],
    )
    return code, json.loads(capsys.readouterr().out)


async def tampered(
    owner: asyncpg.Connection, tenant: uuid.UUID, *statements: tuple[str, list[Any]]
) -> None:
    """Run `statements` as the owner with the log's own triggers off, committed (the verifier runs
    on another connection)."""
    async with owner.transaction():
        await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
        await owner.execute("ALTER TABLE mnemo.audit_log DISABLE TRIGGER USER")
        for statement, args in statements:
            await owner.executemany(statement, args) if args else await owner.execute(statement)
        await owner.execute("ALTER TABLE mnemo.audit_log ENABLE TRIGGER USER")


async def saved_rows(owner: asyncpg.Connection, tenant: uuid.UUID) -> list[asyncpg.Record]:
    async with owner.transaction():
        await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
        return list(await owner.fetch(f"SELECT {_COLUMNS} FROM mnemo.audit_log ORDER BY seq"))


async def restore(owner: asyncpg.Connection, tenant: uuid.UUID, rows: list[asyncpg.Record]) -> None:
    placeholders = ", ".join(f"${n}" for n in range(1, 14))
    await tampered(
        owner,
        tenant,
        ("DELETE FROM mnemo.audit_log", []),
        (
            f"INSERT INTO mnemo.audit_log ({_COLUMNS}) VALUES ({placeholders})",
            [tuple(row.values()) for row in rows],
        ),
    )


async def test_a_cut_or_rewritten_tail_is_seen_against_the_published_checkpoint(
    service: AuditProcess,
    audit_log: AuditLog,
    owner: asyncpg.Connection,
    kafka_bootstrap: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    tenant: uuid.UUID = await owner.fetchval(
        "INSERT INTO mnemo.tenants (name) VALUES ($1) RETURNING tenant_id",
        f"test-checkpoint-{uuid.uuid4().hex[:12]}",
    )
    service.start()
    await produce(kafka_bootstrap, service.topic, [query_event(tenant, n) for n in range(6)])
    settings = KafkaSettings(bootstrap=kafka_bootstrap)

    async def published() -> Checkpoint | None:
        found = (await read_checkpoints(settings, checkpoint_topic(service))).get(tenant)
        return found if found is not None and found.seq == 6 else None

    checkpoint = await eventually(published, within=60, every=0.3, what="no checkpoint at seq 6")
    assert checkpoint is not None
    assert await audit_log.head(tenant) == (6, checkpoint.hash)
    code, report = await verify(capsys, service, tenant)
    assert (code, report["ok"], report["checkpoint"]["seq"]) == (0, True, 6)

    original = await saved_rows(owner, tenant)
    try:
        # The last two rows cut off: the rows alone still verify, the checkpoint does not agree.
        await tampered(owner, tenant, ("DELETE FROM mnemo.audit_log WHERE seq > 4", []))
        assert (await audit_log.verify(tenant)).ok
        code, report = await verify(capsys, service, tenant)
        assert code == 1
        assert (report["broken"]["problem"], report["broken"]["seq"]) == ("truncated", 5)
        await restore(owner, tenant, original)

        # Row 3 rewritten and every link after it recomputed: a chain that verifies by itself.
        rows = await audit_log.page(tenant)
        forged, prev = [], rows[1].hash
        for row in rows[2:]:
            payload = {**row.payload, "query": "nothing to see"} if row.seq == 3 else row.payload
            changed = dataclasses.replace(row, payload=payload, prev_hash=prev)
            changed = dataclasses.replace(changed, hash=link_hash(prev, chain_document(changed)))
            forged.append(
                (
                    json.dumps(payload),
                    payload_digest(payload),
                    changed.prev_hash,
                    changed.hash,
                    row.seq,
                )
            )
            prev = changed.hash
        await tampered(
            owner,
            tenant,
            (
                "UPDATE mnemo.audit_log SET payload = $1::jsonb, payload_digest = $2,"
                " prev_hash = $3, hash = $4 WHERE seq = $5",
                forged,
            ),
        )
        assert (await audit_log.verify(tenant)).ok
        code, report = await verify(capsys, service, tenant)
        assert code == 1
        assert (report["broken"]["problem"], report["broken"]["seq"]) == ("rewritten", 6)
    finally:
        await restore(owner, tenant, original)
    code, report = await verify(capsys, service, tenant)
    assert (code, report["ok"]) == (0, True)
