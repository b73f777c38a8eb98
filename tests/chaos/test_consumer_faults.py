"""Consumers killed and stopped mid-stream, and poison mixed into a stream, on the shared stack
with service processes of the test's own."""

from __future__ import annotations

import json
import time
import uuid

import httpx
import pytest
from mnemo_events.dead_letters import REASON

from tests.chaos.conftest import World, doc
from tests.chaos.streams import Stream, assert_audited_once, assert_exactly_once, record_row
from tests.chaos.summary import Summary
from tests.waiting import eventually

pytestmark = pytest.mark.timeout(420)


async def test_sigkill_ingest_then_the_classifier_mid_stream_of_ten_thousand_loses_and_duplicates_nothing(
    world: World, summary: Summary
) -> None:
    ingest, classifier, audit = world.ingest(), world.classifier(), world.audit()
    ingest.start()
    classifier.start()
    audit.start()
    await ingest.ready()
    await classifier.ready()
    await audit.ready()
    stream = Stream(world, 2_004)  # and 7,996 edges: 10,000 events
    await world.produce(stream.records)

    async def some_rows() -> bool:
        return await stream.landed() >= 400

    await world.until(some_rows, wait=120, every=0.05)
    ingest.kill()
    assert await stream.landed() < stream.count, "too late: everything landed before the kill"
    ingest.start()
    await ingest.ready()

    async def some_edges() -> bool:
        return await stream.cites() >= 600

    await world.until(some_edges, wait=180, every=0.1)
    classifier.kill()
    classifier.start()
    await classifier.ready()

    await world.until(stream.all_landed, wait=180)
    result = await assert_exactly_once(stream, classified=True)
    audited = await assert_audited_once(stream)
    await record_row(
        summary,
        stream,
        result,
        "SIGKILL ingest, then the edge classifier",
        f"each event in exactly one of {audited['audit_rows']:,} audit rows, chain verifies; ",
    )


async def test_sigterm_under_load_drains_and_exits_0_within_10_seconds_losing_nothing(
    world: World, summary: Summary
) -> None:
    ingest, classifier = world.ingest(), world.classifier()
    ingest.start()
    classifier.start()
    await ingest.ready()
    await classifier.ready()
    stream = Stream(world, 1_200)  # and 4,780 edges
    await world.produce(stream.records)

    async def some_rows() -> bool:
        return await stream.landed() >= 250

    await world.until(some_rows, wait=120, every=0.05)
    code, seconds = ingest.terminate()
    assert (code, seconds < 10) == (0, True), (code, seconds, ingest.tail())
    drained = {"ingest": seconds}
    ingest.start()
    await ingest.ready()

    async def some_edges() -> bool:
        return await stream.cites() >= 300

    await world.until(some_edges, wait=180, every=0.1)
    code, seconds = classifier.terminate()
    assert (code, seconds < 10) == (0, True), (code, seconds, classifier.tail())
    drained["classifier"] = seconds
    classifier.start()
    await classifier.ready()

    await world.until(stream.all_landed, wait=180)
    result = await assert_exactly_once(stream, classified=True)
    exits = ", ".join(f"{name} exit 0 in {s:.1f} s" for name, s in drained.items())
    await record_row(
        summary, stream, result, "SIGTERM ingest, then the edge classifier", f"{exits}; "
    )


POISON = [
    ("malformed", "invalid envelope"),
    ("unknown store", "unknown store"),
    ("wrong type", "tenant_id"),
    ("weight 1.5", "weight"),
    ("type hugs", "hugs"),
    ("unknown tenant", "unknown tenant"),
    ("key mismatch", "key mismatch"),
    ("NUL byte", "NUL"),
]


def poison(world: World, n: int) -> tuple[bytes, bytes]:
    tenant, sub = world.tenants[1], uuid.uuid4()
    kind = POISON[n % len(POISON)][0]
    a, b = str(uuid.uuid4()), str(uuid.uuid4())
    edge = {"from_id": a, "to_id": b, "etype": "cite", "weight": 0.5, "tenant_id": str(sub)}
    if kind == "malformed":
        return str(tenant).encode(), b'{"event_id": "not json'
    if kind == "unknown store":
        return world.record(tenant, "NoSuchStore", doc(sub, "x"))
    if kind == "wrong type":
        return world.record(tenant, world.docs, {**doc(sub, "x"), "tenant_id": "not-a-uuid"})
    if kind == "weight 1.5":
        return world.record(tenant, world.edges, {**edge, "weight": 1.5})
    if kind == "type hugs":
        return world.record(tenant, world.edges, {**edge, "etype": "hugs"})
    if kind == "unknown tenant":
        return world.record(uuid.uuid4(), world.docs, doc(sub, "x"))
    if kind == "key mismatch":
        _, value = world.record(tenant, world.docs, doc(sub, "x"))
        return str(world.tenants[0]).encode(), value
    return world.record(tenant, world.docs, doc(sub, "nul \x00 inside"))


