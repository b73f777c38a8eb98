"""The audit service's adapters: the audit log the use case appends to, counted and watched."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import structlog
from mnemo_events.audit_checkpoints import CHECKPOINTS, Checkpoint
from mnemo_store.audit_log import AuditLog, NewAuditEvent
from mnemo_telemetry.metrics import AUDIT_CHAIN_REGRESSIONS, AUDIT_ROWS_APPENDED

from mnemo_audit.use_cases import ChainHeads

log = structlog.get_logger("mnemo_audit")


class WatchedAuditLog:
    """`AuditLog.append` counted in the metrics, and each tenant's chain head watched: a head
    that goes back (rows lost at the chain's end) is counted and logged."""

    def __init__(
        self, audit_log: AuditLog, grew: Callable[[uuid.UUID], None] = lambda tenant: None
    ) -> None:
        self._log = audit_log
        self._heads = ChainHeads()
        self._grew = grew

    async def tenant_exists(self, tenant: uuid.UUID) -> bool:
        return await self._log.tenant_exists(tenant)

    async def append(
        self, tenant: uuid.UUID, events: Sequence[NewAuditEvent]
    ) -> dict[uuid.UUID, int]:
        appended = await self._log.append(tenant, events)
        # Metrics are served without authentication: counts of every tenant together, never a
        # tenant id. Which tenant lost rows goes to the log only.
        AUDIT_ROWS_APPENDED.inc(len(appended))
        if appended:
            self._grew(tenant)
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


class Publishing(Protocol):
    """What of a service's broker the checkpoints use (FastStream's `KafkaBroker.publish`)."""

    async def publish(self, message: Any, *, topic: str, key: bytes) -> Any: ...


class KafkaCheckpoints:
    """Checkpoints sent to the compacted checkpoint topic, keyed by tenant, each acknowledged."""

    def __init__(self, broker: Publishing, topic: str = CHECKPOINTS) -> None:
        self._broker = broker
        self._topic = topic

    async def publish(self, checkpoint: Checkpoint) -> None:
        await self._broker.publish(
            checkpoint.encode(), topic=self._topic, key=str(checkpoint.tenant).encode()
        )
