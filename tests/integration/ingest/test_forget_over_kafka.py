"""Forget commands on their Kafka topic, through the ingest service process, against real Kafka and
Postgres: the document goes with its edges and the outcomes naming it, the audit record names who
and what; a document of another tenant, one outside the command's match, an unknown store and a
malformed command are dead-lettered with their reason, and nothing of theirs is removed."""

from __future__ import annotations

import json
import uuid
from typing import Any

import asyncpg
import pytest
from mnemo_events import new_envelope
from mnemo_events.dead_letters import REASON
from mnemo_events.models import ForgetRow
from mnemo_events.topics import FORGET

from tests.integration.ingest.conftest import IngestProcess, envelope, table, until

pytestmark = pytest.mark.timeout(180)


def forget(
    tenant: uuid.UUID, store: str, doc_id: uuid.UUID, match: dict[str, str] | None = None
) -> tuple[bytes, bytes]:
    env = new_envelope(
        ForgetRow(store=store, id=str(doc_id), match=match or {}),
        tenant=tenant,
        producer="test-forgetter",
        event_type=FORGET,
    )
    return str(tenant).encode(), env.model_dump_json().encode()


def doc(sub: uuid.UUID, doc_id: uuid.UUID, title: str) -> dict[str, Any]:
    return {"id": str(doc_id), "tenant_id": str(sub), "title": title, "body": title}


def link(sub: uuid.UUID, source: uuid.UUID, target: uuid.UUID) -> dict[str, Any]:
    return {
        "from_id": str(source),
        "to_id": str(target),
        "etype": "cite",
        "weight": 0.5,
        "tenant_id": str(sub),
    }


async def test_a_forget_command_removes_the_document_its_edges_and_outcomes_and_is_audited(
    ingest: IngestProcess,
) -> None:
    tenant, other = ingest.tenants[0], ingest.tenants[2]
    sub, elsewhere = uuid.uuid4(), uuid.uuid4()
    a, b, c = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    await ingest.produce(
        [
            envelope(tenant, ingest.docs, doc(sub, a, "secret a")),
            envelope(tenant, ingest.docs, doc(sub, b, "kept b")),
            envelope(tenant, ingest.docs, doc(elsewhere, c, "another client's c")),
            envelope(tenant, ingest.edges, link(sub, a, b)),
            envelope(tenant, ingest.edges, link(sub, b, a)),
            envelope(other, ingest.docs, doc(sub, b, "other tenant's b")),
        ]
    )

    async def landed() -> bool:
        return (
            await ingest.count(tenant, table(ingest.docs)) == 3
            and await ingest.count(tenant, table(ingest.edges)) == 2
            and await ingest.count(other, table(ingest.docs)) == 1
        )

    await until(landed)
    owner = await asyncpg.connect(ingest.owner_dsn)
    try:
        async with owner.transaction():
            await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
            await owner.execute(
                "INSERT INTO mnemo.nav_outcomes (axon_tenant, corpus_id, scope, seq, query, path,"
                " score) VALUES ($1, $2, '', 1, 'q', $3::text[], 0.5)",
                tenant,
                ingest.corpus,
                [str(b), str(a)],
            )
    finally:
        await owner.close()

    bad = {
        "other tenant": forget(other, ingest.docs, a),
        "outside match": forget(tenant, ingest.docs, c, {"tenant_id": str(sub)}),
        "unknown store": forget(tenant, "NoSuchStore", a),
        "edges store": forget(tenant, ingest.edges, a),
        "malformed": (str(tenant).encode(), b'{"event_id": "nope"}'),
    }
    await ingest.produce([*bad.values(), forget(tenant, ingest.docs, a)], ingest.forget_topic)

    async def forgotten() -> bool:
        return await ingest.count(tenant, table(ingest.docs), f"id = '{a}'") == 0

    await until(forgotten)
    assert await ingest.count(tenant, table(ingest.edges)) == 0
    assert await ingest.count(tenant, "mnemo.nav_outcomes") == 0
    assert await ingest.count(tenant, table(ingest.docs)) == 2  # b and c stay
    assert await ingest.count(other, table(ingest.docs)) == 1

    letters = await ingest.dead_letters(len(bad), wait=20, topic=ingest.forget_topic)
    reasons = {r.value: dict(r.headers)[REASON].decode() for r in letters}
    by_name = {name: reasons.get(value) for name, (_, value) in bad.items()}
    assert by_name["other tenant"] is not None
    assert f"no document '{a}'" in by_name["other tenant"]
    assert by_name["outside match"] is not None
    assert "within the given match" in by_name["outside match"]
    assert "holds no documents" in (by_name["unknown store"] or "")
    assert "holds no documents" in (by_name["edges store"] or "")
    assert (by_name["malformed"] or "").startswith("invalid envelope")

    records = [
        json.loads(row["payload"])["data"]["record"]
        for row in await ingest.query(
            tenant,
            "SELECT payload::text AS payload FROM mnemo.outbox WHERE topic = $1",
            ingest.audit_topic,
        )
    ]
    deletes = [r for r in records if r["action"] == f"store:{ingest.docs}:delete"]
    assert len(deletes) == 1
    assert deletes[0]["row_ids"] == [str(a)]
    assert deletes[0]["principal"] == "test-forgetter"
    assert (deletes[0]["edges_removed"], deletes[0]["outcomes_removed"]) == (2, 1)
    assert "secret a" not in json.dumps(deletes[0])
