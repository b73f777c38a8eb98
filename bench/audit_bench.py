"""The audit chain: appends per second through the real service, and verification rows per second.

- service: 20,000 `mnemo.audit.v1` events (4 tenants) are produced to a fresh topic, then
  `python -m mnemo_audit` is started on it; appends/s = events / (last − first `recorded_at`),
  i.e. Kafka consume + decode + validation + the database trigger linking each row (advisory lock,
  canonical JSON in SQL, sha256), committed in per-tenant batches;
- database: `AuditLog.append` straight to Postgres, in batches of 500 and of 1 (the per-row
  trigger runs either way; the difference is round trips and commits);
- verify: `AuditLog.verify` (read in pages of 2,000, recompute with rfc8785 + sha256) rows/s.
Prints a table and writes bench/results/audit_bench.json. Needs the local stack (`make up`).
Target: ≥ 2,000 appends/s through the service on 2 cores.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg
import httpx
from aiokafka import AIOKafkaProducer
from mnemo_events import AuditRecorded, QueryAudited, new_envelope
from mnemo_events.provisioning import ensure_topics
from mnemo_events.settings import KafkaSettings
from mnemo_store.audit_log import AuditLog, NewAuditEvent

EVENTS = 20_000
TENANTS = 4
RESULTS = Path(__file__).parent / "results" / "audit_bench.json"
PORT = int(os.environ.get("MNEMO_PG_PORT", "25432"))
OWNER = os.environ.get(
    "MNEMO_OWNER_DATABASE_URL", f"postgresql://mnemo_owner:mnemo_owner@127.0.0.1:{PORT}/mnemo"
)
AUDIT = os.environ.get(
    "MNEMO_AUDIT_DATABASE_URL", f"postgresql://mnemo_audit:mnemo_audit@127.0.0.1:{PORT}/mnemo"
)
BOOTSTRAP = os.environ.get("MNEMO_KAFKA_BOOTSTRAP", "127.0.0.1:29092")


def record(n: int) -> QueryAudited:
    return QueryAudited(
        action="corpus:Bench:query",
        corpus="Bench",
        operation="navigate",
        query=f"how does thing {n} relate to thing {n + 1}?",
        query_digest=f"sha256:{n:064x}",
        k_returned=5,
        latency_ms=12.5 + n % 100,
        top_similarity=0.8125,
        returned_ids=tuple(f"doc-{n + i}" for i in range(5)),
        scope_digest="sha256:scope",
        principal="agent",
        trace_id=f"{n:032x}",
        revision=n,
    )


async def new_tenants(owner: asyncpg.Connection, count: int) -> list[uuid.UUID]:
    return [
        await owner.fetchval(
            "INSERT INTO mnemo.tenants (name) VALUES ($1) RETURNING tenant_id",
            f"bench-audit-{uuid.uuid4().hex[:16]}",
        )
        for _ in range(count)
    ]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def through_service(owner: asyncpg.Connection) -> dict[str, Any]:
    tenants = await new_tenants(owner, TENANTS)
    topic = f"mnemo.audit.bench-{uuid.uuid4().hex[:10]}"
    await ensure_topics(KafkaSettings(bootstrap=BOOTSTRAP, partitions=TENANTS), [topic])
    producer = AIOKafkaProducer(bootstrap_servers=BOOTSTRAP, linger_ms=10, acks="all")
    await producer.start()
    try:
        for n in range(EVENTS):
            tenant = tenants[n % TENANTS]
            envelope = new_envelope(
                AuditRecorded(record=record(n)),
                tenant=tenant,
                producer="mnemo.navigator",  # an audit producer the service accepts
                event_type="mnemo.audit.v1",
            )
            await producer.send(
                topic, value=envelope.model_dump_json().encode(), key=str(tenant).encode()
            )
        await producer.flush()
    finally:
        await producer.stop()
    port = free_port()
    env = {
        **os.environ,
        "MNEMO_DEVELOPMENT": "1",  # a local process: no token key needed to start
        "MNEMO_AUDIT_DATABASE_URL": AUDIT,
        "MNEMO_KAFKA_BOOTSTRAP": BOOTSTRAP,
        "MNEMO_AUDIT_TOPIC": topic,
        "MNEMO_AUDIT_GROUP": topic,
        "MNEMO_AUDIT_PORT": str(port),
    }
    process = subprocess.Popen(  # noqa: ASYNC220 (started once, not on a hot path)
        [sys.executable, "-m", "mnemo_audit"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 300
        query = (
            "SELECT count(*), min(recorded_at), max(recorded_at) FROM mnemo.audit_log"
            " WHERE axon_tenant = ANY($1::uuid[])"
        )
        while True:
            async with owner.transaction():
                # The owner is under the tenant policy too: sum per tenant.
                total = 0
                first: datetime | None = None
                last: datetime | None = None
                for tenant in tenants:
                    await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
                    count, lo, hi = await owner.fetchrow(query, [tenant])
                    total += count
                    first = lo if first is None or (lo and lo < first) else first
                    last = hi if last is None or (hi and hi > last) else last
            if total >= EVENTS:
                break
            if time.monotonic() > deadline or process.poll() is not None:
                raise RuntimeError(f"only {total} of {EVENTS} events appended")
            await asyncio.sleep(0.5)
        # Both are set by the rows counted in total.
        assert first is not None
        assert last is not None
        seconds = (last - first).total_seconds()
        async with httpx.AsyncClient() as http:
            await http.get(f"http://127.0.0.1:{port}/readyz")
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(20)
    async with await AuditLog.connect(AUDIT) as log:
        reports = [await log.verify(t) for t in tenants]
    assert all(r.ok and r.rows == EVENTS // TENANTS for r in reports)
    return {
        "events": EVENTS,
        "tenants": TENANTS,
        "seconds": seconds,
        "per_second": EVENTS / seconds,
    }


async def straight_to_database(
    owner: asyncpg.Connection, batch: int, events: int
) -> dict[str, Any]:
    [tenant] = await new_tenants(owner, 1)
    rows = [
        NewAuditEvent(
            event_id=uuid.uuid4(),
            kind="query",
            occurred_at=datetime.now(UTC),
            producer="bench",
            trace=None,
            payload=record(n).model_dump(mode="json"),
        )
        for n in range(events)
    ]
    async with await AuditLog.connect(AUDIT) as log:
        started = time.perf_counter()
        for i in range(0, events, batch):
            await log.append(tenant, rows[i : i + batch])
        seconds = time.perf_counter() - started
        started = time.perf_counter()
        report = await log.verify(tenant)
        verify_seconds = time.perf_counter() - started
    assert report.ok
    assert report.rows == events
    return {
        "batch": batch,
        "events": events,
        "seconds": seconds,
        "per_second": events / seconds,
        "verify_rows_per_second": events / verify_seconds,
    }


async def main() -> None:
    owner = await asyncpg.connect(OWNER)
    try:
        service = await through_service(owner)
        batched = await straight_to_database(owner, 500, 20_000)
        single = await straight_to_database(owner, 1, 2_000)
    finally:
        await owner.close()
    results = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "service": service,
        "database_batch_500": batched,
        "database_batch_1": single,
        "verify_rows_per_second": batched["verify_rows_per_second"],
        "target_appends_per_second": 2000,
    }
    print(f"{'path':<34}{'events':>8}{'seconds':>10}{'appends/s':>12}")
    print(
        f"{'service (Kafka → chain)':<34}{service['events']:>8}{service['seconds']:>10.2f}{service['per_second']:>12.0f}"
    )
    for name, row in (("database, batches of 500", batched), ("database, one row per tx", single)):
        print(f"{name:<34}{row['events']:>8}{row['seconds']:>10.2f}{row['per_second']:>12.0f}")
    print(f"verify: {batched['verify_rows_per_second']:.0f} rows/s ({batched['events']} rows)")
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    print(
        f"wrote {RESULTS.relative_to(Path.cwd()) if RESULTS.is_relative_to(Path.cwd()) else RESULTS}"
    )


if __name__ == "__main__":
    asyncio.run(main())
