"""The audit service end to end on real Kafka and Postgres: one row per event, dead letters, the
HTTP API under bearer tokens, and a SIGKILL in the middle of 5,000 events."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import httpx
import pytest
from aiokafka import AIOKafkaConsumer
from mnemo_auth import DEVELOPMENT_SECRET, mint_token
from mnemo_events.provisioning import ensure_topics
from mnemo_events.settings import KafkaSettings
from mnemo_store.audit_log import AuditLog

from tests.integration.audit.service import (
    AuditProcess,
    audit_process,
    persist_event,
    produce,
    query_event,
)
from tests.waiting import eventually

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
async def tenants(owner: asyncpg.Connection) -> list[uuid.UUID]:
    return [
        await owner.fetchval(
            "INSERT INTO mnemo.tenants (name) VALUES ($1) RETURNING tenant_id",
            f"test-audit-{uuid.uuid4().hex[:16]}",
        )
        for _ in range(3)
    ]


@pytest.fixture
def service(audit_dsn: str, kafka_bootstrap: str, tmp_path: Path) -> Iterator[AuditProcess]:
    process = audit_process(audit_dsn, kafka_bootstrap, tmp_path)
    yield process
    process.kill()


async def wait_for_rows(log: AuditLog, expected: dict[uuid.UUID, int], within: float = 120) -> None:
    counts: dict[uuid.UUID, int] = {}

    async def all_there() -> bool:
        counts.update({t: (await log.verify(t)).rows for t in expected})
        return counts == expected

    await eventually(
        all_there, within=within, every=0.3, what=lambda: f"rows {counts}, expected {expected}"
    )


async def dead_letters(
    bootstrap: str, topic: str, count: int
) -> list[tuple[bytes | None, dict[str, bytes]]]:
    consumer = AIOKafkaConsumer(
        topic + ".dlt", bootstrap_servers=bootstrap, auto_offset_reset="earliest", group_id=None
    )
    await consumer.start()
    found: list[tuple[bytes | None, dict[str, bytes]]] = []
    try:
        deadline = time.monotonic() + 30
        while len(found) < count and time.monotonic() < deadline:
            batch = await consumer.getmany(timeout_ms=500)
            for records in batch.values():
                found.extend((r.key, dict(r.headers)) for r in records)
    finally:
        await consumer.stop()
    return found


def token(tenant: uuid.UUID, scopes: tuple[str, ...] = ("audit",)) -> dict[str, str]:
    return {
        "Authorization": "Bearer "
        + mint_token(tenant=tenant, secret=DEVELOPMENT_SECRET, scopes=scopes)
    }


async def test_every_audit_event_lands_once_with_every_field_and_the_poison_is_dead_lettered(
    service: AuditProcess, audit_log: AuditLog, tenants: list[uuid.UUID], kafka_bootstrap: str
) -> None:
    service.start()
    sent = {
        tenant: [query_event(tenant, n) if n % 3 else persist_event(tenant, n) for n in range(40)]
        for tenant in tenants
    }
    interleaved = [e for batch in zip(*sent.values(), strict=True) for e in batch]
    unknown = uuid.uuid4()
    too_big = query_event(tenants[0], 1).model_copy(update={"event_id": uuid.uuid4()})
    too_big_json = json.loads(too_big.model_dump_json())
    too_big_json["data"]["record"]["k_returned"] = 2**60
    poison: list[tuple[bytes, bytes]] = [
        (str(tenants[0]).encode(), b"{not json"),
        (str(unknown).encode(), query_event(unknown, 1).model_dump_json().encode()),
        (str(tenants[1]).encode(), query_event(tenants[0], 2).model_dump_json().encode()),
        (str(tenants[0]).encode(), json.dumps(too_big_json).encode()),
    ]
    # Every event twice (a producer retry): still one row each.
    await produce(kafka_bootstrap, service.topic, [*interleaved, *poison, *interleaved])
    await wait_for_rows(audit_log, dict.fromkeys(tenants, 40))

    for tenant, events in sent.items():
        rows = await audit_log.page(tenant, limit=1000)
        assert [r.event_id for r in rows] == [e.event_id for e in events]
        for row, envelope in zip(rows, events, strict=True):
            assert row.tenant == tenant
            assert row.kind == envelope.data.record.kind
            assert row.occurred_at == envelope.occurred_at
            assert row.producer == envelope.producer
            assert row.trace == envelope.trace
            assert dict(row.payload) == envelope.data.record.model_dump(mode="json")
        assert (await audit_log.verify(tenant)).ok

    letters = await dead_letters(kafka_bootstrap, service.topic, len(poison))
    reasons = sorted(h["mnemo-dlt-reason"].decode() for _, h in letters)
    assert len(letters) == len(poison), reasons
    assert any("invalid envelope" in r for r in reasons)
    assert any(f"unknown tenant {unknown}" in r for r in reasons)
    assert any("key mismatch" in r for r in reasons)
    assert any("2^53" in r for r in reasons)
    assert service.terminate() == 0


async def test_the_http_api_pages_filters_and_verifies_only_the_tokens_tenant(
    service: AuditProcess, audit_log: AuditLog, tenants: list[uuid.UUID], kafka_bootstrap: str
) -> None:
    mine, theirs = tenants[2], tenants[1]
    service.start()
    events = [query_event(mine, n, corpus="Alpha" if n % 2 else "Beta") for n in range(10)]
    before = (await audit_log.verify(mine)).rows
    await produce(kafka_bootstrap, service.topic, [*events, query_event(theirs, 99)])
    await wait_for_rows(audit_log, {mine: before + 10})
    async with httpx.AsyncClient(base_url=service.url, timeout=30) as http:
        assert (await http.get("/v1/audit")).status_code == 401
        assert (
            await http.get("/v1/audit", headers={"Authorization": "Bearer nope"})
        ).status_code == 401
        assert (await http.get("/v1/audit", headers=token(mine, ("read",)))).status_code == 403
        page = (
            await http.get("/v1/audit", params={"corpus": "Alpha", "limit": 3}, headers=token(mine))
        ).json()
        assert [i["payload"]["corpus"] for i in page["items"]] == ["Alpha"] * 3
        rest = (
            await http.get(
                "/v1/audit",
                params={
                    "corpus": "Alpha",
                    "after": page["next_after"],
                    "type": "corpus:Alpha:query",
                },
                headers=token(mine),
            )
        ).json()
        ids = {i["event_id"] for i in page["items"] + rest["items"]}
        assert ids == {str(e.event_id) for e in events if e.data.record.corpus == "Alpha"}  # type: ignore[union-attr]
        assert rest["next_after"] is None
        assert all(i["payload"].get("n") is None for i in page["items"])
        verify = (await http.get("/v1/audit/verify", headers=token(mine))).json()
        assert verify["ok"] is True
        assert verify["head_seq"] == before + 10
        # Another tenant's token sees its own rows only.
        theirs_page = (
            await http.get("/v1/audit", params={"limit": 1000}, headers=token(theirs))
        ).json()
        assert not ids & {i["event_id"] for i in theirs_page["items"]}
        future = (
            await http.get(
                "/v1/audit", params={"since": "2999-01-01T00:00:00Z"}, headers=token(mine)
            )
        ).json()
        assert future["items"] == []
        assert (
            await http.get("/v1/audit", params={"since": "yesterday"}, headers=token(mine))
        ).status_code == 422


async def test_a_sigkill_in_the_middle_of_5000_events_loses_and_duplicates_nothing(
    service: AuditProcess, audit_log: AuditLog, owner: asyncpg.Connection, kafka_bootstrap: str
) -> None:
    tenants = [
        await owner.fetchval(
            "INSERT INTO mnemo.tenants (name) VALUES ($1) RETURNING tenant_id",
            f"test-audit-kill-{uuid.uuid4().hex[:12]}",
        )
        for _ in range(2)
    ]
    events = [query_event(tenants[n % 2], n) for n in range(5000)]
    await ensure_topics(KafkaSettings(bootstrap=kafka_bootstrap, partitions=3), [service.topic])
    await produce(kafka_bootstrap, service.topic, events)
    service.start()

    async def some_appended() -> bool:
        return sum([(await audit_log.verify(t)).rows for t in tenants]) >= 1500

    await eventually(some_appended, within=120, every=0.05, what="the service appended too slowly")
    service.kill()
    landed = sum([(await audit_log.verify(t)).rows for t in tenants])
    assert landed < 5000, "the kill came too late to test anything"
    service.start()
    await wait_for_rows(audit_log, dict.fromkeys(tenants, 2500))
    for tenant in tenants:
        report = await audit_log.verify(tenant)
        assert report.ok, report.broken
        rows = await audit_log.page(tenant, limit=5000)
        assert [r.event_id for r in rows] == [e.event_id for e in events if e.tenant == tenant]
