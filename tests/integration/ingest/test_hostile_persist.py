"""Hostile producers against ingest and the audit service, over real Kafka and Postgres: an audit
event sent ahead under the id ingest used to derive does not suppress ingest's own audit row, an
audit event from a producer that may not write it is dead-lettered, and persist messages sharing an
event id are never dropped without a record (a refused first one does not hide the second; another
payload under a known id is dead-lettered with the reason)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable, Iterator
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer
from mnemo_events import AuditRecorded, PersistAudited, new_envelope
from mnemo_events.dead_letters import REASON
from mnemo_store.audit_log import AuditLog

from tests.integration.audit.service import AuditProcess, audit_process, produce
from tests.integration.ingest.conftest import IngestProcess, envelope, table, until

pytestmark = pytest.mark.timeout(240)

DIFFERENT = "duplicate event id with a different payload"


@pytest.fixture(scope="module")
def audit_dsn(owner_dsn: str) -> str:
    return os.environ.get("MNEMO_AUDIT_DATABASE_URL") or owner_dsn.replace(
        "mnemo_owner:mnemo_owner", "mnemo_audit:mnemo_audit"
    )


@pytest.fixture(scope="module")
def audit(
    ingest: IngestProcess, audit_dsn: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[AuditProcess]:
    """The audit service consuming the audit topic this module's ingest publishes to."""
    process = audit_process(
        audit_dsn,
        ingest.bootstrap,
        tmp_path_factory.mktemp("audit"),
        MNEMO_AUDIT_TOPIC=ingest.audit_topic,
    )
    process.start()
    yield process
    process.kill()


def _doc(sub: uuid.UUID, title: str, doc_id: uuid.UUID | None = None) -> dict[str, Any]:
    return {"id": str(doc_id or uuid.uuid4()), "tenant_id": str(sub), "title": title, "body": title}


def _persist_audit(
    tenant: uuid.UUID, store: str, source: uuid.UUID, event_id: uuid.UUID, producer: str
) -> Any:
    return new_envelope(
        AuditRecorded(
            record=PersistAudited(
                action=f"store:{store}:persist",
                store=store,
                row_ids=("forged-row",),
                source_event_ids=(source,),
                principal="test-producer",
                trace_id=None,
            )
        ),
        tenant=tenant,
        producer=producer,
        event_type="mnemo.audit.v1",
        event_id=event_id,
    )


async def _audit_rows(audit_dsn: str, tenant: uuid.UUID) -> list[Any]:
    async with await AuditLog.connect(audit_dsn) as log:
        return await log.page(tenant, limit=10_000)


async def _dead_letter_reasons(bootstrap: str, topic: str, marks: Iterable[str]) -> dict[str, str]:
    """The reason of each dead letter of `topic` whose value holds one of `marks` (every record of
    `<topic>.dlt` read from its start, until two seconds pass without a new one)."""
    consumer = AIOKafkaConsumer(
        topic + ".dlt", bootstrap_servers=bootstrap, auto_offset_reset="earliest", group_id=None
    )
    await consumer.start()
    reasons: dict[str, str] = {}
    try:
        while batches := await consumer.getmany(timeout_ms=2000):
            for records in batches.values():
                for record in records:
                    for mark in marks:
                        if mark.encode() in record.value:
                            reasons[mark] = dict(record.headers)[REASON].decode()
    finally:
        await consumer.stop()
    return reasons


async def test_an_audit_event_sent_first_under_the_old_predictable_id_does_not_suppress_ingests_row(
    ingest: IngestProcess, audit: AuditProcess, audit_dsn: str
) -> None:
    tenant, sub = ingest.tenants[0], uuid.uuid4()
    source, doc = uuid.uuid4(), _doc(sub, "the genuine memory")
    # The id ingest used to give the audit event of this event's row: uuid5(source, audit:<store>:1).
    predicted = uuid.uuid5(source, f"audit:{ingest.docs}:1")
    forged = _persist_audit(tenant, ingest.docs, source, predicted, "mnemo.ingest")
    await produce(ingest.bootstrap, ingest.audit_topic, [forged])

    async def forged_first() -> bool:
        return any(r.event_id == predicted for r in await _audit_rows(audit_dsn, tenant))

    await until(forged_first, wait=60)
    await ingest.produce([envelope(tenant, ingest.docs, doc, event_id=source)])

    async def genuine_row() -> bool:
        return any(
            doc["id"] in r.payload.get("row_ids", ()) for r in await _audit_rows(audit_dsn, tenant)
        )

    await until(genuine_row, wait=60)
    rows = [r for r in await _audit_rows(audit_dsn, tenant) if doc["id"] in r.payload["row_ids"]]
    assert len(rows) == 1
    assert rows[0].event_id != predicted
    assert rows[0].producer == "mnemo.ingest"
    assert rows[0].payload["source_event_ids"] == [str(source)]
    async with await AuditLog.connect(audit_dsn) as log:
        assert (await log.verify(tenant)).ok


