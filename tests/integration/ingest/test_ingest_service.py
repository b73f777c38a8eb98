"""The ingest service as a process, over real Kafka and Postgres: rows land exactly once, in their
tenant and scope; poison is dead-lettered with reasons; early edges wait; SIGKILL loses nothing."""

from __future__ import annotations

import itertools
import json
import random
import uuid
from typing import Any

import pytest
from mnemo_events.dead_letters import ATTEMPTS, REASON

from tests.integration.ingest.conftest import IngestProcess, envelope, table, until

pytestmark = pytest.mark.timeout(240)


def _doc(sub: uuid.UUID, title: str, doc_id: uuid.UUID | None = None) -> dict[str, Any]:
    return {"id": str(doc_id or uuid.uuid4()), "tenant_id": str(sub), "title": title, "body": title}


async def test_three_tenants_and_a_thousand_memories_land_exactly_once_in_their_tenant_and_scope(
    ingest: IngestProcess,
) -> None:
    rng = random.Random(7)
    records: list[tuple[bytes, bytes]] = []
    expected: dict[uuid.UUID, int] = {}
    edges_expected: dict[uuid.UUID, int] = {}
    subs = {t: [uuid.uuid4()] for t in ingest.tenants}
    subs[ingest.tenants[0]] = [uuid.uuid4() for _ in range(3)]  # end-clients in `tenant_id`
    before = {}
    for tenant in ingest.tenants:
        rows = await ingest.query(
            tenant, "SELECT revision FROM mnemo.graph_revisions WHERE corpus_id = $1", ingest.corpus
        )
        before[tenant] = rows[0]["revision"] if rows else 0
    for n in range(1000):
        tenant = ingest.tenants[n % 3]
        sub = rng.choice(subs[tenant])
        records.append(envelope(tenant, ingest.docs, _doc(sub, f"memory {n}")))
        expected[tenant] = expected.get(tenant, 0) + 1
    # edges between documents of one tenant and scope
    docs_by_scope: dict[tuple[uuid.UUID, str], list[str]] = {}
    for _, value in records:
        body = json.loads(value)
        docs_by_scope.setdefault(
            (uuid.UUID(body["tenant"]), body["data"]["values"]["tenant_id"]), []
        ).append(body["data"]["values"]["id"])
    for (tenant, scope), ids in docs_by_scope.items():
        for a, b in itertools.pairwise(ids):
            edge = {"from_id": a, "to_id": b, "etype": "cite", "weight": 0.5, "tenant_id": scope}
            records.append(envelope(tenant, ingest.edges, edge))
            edges_expected[tenant] = edges_expected.get(tenant, 0) + 1
    duplicates = rng.sample(records, 50)
    await ingest.produce(records + duplicates)

    for tenant in ingest.tenants:

        async def landed(tenant: uuid.UUID = tenant) -> bool:
            return await ingest.count(tenant, table(ingest.edges)) >= edges_expected[tenant]

        await until(landed, wait=120)
        assert await ingest.count(tenant, table(ingest.docs)) == expected[tenant]
        assert await ingest.count(tenant, table(ingest.edges)) == edges_expected[tenant]
        crossing = await ingest.query(
            tenant,
            f"SELECT count(*) AS n FROM {table(ingest.edges)} e"
            f" JOIN {table(ingest.docs)} a ON a.id = e.from_id"
            f" JOIN {table(ingest.docs)} b ON b.id = e.to_id"
            " WHERE a.tenant_id <> e.tenant_id OR b.tenant_id <> e.tenant_id",
        )
        assert crossing[0]["n"] == 0
        rows = await ingest.query(
            tenant, "SELECT revision FROM mnemo.graph_revisions WHERE corpus_id = $1", ingest.corpus
        )
        assert rows[0]["revision"] > before[tenant]
        announced = await ingest.count(
            tenant, "mnemo.outbox", f"topic = '{ingest.persisted_topic}'"
        )
        assert announced == expected[tenant]
        audits = await ingest.count(tenant, "mnemo.outbox", f"topic = '{ingest.audit_topic}'")
        assert audits >= 1


