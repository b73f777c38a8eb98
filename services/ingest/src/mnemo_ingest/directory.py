"""The registry as ingest needs it: which tenants exist, and for each store name its declaration
and the corpora that read it (from `mnemo.corpora`), cached and re-read on a miss."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Sequence

import asyncpg
from mnemo_store import StoreCorpus
from mnemo_store.errors import StoreError

from mnemo_ingest.use_cases import Role, StoreUse

RELOAD_AFTER_MISS_SECONDS = 1.0


class PostgresDirectory:
    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool
        self._tenants: set[uuid.UUID] = set()
        self._stores: dict[str, StoreUse] = {}
        self._tenants_read = 0.0
        self._stores_read = 0.0

    async def tenant_exists(self, tenant: uuid.UUID) -> bool:
        if tenant not in self._tenants and self._stale(self._tenants_read):
            rows = await self._pool.fetch("SELECT tenant_id FROM mnemo.tenants")
            self._tenants = {row["tenant_id"] for row in rows}
            self._tenants_read = time.monotonic()
        return tenant in self._tenants

    async def tenants(self) -> Sequence[uuid.UUID]:
        rows = await self._pool.fetch("SELECT tenant_id FROM mnemo.tenants ORDER BY tenant_id")
        self._tenants = {row["tenant_id"] for row in rows}
        self._tenants_read = time.monotonic()
        return [row["tenant_id"] for row in rows]

    async def store(self, name: str) -> StoreUse | None:
        if name not in self._stores and self._stale(self._stores_read):
            await self.reload_stores()
        return self._stores.get(name)

    async def reload_stores(self) -> None:
        rows = await self._pool.fetch(
            "SELECT corpus_id, definition::text AS definition FROM mnemo.corpora"
            " WHERE kind = 'store_graph' ORDER BY corpus_id"
        )
        uses: dict[str, list[tuple[StoreCorpus, Role]]] = {}
        decls = {}
        for row in rows:
            try:
                corpus = StoreCorpus.from_definition(json.loads(row["definition"]))
            except (StoreError, ValueError, KeyError, TypeError):
                continue
            for store, role in ((corpus.documents, "documents"), (corpus.relations, "relations")):
                decls[store.name] = store
                uses.setdefault(store.name, []).append((corpus, role))  # type: ignore[arg-type]
        self._stores = {
            name: StoreUse(decls[name], tuple(corpora)) for name, corpora in uses.items()
        }
        self._stores_read = time.monotonic()

    @staticmethod
    def _stale(read_at: float) -> bool:
        return time.monotonic() - read_at >= RELOAD_AFTER_MISS_SECONDS