async def test_audit_events_from_producers_that_may_not_write_them_are_dead_lettered(
    ingest: IngestProcess, audit: AuditProcess, audit_dsn: str
) -> None:
    tenant = ingest.tenants[1]
    stranger = _persist_audit(tenant, ingest.docs, uuid.uuid4(), uuid.uuid4(), "forger")
    wrong_kind = _persist_audit(tenant, ingest.docs, uuid.uuid4(), uuid.uuid4(), "mnemo.navigator")
    marks = {str(stranger.event_id): "'forger' may not write", str(wrong_kind.event_id): "only"}
    await produce(ingest.bootstrap, ingest.audit_topic, [stranger, wrong_kind])
    reasons: dict[str, str] = {}

    async def both_dead_lettered() -> bool:
        reasons.update(await _dead_letter_reasons(ingest.bootstrap, ingest.audit_topic, marks))
        return reasons.keys() == marks.keys()

    await until(both_dead_lettered, wait=60)
    for mark, expected in marks.items():
        assert expected in reasons[mark], reasons
    assert "'persist' audit records, only prefetch, query" in reasons[str(wrong_kind.event_id)]
    appended = {str(r.event_id) for r in await _audit_rows(audit_dsn, tenant)}
    assert not appended & marks.keys()


async def test_a_refused_message_does_not_hide_a_valid_one_with_its_event_id_in_the_same_batch(
    ingest: IngestProcess,
) -> None:
    tenant, sub = ingest.tenants[2], uuid.uuid4()
    pairs = []
    for n in range(5):
        event_id = uuid.uuid4()
        bad = {**_doc(sub, f"refused {n}"), "score": "many"}
        good = _doc(sub, f"valid {n}")
        pairs.append((bad, good))
        ingest_records = [
            envelope(tenant, ingest.docs, bad, event_id=event_id),
            envelope(tenant, ingest.docs, good, event_id=event_id),
        ]
        await ingest.produce(ingest_records)
    ids = ", ".join(f"'{good['id']}'" for _, good in pairs)

    async def all_written() -> bool:
        return await ingest.count(tenant, table(ingest.docs), f"id IN ({ids})") == len(pairs)

    await until(all_written, wait=60)
    reasons: dict[str, str] = {}

    async def all_refused() -> bool:
        marks = [bad["id"] for bad, _ in pairs]
        reasons.update(await _dead_letter_reasons(ingest.bootstrap, ingest.topic, marks))
        return len(reasons) == len(pairs)

    await until(all_refused, wait=60)
    assert all("score" in reason for reason in reasons.values()), reasons


async def test_another_payload_under_a_known_event_id_is_dead_lettered_and_a_true_repeat_is_not(
    ingest: IngestProcess,
) -> None:
    tenant, sub = ingest.tenants[2], uuid.uuid4()
    earlier, later = uuid.uuid4(), uuid.uuid4()
    first = _doc(sub, "first of its id")
    await ingest.produce([envelope(tenant, ingest.docs, first, event_id=earlier)])

    async def stored() -> bool:
        return await ingest.count(tenant, table(ingest.docs), f"id = '{first['id']}'") == 1

    await until(stored, wait=60)
    reused_later = _doc(sub, "another row under a processed id")
    await ingest.produce([envelope(tenant, ingest.docs, reused_later, event_id=earlier)])
    reasons: dict[str, str] = {}

    async def refused_later() -> bool:
        marks = [reused_later["id"]]
        reasons.update(await _dead_letter_reasons(ingest.bootstrap, ingest.topic, marks))
        return bool(reasons)

    await until(refused_later, wait=60)
    assert DIFFERENT in reasons[reused_later["id"]]
    assert "processed before" in reasons[reused_later["id"]]

    kept, reused_now = _doc(sub, "kept in its batch"), _doc(sub, "second of a batch's id")
    await ingest.produce(
        [
            envelope(tenant, ingest.docs, dict(first), event_id=earlier),  # a true repeat
            envelope(tenant, ingest.docs, kept, event_id=later),
            envelope(tenant, ingest.docs, reused_now, event_id=later),
        ]
    )
    marks = [first["id"], kept["id"], reused_now["id"]]

    async def refused_now() -> bool:
        reasons.update(await _dead_letter_reasons(ingest.bootstrap, ingest.topic, marks))
        return reused_now["id"] in reasons

    await until(refused_now, wait=60)
    assert DIFFERENT in reasons[reused_now["id"]]
    assert "earlier in this batch" in reasons[reused_now["id"]]
    assert first["id"] not in reasons, "a true repeat is no dead letter"
    assert kept["id"] not in reasons
    ids = ", ".join(f"'{m}'" for m in (*marks, reused_later["id"]))
    assert await ingest.count(tenant, table(ingest.docs), f"id IN ({ids})") == 2
    assert await ingest.count(tenant, table(ingest.docs), f"id = '{kept['id']}'") == 1