async def test_poison_messages_are_dead_lettered_with_reasons_and_their_neighbours_land(
    ingest: IngestProcess,
) -> None:
    tenant = ingest.tenants[1]
    sub = uuid.uuid4()
    a, b = uuid.uuid4(), uuid.uuid4()
    key = str(tenant).encode()
    good = [
        envelope(tenant, ingest.docs, _doc(sub, "good one", a)),
        envelope(tenant, ingest.docs, _doc(sub, "good two", b)),
    ]
    poison = {
        "malformed": (key, b'{"event_id": nope'),
        "unknown store": envelope(tenant, "NoSuchStore", {"x": 1}),
        "wrong type": envelope(tenant, ingest.docs, {**_doc(sub, "t"), "score": "many"}),
        "weight": envelope(
            tenant,
            ingest.edges,
            {
                "from_id": str(a),
                "to_id": str(b),
                "etype": "cite",
                "weight": 1.5,
                "tenant_id": str(sub),
            },
        ),
        "hugs": envelope(
            tenant,
            ingest.edges,
            {
                "from_id": str(a),
                "to_id": str(b),
                "etype": "hugs",
                "weight": 0.5,
                "tenant_id": str(sub),
            },
        ),
        "unknown tenant": envelope(uuid.uuid4(), ingest.docs, _doc(sub, "nobody's")),
        "key mismatch": (
            str(uuid.uuid4()).encode(),
            envelope(tenant, ingest.docs, _doc(sub, "k"))[1],
        ),
        "nul": envelope(tenant, ingest.docs, _doc(sub, "nul \x00 byte")),
    }
    await ingest.produce([good[0], *poison.values(), good[1]])
    letters = await ingest.dead_letters(len(poison) + 20, wait=20)
    mine = {r.value: {k: v.decode() for k, v in r.headers} for r in letters}
    reasons = {name: mine[value][REASON] for name, (_, value) in poison.items() if value in mine}
    assert set(reasons) == set(poison), f"missing: {set(poison) - set(reasons)}"
    assert reasons["malformed"].startswith("invalid envelope")
    assert "unknown store 'NoSuchStore'" in reasons["unknown store"]
    assert "column 'score' (Integer)" in reasons["wrong type"]
    assert "outside (0, 1] (G4)" in reasons["weight"]
    assert "'hugs' is not in the relation catalog (G3)" in reasons["hugs"]
    assert reasons["unknown tenant"].startswith("unknown tenant")
    assert reasons["key mismatch"].startswith("key mismatch")
    assert "NUL" in reasons["nul"]
    assert all(mine[value][ATTEMPTS] == "1" for _, value in poison.values())

    async def both() -> bool:
        return await ingest.count(tenant, table(ingest.docs), f"tenant_id = '{sub}'") == 2

    await until(both)


async def test_an_early_edge_waits_for_its_document_and_an_orphan_is_dead_lettered_after_the_hold(
    ingest: IngestProcess,
) -> None:
    tenant = ingest.tenants[2]
    sub = uuid.uuid4()
    a, b, ghost = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    early = envelope(
        tenant,
        ingest.edges,
        {
            "from_id": str(a),
            "to_id": str(b),
            "etype": "elaborate",
            "weight": 0.7,
            "tenant_id": str(sub),
        },
    )
    orphan = envelope(
        tenant,
        ingest.edges,
        {
            "from_id": str(a),
            "to_id": str(ghost),
            "etype": "cite",
            "weight": 0.2,
            "tenant_id": str(sub),
        },
    )
    await ingest.produce([early, orphan, envelope(tenant, ingest.docs, _doc(sub, "a", a))])

    async def waiting() -> bool:
        return await ingest.count(tenant, "mnemo.pending_edges") >= 1

    await until(waiting)
    await ingest.produce([envelope(tenant, ingest.docs, _doc(sub, "b", b))])

    async def applied() -> bool:
        return await ingest.count(tenant, table(ingest.edges), f"to_id = '{b}'") == 1

    await until(applied)
    letters = await ingest.dead_letters(200, wait=15)
    reasons = [
        {k: v.decode() for k, v in r.headers}[REASON]
        for r in letters
        if str(ghost).encode() in r.value
    ]
    assert reasons
    assert "never arrived (G2)" in reasons[0]
    assert await ingest.count(tenant, "mnemo.pending_edges") == 0


