"""Postgres and Kafka adapters of the use case's ports (`mnemo_edge_classifier.use_cases`): the
corpus registry and the candidate sources, all read as the read-only role `mnemo_classifier` under
the tenant's row-level security, and the edges' publisher (the persist topic ingest consumes).

Two candidate sources answer the same question. `StoreCandidates` asks Postgres for each event
(`TenantTransaction.neighbourhood`: it reads every row of the tenant's scope, so its cost grows
with the tenant). `IndexedCandidates`, the service's default, keeps each (tenant, corpus, scope)
it serves in memory as a `mnemo_mdn.lexical_index.ScopeIndex`: loaded once with the store's graph
loader, then kept fresh from the rows changed since (`TenantTransaction.changed_documents`, the
change-marker read the navigator's graph cache uses), checked once per batch of events; a lookup
costs what the phrases looked up hold, not what the tenant holds. The indexes share a byte budget,
least recently used out first; a scope that does not fit, or whose corpus cannot be followed by
its changes (document ids not unique, no integer edge key), is read from Postgres per event."""

from __future__ import annotations

import asyncio
import math
import time
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import Any

import asyncpg
from mnemo_events import Envelope, PersistRow
from mnemo_events.broker import enqueue
from mnemo_mdn.edge_classification import CandidateQuery, ClassifierOptions, TextDocument
from mnemo_mdn.lexical_index import ScopeIndex
from mnemo_store import Scope, Store, StoreCorpus
from mnemo_store.candidates import CandidateDocument
from mnemo_store.loading import LoadLimits
from mnemo_store.refresh import ChangeMark, edge_key_column
from mnemo_store.registry import read_store_corpora, store_corpora_fingerprint
from mnemo_store.unit_of_work import TenantTransaction

from mnemo_edge_classifier.errors import CorpusGoneError
from mnemo_edge_classifier.use_cases import CandidateSource, Neighbourhood


