"""The audit service's `/metrics` is served without authentication, so it names no tenant: after
appends for several tenants it holds one aggregate series, not one per tenant (it used to expose
every tenant id with its chain length)."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import httpx
import pytest
from mnemo_store.audit_log import AuditLog

from tests.integration.audit.service import AuditProcess, audit_process, produce, query_event
from tests.waiting import eventually

pytestmark = pytest.mark.timeout(180)

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@pytest.fixture
def service(audit_dsn: str, kafka_bootstrap: str, tmp_path: Path) -> Iterator[AuditProcess]:
    process = audit_process(audit_dsn, kafka_bootstrap, tmp_path)
    yield process
    process.kill()


def sample(metrics: str, name: str) -> float:
    found = re.search(rf"^{name} (\S+)$", metrics, flags=re.MULTILINE)
    assert found is not None, f"{name} not exposed"
    return float(found.group(1))


async def test_metrics_name_no_tenant_and_count_every_tenants_rows_together(
    service: AuditProcess, owner: asyncpg.Connection, audit_log: AuditLog, kafka_bootstrap: str
) -> None:
    tenants = [
        await owner.fetchval(
            "INSERT INTO mnemo.tenants (name) VALUES ($1) RETURNING tenant_id",
            f"test-audit-metrics-{uuid.uuid4().hex[:12]}",
        )
        for _ in range(3)
    ]
    service.start()
    await produce(
        kafka_bootstrap, service.topic, [query_event(t, n) for t in tenants for n in range(4)]
    )

    async def appended() -> bool:
        return [(await audit_log.verify(t)).rows for t in tenants] == [4, 4, 4]

    await eventually(
        appended, within=60, what="the audit service did not append the events", every=0.2
    )
    async with httpx.AsyncClient(base_url=service.url) as client:

        async def counted() -> str:  # it moves right after the commit the rows came from
            metrics = (await client.get("/metrics")).text
            return metrics if sample(metrics, "mnemo_audit_rows_appended_total") >= 12 else ""

        metrics = await eventually(
            counted, within=30, what="mnemo_audit_rows_appended_total never reached 12"
        )
    assert UUID.findall(metrics) == []
    assert "tenant=" not in metrics
    assert sample(metrics, "mnemo_audit_rows_appended_total") == 12
    assert sample(metrics, "mnemo_audit_chain_regressions_total") == 0
