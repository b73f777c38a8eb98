"""The audit service's adapters: the audit log the use case appends to, counted and watched."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import structlog
from mnemo_store.audit_log import AuditLog, NewAuditEvent
from mnemo_telemetry.metrics import AUDIT_CHAIN_REGRESSIONS, AUDIT_ROWS_APPENDED

from mnemo_audit.use_cases import ChainHeads

log = structlog.get_logger("mnemo_audit")


class WatchedAuditLog:
    """`AuditLog.append` counted in the metrics, and each tenant's chain head watched: a head
    that goes back (rows lost at the chain's end) is counted and logged."""

    def __init__(self, audit_log: AuditLog) -> None:
        self._log = audit_log
        self._heads = ChainHeads()

    async def tenant_exists(self, tenant: uuid.UUID) -> bool:
        return await self._log.tenant_exists(tenant)

    async def append(
        self, tenant: uuid.UUID, events: Sequence[NewAuditEvent]
    ) -> dict[uuid.UUID, int]:
        appended = await self._log.append(tenant, events)
        # Metrics are served without authentication: counts of every tenant together, never a
        # tenant id. Which tenant lost rows goes to the log only.
        AUDIT_ROWS_APPENDED.inc(len(appended))
        seen = self._heads.advance(tenant, list(appended.values()))
        if seen is not None:
            AUDIT_CHAIN_REGRESSIONS.inc()
            log.error(
                "audit chain lost rows at its end: run `mnemo audit verify` for the tenant",
                tenant=str(tenant),
                head_seen=seen,
                appended_from=min(appended.values()),
            )
        return appended
