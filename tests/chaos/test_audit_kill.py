"""The audit consumer SIGKILLed in the middle of a 10,000-event stream and restarted: every event
is one audit row (none lost, none twice), in its producer's order, and every tenant's hash chain
verifies, both through the store's verifier and through the service's `/v1/audit/verify`."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from mnemo_auth import DEVELOPMENT_SECRET, mint_token
from mnemo_store.audit_log import AuditLog

from tests.chaos.conftest import World, make_world, remove_world, shared_stack
from tests.chaos.summary import Summary
from tests.integration.audit.service import persist_event, produce, query_event

pytestmark = pytest.mark.timeout(300)

EVENTS = 10_000
TENANTS = 4


@pytest.fixture
async def audit_world(tmp_path: Path) -> AsyncIterator[World]:
    created = await make_world(shared_stack(), tmp_path, tenants=TENANTS)
    try:
        yield created
    finally:
        await remove_world(created)


async def test_sigkill_the_audit_consumer_mid_stream_of_ten_thousand_every_row_once_chains_verify(
    audit_world: World, summary: Summary
) -> None:
    world = audit_world
    tenants = world.tenants
    # Navigator-like query events and ingest-like persist events, interleaved over the tenants.
    events = [
        (query_event if n % 3 else persist_event)(tenants[n % TENANTS], n) for n in range(EVENTS)
    ]
    await produce(world.stack.bootstrap, world.topic("audit"), events)
    audit = world.audit()
    async with await AuditLog.connect(world.stack.url("audit"), max_size=2) as log:

        async def landed() -> int:
            return sum([(await log.verify(t)).rows for t in tenants])

        async def some_rows() -> bool:
            return await landed() >= EVENTS * 3 // 10

        started = time.monotonic()
        audit.start()
        await audit.ready()
        await world.until(some_rows, wait=120, every=0.05)
        audit.kill()
        at_kill = await landed()
        assert at_kill < EVENTS, "too late: every event was appended before the kill"
        audit.start()
        await audit.ready()

        async def all_rows() -> bool:
            return await landed() >= EVENTS

        await world.until(all_rows, wait=180, every=0.3)
        seconds = time.monotonic() - started
        lost = duplicated = 0
        for tenant in tenants:
            report = await log.verify(tenant)
            assert report.ok, report.broken
            rows = await log.page(tenant, limit=EVENTS)
            got = [r.event_id for r in rows]
            sent = [e.event_id for e in events if e.tenant == tenant]
            lost += len(set(sent) - set(got))
            duplicated += len(got) - len(set(got))
            assert got == sent  # each once, in the order produced (one partition per tenant)
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{audit.port}", timeout=30) as http:
        for tenant in tenants:
            token = mint_token(tenant=tenant, secret=DEVELOPMENT_SECRET, scopes=("audit",))
            verify = (
                await http.get("/v1/audit/verify", headers={"Authorization": f"Bearer {token}"})
            ).json()
            assert (verify["ok"], verify["head_seq"]) == (True, EVENTS // TENANTS), verify
    summary.row(
        fault="SIGKILL audit consumer",
        events=EVENTS,
        lost=lost,
        duplicated=duplicated,
        leaked=None,
        notes=f"{at_kill} rows at the kill; all {EVENTS} in {seconds:.1f} s; chains verify",
    )
