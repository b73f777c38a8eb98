"""Postgres adapters of the use case's ports: the corpus registry and the candidate source, both
read as the read-only role `mnemo_classifier` under the tenant's row-level security."""

from __future__ import annotations

import json
import math
import time
import uuid
from collections.abc import Sequence

import asyncpg
from mnemo_mdn.edge_classification import CandidateQuery, ClassifierOptions
from mnemo_store import Scope, Store, StoreCorpus
from mnemo_store.errors import StoreError
from mnemo_store.registry import store_corpora_fingerprint

from mnemo_edge_classifier.errors import CorpusGoneError
from mnemo_edge_classifier.use_cases import Neighbourhood


class RegistryCorpora:
    """Store corpora from `mnemo.corpora` and their statuses, cached; a miss re-reads them when the
    registry changed (so a corpus applied a moment ago is never taken for an unknown one).

    A status is read fresh enough to follow `mnemo corpus publish` and `deprecate`: one that is
    not `published` is checked against the registry at each lookup (a corpus published a moment
    ago is classified at once), a `published` one at most every `refresh_seconds` (a deprecated
    corpus stops being classified within that time)."""

    def __init__(self, pool: asyncpg.Pool, refresh_seconds: float = 1.0) -> None:
        self._pool = pool
        self._refresh_seconds = refresh_seconds
        self._corpora: dict[str, StoreCorpus] = {}
        self._statuses: dict[str, str] = {}
        self._fingerprint: tuple[object, ...] | None = None
        self._checked = -math.inf

    async def corpus(self, corpus_id: str) -> StoreCorpus | None:
        if corpus_id not in self._corpora:
            await self._refresh()
        return self._corpora.get(corpus_id)

    async def status(self, corpus_id: str) -> str | None:
        stale = time.monotonic() - self._checked > self._refresh_seconds
        if stale or self._statuses.get(corpus_id) != "published":
            await self._refresh()
        return self._statuses.get(corpus_id)

    async def _refresh(self) -> None:
        """Re-read the registry if it changed since it was last read."""
        fingerprint = await store_corpora_fingerprint(self._pool)
        self._checked = time.monotonic()
        if fingerprint == self._fingerprint:
            return
        rows = await self._pool.fetch(
            "SELECT corpus_id, status, definition::text AS definition FROM mnemo.corpora"
            " WHERE kind = 'store_graph'"
        )
        corpora = {}
        for row in rows:
            try:
                corpora[row["corpus_id"]] = StoreCorpus.from_definition(
                    json.loads(row["definition"])
                )
            except (StoreError, ValueError, KeyError, TypeError):
                continue  # a definition this version cannot read is not a corpus it serves
        self._corpora = corpora
        self._statuses = {row["corpus_id"]: row["status"] for row in rows}
        self._fingerprint = fingerprint

    def forget(self, corpus_id: str) -> None:
        """Drop a corpus found stale; the next lookup reads the registry again."""
        self._corpora.pop(corpus_id, None)
        self._fingerprint = None


class StoreCandidates:
    """Key frequencies, then the candidates they allow, in one read-only tenant transaction."""

    def __init__(self, store: Store, limit: int, options: ClassifierOptions) -> None:
        self._store = store
        self._limit = limit
        self._options = options

    async def neighbourhood(
        self,
        tenant: uuid.UUID,
        corpus: StoreCorpus,
        document_id: str,
        query: CandidateQuery,
        keys: Sequence[str],
        scope: Scope,
    ) -> Neighbourhood:
        try:
            async with self._store.tenant(tenant, read_only=True) as tx:
                candidates, frequencies = await tx.neighbourhood(
                    corpus,
                    document_id,
                    keys=keys,
                    names=query.names,
                    max_holders=self._options.max_links + 1,
                    cited=query.cited,
                    titles=query.titles,
                    limit=self._limit,
                    scope=scope,
                )
        except (asyncpg.UndefinedTableError, asyncpg.UndefinedColumnError) as error:
            # Retrying cannot bring a dropped table back: refuse now, not after every attempt.
            raise CorpusGoneError(
                f"the documents store of corpus {corpus.name!r} is gone or changed: {error}"
            ) from error
        return Neighbourhood(candidates, frequencies)
