"""What the audit service does, over ports: append audit events to their tenants' chains, page
through a chain, verify it. No Kafka, no HTTP here."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from mnemo_events import AuditRecorded, Envelope
from mnemo_events.audit_checkpoints import Checkpoint
from mnemo_store.audit_chain import AuditValueError, ChainReport, ChainRow, check_chain_value
from mnemo_store.audit_log import AuditFilter, NewAuditEvent


class AuditAppender(Protocol):
    async def tenant_exists(self, tenant: uuid.UUID) -> bool: ...

    async def append(
        self, tenant: uuid.UUID, events: Sequence[NewAuditEvent]
    ) -> dict[uuid.UUID, int]: ...


class AuditReader(Protocol):
    async def tenant_exists(self, tenant: uuid.UUID) -> bool: ...

    async def page(
        self,
        tenant: uuid.UUID,
        *,
        after_seq: int = 0,
        limit: int = 100,
        filters: AuditFilter | None = None,
    ) -> list[ChainRow]: ...

    async def verify(self, tenant: uuid.UUID) -> ChainReport: ...


@dataclass(frozen=True, slots=True)
class Incoming:
    """One decoded audit event and the caller's handle on it (to name it in a refusal)."""

    ref: int
    envelope: Envelope[AuditRecorded]


@dataclass(frozen=True, slots=True)
class Refusal:
    ref: int
    reason: str


def audit_event(envelope: Envelope[AuditRecorded]) -> NewAuditEvent:
    """The row an audit envelope becomes: its record is the payload, its kind the record's kind."""
    record = envelope.data.record
    return NewAuditEvent(
        event_id=envelope.event_id,
        kind=record.kind,
        occurred_at=envelope.occurred_at,
        producer=envelope.producer,
        trace=envelope.trace,
        payload=record.model_dump(mode="json"),
    )


class AppendAuditEvents:
    """Appends a batch: one transaction per tenant, events in arrival order, each at most once.

    An event is refused (and so dead-lettered) when its tenant is unknown or its payload holds a
    value the chain cannot carry; the rest of the batch still lands. Any other failure raises, and
    the caller retries.
    """

    def __init__(self, log: AuditAppender) -> None:
        self._log = log
        self._known: set[uuid.UUID] = set()

    async def __call__(self, items: Sequence[Incoming]) -> list[Refusal]:
        refusals: list[Refusal] = []
        by_tenant: dict[uuid.UUID, list[tuple[int, NewAuditEvent]]] = {}
        for item in items:
            tenant = item.envelope.tenant
            try:
                event = audit_event(item.envelope)
                check_chain_value(dict(event.payload), "payload")
            except AuditValueError as error:
                refusals.append(Refusal(item.ref, f"audit event not appendable: {error}"))
                continue
            by_tenant.setdefault(tenant, []).append((item.ref, event))
        for tenant, group in by_tenant.items():
            if not await self._tenant_known(tenant):
                refusals.extend(Refusal(ref, f"unknown tenant {tenant}") for ref, _ in group)
                continue
            try:
                await self._log.append(tenant, [event for _, event in group])
            except AuditValueError:
                # The database refused one of them: find which, one at a time.
                for ref, event in group:
                    try:
                        await self._log.append(tenant, [event])
                    except AuditValueError as error:
                        refusals.append(
                            Refusal(ref, f"audit event refused by the database: {error}")
                        )
        return refusals

    async def _tenant_known(self, tenant: uuid.UUID) -> bool:
        if tenant in self._known:
            return True
        if await self._log.tenant_exists(tenant):
            self._known.add(tenant)
            return True
        return False


class ChainHeads:
    """The last seq this process appended per tenant, to notice a chain that lost its end.

    The database gives each new row the tenant's last seq + 1, so a new seq at or below one seen
    before means rows at the end were removed (or a backup restored). Another replica appending in
    between only moves the head forward, so it never looks like a loss.
    """

    def __init__(self) -> None:
        self._heads: dict[uuid.UUID, int] = {}

    def advance(self, tenant: uuid.UUID, seqs: Sequence[int]) -> int | None:
        """Record the seqs just appended; the head seen before when they do not pass it, else
        None."""
        if not seqs:
            return None
        before = self._heads.get(tenant, 0)
        self._heads[tenant] = max(seqs)
        return before if min(seqs) <= before else None


async def audit_page(
    reader: AuditReader,
    tenant: uuid.UUID,
    *,
    after_seq: int,
    limit: int,
    filters: AuditFilter,
) -> tuple[list[ChainRow], int | None]:
    """A page of the tenant's rows and the `after` of the next page (None on the last)."""
    rows = await reader.page(tenant, after_seq=after_seq, limit=limit + 1, filters=filters)
    if len(rows) > limit:
        return rows[:limit], rows[limit - 1].seq
    return rows, None


async def verify_audit_chain(reader: AuditReader, tenant: uuid.UUID) -> ChainReport:
    return await reader.verify(tenant)


class ChainHeadReader(Protocol):
    async def head(self, tenant: uuid.UUID) -> tuple[int, bytes] | None: ...


class CheckpointSink(Protocol):
    async def publish(self, checkpoint: Checkpoint) -> None: ...


class PublishCheckpoints:
    """Publishes the head of every chain that grew since the last round: `grew(tenant)` after an
    append, then each call sends one checkpoint per such tenant (its head read back from the log,
    so it is the database's head, whichever replica appended). A tenant whose checkpoint could not
    be sent stays pending for the next round."""

    def __init__(
        self,
        heads: ChainHeadReader,
        sink: CheckpointSink,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._heads = heads
        self._sink = sink
        self._clock = clock
        self._pending: set[uuid.UUID] = set()

    def grew(self, tenant: uuid.UUID) -> None:
        self._pending.add(tenant)

    @property
    def pending(self) -> frozenset[uuid.UUID]:
        return frozenset(self._pending)

    async def __call__(self) -> int:
        """One round; the number of checkpoints sent."""
        tenants = sorted(self._pending)
        self._pending.clear()
        sent = 0
        for index, tenant in enumerate(tenants):
            try:
                head = await self._heads.head(tenant)
                if head is not None:
                    await self._sink.publish(Checkpoint(tenant, head[0], head[1], self._clock()))
                    sent += 1
            except BaseException:
                self._pending.update(tenants[index:])
                raise
        return sent

    async def run(self, stopping: asyncio.Event, interval: float) -> None:
        """Rounds every `interval` seconds until `stopping` is set, and a last one then."""
        while not stopping.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), interval)
            await self()
