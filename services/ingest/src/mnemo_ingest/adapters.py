"""The ingest service's adapters of its ports (`mnemo_ingest.ports`): `PostgresIngestStore`, a
tenant's unit of work over `mnemo_store` (inbox, rows, pending edges and outbox, delegating to
`mnemo_store.ingest_writes`); `PostgresDirectory`, the registry as ingest needs it; and
`KafkaDeadLetters`, where edges that can never be applied go.

The directory: which tenants exist, and for each store name its declaration and the corpora that
read it (from `mnemo.corpora`), cached.

A miss is always checked against the database before it counts, so a tenant created or a store
applied a moment ago is never refused (and its rows never dead-lettered) because of the cache: an
unknown tenant costs one primary-key lookup, an unknown store one aggregate over the registry's
store corpora, re-read in full only when that fingerprint has changed."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any

import asyncpg
from faststream.kafka import KafkaBroker
from mnemo_axon.ir import StoreDecl
from mnemo_events import PERSIST, PersistRow, new_envelope
from mnemo_events.dead_letters import DeadLetter, Delivery, publish_dead_letter
from mnemo_store import (
    OutboxEvent,
    Store,
    StoreCorpus,
    TenantTransaction,
    forgetting,
    ingest_writes,
)
from mnemo_store.errors import StoreError
from mnemo_store.ingest_writes import PendingEdge
from mnemo_store.registry import list_corpora, store_corpora_fingerprint

from mnemo_ingest.ports import IngestTransaction, StoreUse, store_uses
from mnemo_ingest.use_cases import PRODUCER

_TENANT_EXISTS = "SELECT EXISTS (SELECT 1 FROM mnemo.tenants WHERE tenant_id = $1)"


class PostgresIngestStore:
    """`IngestStore` over `mnemo_store`: a tenant's unit of work is one `Store.tenant`
    transaction (the tenant's row-level security applies to every query)."""

    def __init__(self, store: Store) -> None:
        self._store = store

    @asynccontextmanager
    async def tenant(self, tenant: uuid.UUID) -> AsyncIterator[IngestTransaction]:
        async with self._store.tenant(tenant) as tx:
            yield _PostgresTransaction(tx)


class _PostgresTransaction:
    def __init__(self, tx: TenantTransaction) -> None:
        self.tenant = tx.tenant_id
        self.inbox = PostgresInbox(tx)
        self.rows = PostgresRows(tx)
        self.pending = PostgresPendingEdges(tx)
        self.outcomes = PostgresOutcomes(tx)
        self.outbox = PostgresOutbox(tx)


class PostgresInbox:
    def __init__(self, tx: TenantTransaction) -> None:
        self._tx = tx

    async def claim(
        self, consumer: str, digests: Mapping[uuid.UUID, str]
    ) -> tuple[set[uuid.UUID], set[uuid.UUID]]:
        return await ingest_writes.claim_events_with_payloads(self._tx, consumer, digests)


class PostgresRows:
    def __init__(self, tx: TenantTransaction) -> None:
        self._tx = tx

    async def take_revisions(self, corpus_ids: Iterable[str]) -> None:
        await self._tx.take_revisions(corpus_ids)

    async def insert(self, store: StoreDecl, rows: Sequence[Mapping[str, Any]]) -> int:
        return await self._tx.insert_rows(store, rows)

    async def existing_documents(
        self,
        documents: StoreDecl,
        id_column: str,
        ids: Sequence[str],
        scope_columns: Sequence[str],
    ) -> dict[str, dict[str, Any]]:
        return await ingest_writes.existing_documents(
            self._tx, documents, id_column, ids, scope_columns
        )

    async def delete_document(
        self,
        documents: StoreDecl,
        id_column: str,
        document_id: str,
        match: Mapping[str, str],
    ) -> bool:
        return await forgetting.delete_document(self._tx, documents, id_column, document_id, match)

    async def delete_edges_touching(
        self, relations: StoreDecl, from_column: str, to_column: str, document_id: str
    ) -> int:
        return await forgetting.delete_edges_touching(
            self._tx, relations, from_column, to_column, document_id
        )


class PostgresPendingEdges:
    def __init__(self, tx: TenantTransaction) -> None:
        self._tx = tx

    async def hold(
        self,
        event_id: uuid.UUID,
        store: str,
        values: Mapping[str, Any],
        missing: Sequence[str],
        received_at: datetime | None = None,
    ) -> bool:
        return await ingest_writes.hold_edge(
            self._tx, event_id, store, values, missing, received_at
        )

    async def take_for(self, document_ids: Sequence[str]) -> list[PendingEdge]:
        return await ingest_writes.take_pending_edges_for(self._tx, document_ids)

    async def take_expired(self, received_before: datetime, limit: int = 500) -> list[PendingEdge]:
        return await ingest_writes.take_expired_pending_edges(self._tx, received_before, limit)

    async def drop_naming(
        self, store: str, from_column: str, to_column: str, document_id: str
    ) -> int:
        return await forgetting.drop_pending_edges_naming(
            self._tx, store, from_column, to_column, document_id
        )


class PostgresOutcomes:
    def __init__(self, tx: TenantTransaction) -> None:
        self._tx = tx

    async def forget_naming(self, corpus_id: str, document_id: str) -> int:
        return await forgetting.forget_outcomes_naming(self._tx, corpus_id, document_id)


class PostgresOutbox:
    def __init__(self, tx: TenantTransaction) -> None:
        self._tx = tx

    async def append(self, events: Sequence[OutboxEvent]) -> None:
        await ingest_writes.append_outbox_events(self._tx, events)


class PostgresDirectory:
    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool
        self._tenants: set[uuid.UUID] = set()
        self._stores: dict[str, StoreUse] = {}
        self._stores_fingerprint: tuple[object, ...] | None = None

    async def tenant_exists(self, tenant: uuid.UUID) -> bool:
        if tenant in self._tenants:
            return True
        if await self._pool.fetchval(_TENANT_EXISTS, tenant):
            self._tenants.add(tenant)
            return True
        return False

    async def tenants(self) -> Sequence[uuid.UUID]:
        rows = await self._pool.fetch("SELECT tenant_id FROM mnemo.tenants ORDER BY tenant_id")
        self._tenants = {row["tenant_id"] for row in rows}
        return [row["tenant_id"] for row in rows]

    async def store(self, name: str) -> StoreUse | None:
        if name not in self._stores:
            fingerprint = await store_corpora_fingerprint(self._pool)
            if fingerprint != self._stores_fingerprint:
                await self.reload_stores()
                self._stores_fingerprint = fingerprint
        return self._stores.get(name)

    async def reload_stores(self) -> None:
        corpora: list[StoreCorpus] = []
        for row in await list_corpora(self._pool, kind="store_graph"):
            try:
                corpora.append(StoreCorpus.from_definition(row.definition))
            except (StoreError, ValueError, KeyError, TypeError):
                continue
        self._stores = store_uses(corpora)


class KafkaDeadLetters:
    """Parked edges that can never be applied go to `mnemo.persist.v1.dlt` as a persist envelope
    rebuilt from what was parked (same event id), with the reason."""

    def __init__(self, broker: KafkaBroker, group: str, topic: str) -> None:
        self._broker = broker
        self._group = group
        self._topic = topic

    async def dead_letter_edge(self, tenant: uuid.UUID, edge: PendingEdge, reason: str) -> None:
        envelope = new_envelope(
            PersistRow(store=edge.store, values=edge.values),
            tenant=tenant,
            producer=PRODUCER,
            event_type=PERSIST,
            event_id=edge.event_id,
        )
        delivery = Delivery(
            topic=self._topic,
            partition=-1,
            offset=-1,
            key=str(tenant).encode(),
            value=envelope.model_dump_json().encode(),
            headers=(("mnemo-pending-since", edge.received_at.isoformat().encode()),),
        )
        await publish_dead_letter(self._broker, DeadLetter(delivery, reason, 1), self._group)