async def test_five_percent_poison_is_dead_lettered_with_reasons_and_the_rest_keeps_its_pace(
    world: World, summary: Summary
) -> None:
    ingest = world.ingest()
    ingest.start()
    await ingest.ready()
    tenant = world.tenants[0]
    # Throughput as valid rows per CPU second of the service: on a shared machine the wall clock
    # measures the neighbours; the service's own CPU time measures what the poison costs it.
    rows = {"clean": 0, "poisoned": 0}
    cpu = {"clean": 0.0, "poisoned": 0.0}
    wall = {"clean": 0.0, "poisoned": 0.0}
    poisoned_total = 0
    # The order alternates between rounds, so warming up and the neighbours' drift fall on both.
    for round_, order in enumerate([("clean", "poisoned"), ("poisoned", "clean")] * 2):
        for mode in order:
            sub = uuid.uuid4()
            valid = [
                world.record(tenant, world.docs, doc(sub, f"pace {round_} {n}"))
                for n in range(6_000)
            ]
            records = list(valid)
            if mode == "poisoned":
                bad = [poison(world, poisoned_total + n) for n in range(len(valid) * 5 // 95)]
                poisoned_total += len(bad)
                for n, record in enumerate(bad):
                    records.insert(n * 20 + 10, record)
            started, used = time.monotonic(), ingest.cpu_seconds()
            await world.produce(records)

            async def landed(sub: uuid.UUID = sub, expected: int = len(valid)) -> bool:
                return await world.count(tenant, f"tenant_id = '{sub}'") >= expected

            await world.until(landed, wait=180, every=0.05)
            cpu[mode] += ingest.cpu_seconds() - used
            wall[mode] += time.monotonic() - started
            rows[mode] += len(valid)
            assert await world.count(tenant, f"tenant_id = '{sub}'") == len(valid)
    letters = await world.read(world.topic("persist") + ".dlt", poisoned_total, wait=60)
    assert len(letters) == poisoned_total
    reasons = [dict(r.headers)[REASON].decode() for r in letters]
    for kind, words in POISON:
        expected = sum(1 for n in range(poisoned_total) if POISON[n % len(POISON)][0] == kind)
        assert sum(words in reason for reason in reasons) >= expected, (kind, set(reasons))
    per_cpu = {mode: rows[mode] / cpu[mode] for mode in rows}
    per_wall = {mode: rows[mode] / wall[mode] for mode in rows}
    print({"rows_per_cpu_second": per_cpu, "rows_per_second": per_wall, "poison": poisoned_total})
    assert per_cpu["poisoned"] >= 0.8 * per_cpu["clean"], (per_cpu, per_wall)
    total = sum(rows.values())
    stored = await world.count(tenant)
    summary.row(
        fault="5% poison in a stream",
        events=total + poisoned_total,
        lost=max(total - stored, 0),
        duplicated=max(stored - total, 0),
        leaked=None,
        notes=f"{poisoned_total} dead-lettered with reasons; pace with poison "
        f"{per_cpu['poisoned'] / per_cpu['clean']:.0%} of clean (rows per CPU second)",
    )


async def test_a_missing_grant_holds_the_stream_with_readiness_false_and_dead_letters_nothing(
    world: World, summary: Summary
) -> None:
    # Ingest connected as a role without ingest's grants (the relay's): a deployment fault.
    misconfigured = world.ingest("ingest-without-grants")
    misconfigured.env["MNEMO_INGEST_DATABASE_URL"] = world.stack.url("relay")
    misconfigured.start()
    stream = Stream(world, 50, links=1)
    await world.produce(stream.records)

    async def readiness() -> tuple[int, str]:
        try:
            async with httpx.AsyncClient(timeout=3) as client:
                answer = await client.get(f"http://127.0.0.1:{misconfigured.port}/readyz")
                return answer.status_code, json.dumps(answer.json())
        except httpx.HTTPError:
            return 0, ""  # not listening yet

    async def refused() -> bool:
        return "InsufficientPrivilegeError" in (await readiness())[1]

    await eventually(refused, within=90, every=0.2, what=misconfigured.tail)

    def retries() -> int:  # ingest logs one line per retry round of a transient failure
        return misconfigured.log.read_text(errors="replace").count("transient failure")

    seen = retries()

    async def three_more_retry_rounds() -> bool:  # not ready all along
        status, body = await readiness()
        assert (status, "InsufficientPrivilegeError" in body) == (503, True), body
        return retries() >= seen + 3

    await eventually(three_more_retry_rounds, within=60, every=0.2, what=misconfigured.tail)
    assert await stream.landed() == 0
    assert misconfigured.process is not None
    assert misconfigured.process.poll() is None
    code, _ = misconfigured.terminate()
    assert code == 0
    fixed = world.ingest("ingest-with-grants")
    fixed.start()
    await fixed.ready()
    await world.until(stream.all_landed, wait=120)
    result = await assert_exactly_once(stream, classified=False)
    assert await world.read(world.topic("persist") + ".dlt", 1, wait=3) == []
    await record_row(
        summary, stream, result, "ingest without its grants", "held (not ready), 0 dead-lettered; "
    )