class RegistryCorpora:
    """Store corpora from the registry (`mnemo_store.registry.read_store_corpora`) and their
    statuses, cached; a miss re-reads them when the
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
        registry = await read_store_corpora(self._pool)
        self._corpora = dict(registry.corpora)
        self._statuses = dict(registry.statuses)
        self._fingerprint = fingerprint

    def forget(self, corpus_id: str) -> None:
        """Drop a corpus found stale; the next lookup reads the registry again."""
        self._corpora.pop(corpus_id, None)
        self._fingerprint = None


class KafkaEdgePublisher:
    """Persist commands to `topic` (ingest's `mnemo.persist.v1`), keyed by tenant, each in a
    producer span of the caller's trace context."""

    def __init__(self, broker: Any, topic: str) -> None:
        # `broker` is the kit's (`Composition.broker`, a FastStream KafkaBroker, typed Any there):
        # FastStream is a dependency of mnemo_events, not of this service.
        self._broker = broker
        self._topic = topic

    async def enqueue(self, command: Envelope[PersistRow]) -> Awaitable[object]:
        return await enqueue(self._broker, self._topic, command)  # type: ignore[arg-type]  # Envelope is covariant in use


class StoreCandidates:
    """Key frequencies, then the candidates they allow, in one read-only tenant transaction."""

    def __init__(self, store: Store, limit: int, options: ClassifierOptions) -> None:
        self._store = store
        self._limit = limit
        self._options = options

    def new_batch(self) -> None:
        """Nothing is kept between events: every read is fresh."""

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


def _store_gone(error: BaseException) -> str | None:
    """What says the table or column is missing behind `error`, if that is what it is. The store's loader reads
    documents and edges on two connections at once: when one read finds the table gone, leaving
    the other's transaction mid-read raises `InterfaceError`, whose context is the real cause."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, (asyncpg.UndefinedTableError, asyncpg.UndefinedColumnError)):
            return str(seen)
        seen = seen.__cause__ or seen.__context__
    return None


IndexKey = tuple[uuid.UUID, str, str | None, tuple[tuple[str, str], ...]]


def index_key(tenant: uuid.UUID, corpus: StoreCorpus, scope: Scope) -> IndexKey:
    params = tuple(sorted((name, str(value)) for name, value in scope.params.items()))
    return (tenant, corpus.name, scope.where, params)


@dataclass(slots=True)
class _Held:
    index: ScopeIndex
    mark: ChangeMark
    corpus: StoreCorpus
    batch: int


class IndexedCandidates:
    """Candidates from in-memory indexes of the scopes served, kept fresh from the changed rows;
    `fallback` (Postgres per event) for a scope that cannot be held. See the module docstring."""

    def __init__(
        self,
        store: Store,
        fallback: CandidateSource,
        limit: int,
        options: ClassifierOptions,
        max_bytes: int,
    ) -> None:
        self._store = store
        self._fallback = fallback
        self._limit = limit
        self._options = options
        self._max_bytes = max_bytes
        self._held: OrderedDict[IndexKey, _Held] = OrderedDict()
        self._too_large: set[IndexKey] = set()  # read from Postgres until the process restarts
        self._batch = 0
        self.loads = 0
        self.refreshes = 0
        self.fallbacks = 0

    @property
    def nbytes(self) -> int:
        return sum(held.index.nbytes for held in self._held.values())

    def held(self, tenant: uuid.UUID, corpus: StoreCorpus, scope: Scope) -> ScopeIndex | None:
        entry = self._held.get(index_key(tenant, corpus, scope))
        return None if entry is None else entry.index

    def new_batch(self) -> None:
        self._batch += 1

    async def neighbourhood(
        self,
        tenant: uuid.UUID,
        corpus: StoreCorpus,
        document_id: str,
        query: CandidateQuery,
        keys: Sequence[str],
        scope: Scope,
    ) -> Neighbourhood:
        key = index_key(tenant, corpus, scope)
        if key in self._too_large or edge_key_column(corpus) is None:
            self.fallbacks += 1
            return await self._fallback.neighbourhood(
                tenant, corpus, document_id, query, keys, scope
            )
        try:
            index = await self._fresh(key, tenant, corpus, scope)
        except (asyncpg.InterfaceError, asyncpg.PostgresError) as error:
            gone = _store_gone(error)
            if gone is None:
                raise
            self._held.pop(key, None)
            raise CorpusGoneError(
                f"the documents store of corpus {corpus.name!r} is gone or changed: {gone}"
            ) from error
        if index is None:
            self.fallbacks += 1
            return await self._fallback.neighbourhood(
                tenant, corpus, document_id, query, keys, scope
            )
        found, frequencies = index.neighbourhood(
            document_id, query, keys, self._options, self._limit
        )
        return Neighbourhood([CandidateDocument(d.id, d.title, d.body) for d in found], frequencies)

    async def _fresh(
        self, key: IndexKey, tenant: uuid.UUID, corpus: StoreCorpus, scope: Scope
    ) -> ScopeIndex | None:
        """The scope's index, brought up to date once per batch; None when it cannot be held."""
        held = self._held.get(key)
        if held is not None and held.corpus != corpus:
            del self._held[key]  # the corpus was applied again: its columns may differ
            held = None
        if held is not None and held.batch == self._batch:
            self._held.move_to_end(key)
            return held.index
        async with self._store.tenant(tenant, read_only=True) as tx:
            if held is not None:
                changes = await tx.changed_documents(corpus, held.mark, scope)
                if changes is not None:
                    mark, documents = changes
                    for document in documents:
                        if document.in_scope:
                            held.index.put(TextDocument(document.id, document.title, document.body))
                        else:
                            held.index.remove(document.id)
                    held.mark, held.batch = mark, self._batch
                    self.refreshes += 1
                    self._held.move_to_end(key)
                    return self._bounded(key, held)
                del self._held[key]  # a reset since (a delete): read it in full
            index, loaded = await self._load(tx, corpus, scope)
        if index is None or loaded is None:
            self._too_large.add(key)
            return None
        self.loads += 1
        return self._bounded(key, _Held(index, loaded, corpus, self._batch))

    async def _load(
        self, tx: TenantTransaction, corpus: StoreCorpus, scope: Scope
    ) -> tuple[ScopeIndex | None, ChangeMark | None]:
        # A document costs at least about 1 kB held: a scope with more cannot fit the budget, and
        # is not read whole (past a limit the load is flagged truncated, not refused).
        limits = LoadLimits(max_documents=max(1, self._max_bytes // 1000), on_exceed="flag")
        arrays, rows = await tx.load_graph_rows(corpus, scope, limits)
        if rows is None:
            return None, None
        documents = [
            TextDocument(i, t, b)
            for i, t, b in zip(
                arrays.ids, arrays.titles, arrays.bodies or [None] * len(arrays.ids), strict=True
            )
        ]
        budget = self._max_bytes

        def build() -> ScopeIndex | None:
            index = ScopeIndex()
            for document in documents:
                index.put(document)
                if index.nbytes > budget:
                    return None
            return index

        return await asyncio.to_thread(build), rows.mark

    def _bounded(self, key: IndexKey, held: _Held) -> ScopeIndex | None:
        """`held` kept under `key`, the least recently used others evicted to fit the budget;
        None (not kept) when it alone is over it."""
        if held.index.nbytes > self._max_bytes:
            self._held.pop(key, None)
            self._too_large.add(key)
            return None
        self._held[key] = held
        self._held.move_to_end(key)
        total = self.nbytes
        while total > self._max_bytes and len(self._held) > 1:
            _, evicted = self._held.popitem(last=False)
            total -= evicted.index.nbytes
        return held.index
