"""The ingest service's adapters: `PostgresDirectory`, the registry as ingest needs it, and
`KafkaDeadLetters`, where edges that can never be applied go.

The directory: which tenants exist, and for each store name its declaration and the corpora that
read it (from `mnemo.corpora`), cached.

A miss is always checked against the database before it counts, so a tenant created or a store
applied a moment ago is never refused (and its rows never dead-lettered) because of the cache: an
unknown tenant costs one primary-key lookup, an unknown store one aggregate over the registry's
store corpora, re-read in full only when that fingerprint has changed."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import asyncpg
from faststream.kafka import KafkaBroker
from mnemo_events import PERSIST, PersistRow, new_envelope
from mnemo_events.dead_letters import DeadLetter, Delivery, publish_dead_letter
from mnemo_store import StoreCorpus
from mnemo_store.errors import StoreError
from mnemo_store.ingest_writes import PendingEdge
from mnemo_store.registry import list_corpora, store_corpora_fingerprint

from mnemo_ingest.use_cases import PRODUCER, Role, StoreUse

_TENANT_EXISTS = "SELECT EXISTS (SELECT 1 FROM mnemo.tenants WHERE tenant_id = $1)"


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
        rows = await list_corpora(self._pool, kind="store_graph")
        uses: dict[str, list[tuple[StoreCorpus, Role]]] = {}
        decls = {}
        for row in rows:
            try:
                corpus = StoreCorpus.from_definition(row.definition)
            except (StoreError, ValueError, KeyError, TypeError):
                continue
            for store, role in ((corpus.documents, "documents"), (corpus.relations, "relations")):
                decls[store.name] = store
                uses.setdefault(store.name, []).append((corpus, role))  # type: ignore[arg-type]
        self._stores = {
            name: StoreUse(decls[name], tuple(corpora)) for name, corpora in uses.items()
        }


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
