"""The navigator's adapters: the registry reader over the opened pool (the tenant transactions
are `mnemo_store.Store`'s)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import asyncpg

from mnemo_navigator.use_cases import CorpusEntry

_TENANT_EXISTS = "SELECT EXISTS (SELECT FROM mnemo.tenants WHERE tenant_id = $1)"


class PostgresCatalogue:
    """Corpora and tenants as the navigator reads them (`Catalogue`)."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool

    async def corpus(self, corpus_id: str) -> CorpusEntry | None:
        row = await self._pool.fetchrow(
            "SELECT corpus_id, status, kind, definition::text AS definition"
            " FROM mnemo.corpora WHERE corpus_id = $1",
            corpus_id,
        )
        if row is None:
            return None
        definition: dict[str, Any] = json.loads(row["definition"])
        return CorpusEntry(row["corpus_id"], row["status"], row["kind"], definition)

    async def tenant_exists(self, tenant: uuid.UUID) -> bool:
        return bool(await self._pool.fetchval(_TENANT_EXISTS, tenant))