async def test_sigkill_in_the_middle_of_ten_thousand_events_then_restart_loses_and_duplicates_nothing(
    ingest: IngestProcess,
) -> None:
    tenant = ingest.tenants[0]
    sub = uuid.uuid4()
    records = [envelope(tenant, ingest.docs, _doc(sub, f"burst {n}")) for n in range(10_000)]
    await ingest.produce(records)

    async def some() -> bool:
        return await ingest.count(tenant, table(ingest.docs), f"tenant_id = '{sub}'") >= 1500

    await until(some, every=0.05)
    ingest.kill()
    landed_at_kill = await ingest.count(tenant, table(ingest.docs), f"tenant_id = '{sub}'")
    assert landed_at_kill < 10_000, "too late: everything landed before the kill"
    ingest.start()
    await ingest.ready()

    async def all_landed() -> bool:
        return await ingest.count(tenant, table(ingest.docs), f"tenant_id = '{sub}'") >= 10_000

    await until(all_landed, wait=150)
    assert await ingest.count(tenant, table(ingest.docs), f"tenant_id = '{sub}'") == 10_000
    assert ingest.terminate() == 0
    ingest.start()
    await ingest.ready()


async def test_identical_rows_in_one_batch_are_written_once(ingest: IngestProcess) -> None:
    tenant, sub = ingest.tenants[2], uuid.uuid4()
    first, second = _doc(sub, "twice told"), _doc(sub, "told once")
    edge = {
        "from_id": first["id"],
        "to_id": second["id"],
        "etype": "cite",
        "weight": 0.5,
        "tenant_id": str(sub),
    }
    # Different events (two producers deciding the same thing), identical rows, one batch.
    await ingest.produce(
        [
            envelope(tenant, ingest.docs, first),
            envelope(tenant, ingest.docs, dict(first)),
            envelope(tenant, ingest.docs, second),
            envelope(tenant, ingest.edges, edge),
            envelope(tenant, ingest.edges, dict(edge)),
        ]
    )
    where = f"from_id = '{first['id']}'"

    async def landed() -> bool:
        return await ingest.count(tenant, table(ingest.edges), where) >= 1

    await until(landed, wait=60)
    # A later marker on the same partition (same tenant key): once it has landed, ingest has
    # handled every record before it, so a second write of the edge would be there by now.
    marker = _doc(sub, "marker")
    await ingest.produce([envelope(tenant, ingest.docs, marker)])

    async def marker_landed() -> bool:
        return await ingest.count(tenant, table(ingest.docs), f"id = '{marker['id']}'") == 1

    await until(marker_landed, wait=60)
    assert await ingest.count(tenant, table(ingest.edges), where) == 1
    assert await ingest.count(tenant, table(ingest.docs), f"id = '{first['id']}'") == 1


async def test_a_repeat_of_a_refused_row_in_the_same_batch_is_dead_lettered_too(
    ingest: IngestProcess,
) -> None:
    tenant, mine, theirs = ingest.tenants[1], uuid.uuid4(), uuid.uuid4()
    a, b = _doc(mine, "in my scope"), _doc(theirs, "in their scope")
    await ingest.produce([envelope(tenant, ingest.docs, a), envelope(tenant, ingest.docs, b)])

    async def stored() -> bool:
        return (
            await ingest.count(tenant, table(ingest.docs), f"id IN ('{a['id']}', '{b['id']}')") == 2
        )

    await until(stored)
    across = {
        "from_id": a["id"],
        "to_id": b["id"],
        "etype": "cite",
        "weight": 0.4,
        "tenant_id": str(mine),
    }
    # Two producers send the same edge, which crosses scopes (G2), in one batch.
    await ingest.produce(
        [envelope(tenant, ingest.edges, across), envelope(tenant, ingest.edges, dict(across))]
    )
    letters: list[Any] = []

    async def both_dead_lettered() -> bool:
        letters[:] = [
            r for r in await ingest.dead_letters(500, wait=2) if str(b["id"]).encode() in r.value
        ]
        return len(letters) == 2

    await until(both_dead_lettered, wait=30)
    reasons = sorted({k: v.decode() for k, v in r.headers}[REASON] for r in letters)
    assert all("outside the edge's scope" in reason for reason in reasons), reasons
    assert await ingest.count(tenant, table(ingest.edges), f"to_id = '{b['id']}'") == 0
