"""The navigator's Postgres adapters: its ports (`mnemo_navigator.ports`) over the opened pool.

The tenant ports delegate, one call each, to a `mnemo_store.TenantTransaction`; the catalogue
reads the registry and the tenants table. The write ports (`mnemo_navigator.writes`): the declared
stores from the registry, and the outbox and ingest's inbox as far as a write got.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass

import asyncpg
from mnemo_axon.ir import StoreDecl
from mnemo_store import (
    EdgeDelta,
    GraphArrays,
    LoadLimits,
    OutboxEvent,
    OutboxRelay,
    Scope,
    Store,
    StoreCorpus,
    forgetting,
    outbox,
)
from mnemo_store.erasure import TENANT_ERASED_SQLSTATE
from mnemo_store.errors import StoreError
from mnemo_store.outcomes import NewOutcome, RecentScores, StoredOutcome
from mnemo_store.refresh import GraphRows
from mnemo_store.registry import list_corpora, read_corpus, store_corpora_fingerprint
from mnemo_store.retrieval import FoundDocument
from mnemo_store.unit_of_work import TenantTransaction

from mnemo_navigator.errors import UnknownTenantError
from mnemo_navigator.ports import CorpusEntry
from mnemo_navigator.writes import EventIdReusedError, StoreReaders, TenantErasedError

_TENANT_EXISTS = "SELECT EXISTS (SELECT FROM mnemo.tenants WHERE tenant_id = $1)"


class PostgresCatalogue:
    """Corpora and tenants as the navigator reads them (`Catalogue`)."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool

    async def corpus(self, corpus_id: str) -> CorpusEntry | None:
        row = await read_corpus(self._pool, corpus_id)
        if row is None:
            return None
        return CorpusEntry(
            row.corpus_id, row.status, row.kind, row.definition, row.version, row.collection
        )

    async def tenant_exists(self, tenant: uuid.UUID) -> bool:
        return bool(await self._pool.fetchval(_TENANT_EXISTS, tenant))


class PostgresGraphReads:
    """`GraphReads` in one tenant transaction."""

    def __init__(self, tx: TenantTransaction) -> None:
        self._tx = tx

    async def revision(self, corpus_id: str) -> int:
        return await self._tx.graph_revision(corpus_id)

    async def marks(self, corpus_id: str) -> tuple[int, int]:
        return await self._tx.graph_marks(corpus_id)

    async def load(
        self, corpus: StoreCorpus, scope: Scope, limits: LoadLimits
    ) -> tuple[GraphArrays, GraphRows | None]:
        return await self._tx.load_graph_rows(corpus, scope, limits)

    async def refresh(
        self, corpus: StoreCorpus, rows: GraphRows, scope: Scope, limits: LoadLimits
    ) -> GraphRows | None:
        return await self._tx.refresh_graph(corpus, rows, scope, limits)

    async def retrieve(
        self, corpus: StoreCorpus, query: str, k: int, scope: Scope
    ) -> list[FoundDocument]:
        return await self._tx.retrieve(corpus, query, k, scope)

    async def documents_page(
        self, corpus: StoreCorpus, after: str | None, limit: int, scope: Scope
    ) -> list[FoundDocument]:
        return await self._tx.documents_page(corpus, after, limit, scope)


class PostgresMemory:
    """`NavigationMemory` in one tenant transaction (`mnemo.nav_outcomes`, the edge weights)."""

    def __init__(self, tx: TenantTransaction) -> None:
        self._tx = tx

    async def serialise(self, corpus_id: str, scope_digest: str) -> None:
        await self._tx.serialise_memory(corpus_id, scope_digest)

    async def recent_outcomes(
        self, corpus_id: str, scope_digest: str, horizon: int, *, since: int = 0
    ) -> list[StoredOutcome]:
        return await self._tx.recent_outcomes(corpus_id, scope_digest, horizon, since=since)

    async def recent_scores(self, corpus_id: str, scope_digest: str, horizon: int) -> RecentScores:
        return await self._tx.recent_scores(corpus_id, scope_digest, horizon)

    async def record_outcome(
        self,
        corpus_id: str,
        scope_digest: str,
        sequence: int,
        query: str,
        path: Sequence[str],
        traversed: Sequence[Mapping[str, object]],
        score: float,
    ) -> None:
        await self._tx.record_outcome(
            corpus_id, scope_digest, sequence, query, path, traversed, score
        )

    async def record_outcomes(
        self, corpus_id: str, scope_digest: str, recorded: Sequence[NewOutcome]
    ) -> None:
        await self._tx.record_outcomes(corpus_id, scope_digest, recorded)

    async def reinforce_in_turn(
        self, corpus: StoreCorpus, plans: Sequence[Sequence[EdgeDelta]], scope: Scope
    ) -> None:
        await self._tx.reinforce_in_turn(corpus, plans, scope)

    async def reinforce(
        self, corpus: StoreCorpus, deltas: Sequence[EdgeDelta], scope: Scope
    ) -> int:
        return await self._tx.reinforce(corpus, deltas, scope)


class PostgresAuditTrail:
    """`AuditTrail`: the transaction's outbox rows."""

    def __init__(self, tx: TenantTransaction) -> None:
        self._tx = tx

    async def append(self, event: OutboxEvent) -> None:
        await self._tx.append_outbox(event)

    async def append_all(self, events: Sequence[OutboxEvent]) -> None:
        await self._tx.append_outbox_all(events)


class PostgresInbox:
    """`Inbox`: `mnemo.inbox` rows in the transaction."""

    def __init__(self, tx: TenantTransaction) -> None:
        self._tx = tx

    async def claim(self, consumer: str, request_id: uuid.UUID) -> bool:
        return await self._tx.claim_event(consumer, request_id)


@dataclass(frozen=True, slots=True)
class PostgresTenantWork:
    """`TenantWork`: the four tenant ports over one transaction."""

    graph: PostgresGraphReads
    memory: PostgresMemory
    audit: PostgresAuditTrail
    inbox: PostgresInbox

    @classmethod
    def over(cls, tx: TenantTransaction) -> PostgresTenantWork:
        return cls(
            PostgresGraphReads(tx), PostgresMemory(tx), PostgresAuditTrail(tx), PostgresInbox(tx)
        )


class PostgresTransactions:
    """`Transactions` over a `Store`: one tenant transaction per unit of work."""

    def __init__(self, store: Store) -> None:
        self._store = store

    @asynccontextmanager
    async def tenant(
        self, tenant_id: uuid.UUID, *, read_only: bool = False
    ) -> AsyncIterator[PostgresTenantWork]:
        async with self._store.tenant(tenant_id, read_only=read_only) as tx:
            yield PostgresTenantWork.over(tx)


class PostgresStoreDirectory:
    """`StoreDirectory` over the registry's store corpora, re-read only when their fingerprint
    moved (so a store applied a moment ago is found, and a known one costs no query)."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool
        self._stores: dict[str, StoreReaders] = {}
        self._fingerprint: tuple[object, ...] | None = None

    async def store(self, name: str) -> StoreReaders | None:
        fingerprint = await store_corpora_fingerprint(self._pool)
        if fingerprint != self._fingerprint:
            corpora: list[StoreCorpus] = []
            for row in await list_corpora(self._pool, kind="store_graph"):
                try:
                    corpora.append(StoreCorpus.from_definition(row.definition))
                except (StoreError, ValueError, KeyError, TypeError):
                    continue  # a definition this version cannot read serves no store
            self._stores = store_readers(corpora)
            self._fingerprint = fingerprint
        return self._stores.get(name)


def store_readers(corpora: Sequence[StoreCorpus]) -> dict[str, StoreReaders]:
    """Store name → its declaration and the corpora reading it, as documents or as relations."""
    documents: dict[str, list[StoreCorpus]] = {}
    relations: dict[str, list[StoreCorpus]] = {}
    decls = {}
    for corpus in corpora:
        decls[corpus.documents.name] = corpus.documents
        decls[corpus.relations.name] = corpus.relations
        documents.setdefault(corpus.documents.name, []).append(corpus)
        relations.setdefault(corpus.relations.name, []).append(corpus)
    return {
        name: StoreReaders(decl, tuple(documents.get(name, ())), tuple(relations.get(name, ())))
        for name, decl in decls.items()
    }


class PostgresStoredDocuments:
    """`StoredDocuments`: one read under the tenant's row-level security (`mnemo_store.forgetting`)."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self._store = Store(pool)

    async def exists(
        self,
        tenant: uuid.UUID,
        store: StoreDecl,
        id_column: str,
        document_id: str,
        match: Mapping[str, str],
    ) -> bool:
        async with self._store.tenant(tenant, read_only=True) as tx:
            return await forgetting.document_exists(tx, store, id_column, document_id, match)


_SET_TENANT = "SELECT set_config('mnemo.tenant', $1, true)"
_PUBLISHED = (
    "SELECT count(*) FILTER (WHERE published_at IS NOT NULL) AS published,"
    " mnemo.tenant_is_erased($2) AS erased"
    " FROM mnemo.outbox WHERE event_id = ANY($1::uuid[])"
)
_ERASED = "SELECT mnemo.tenant_is_erased($1)"
RECHECK_SECONDS = 0.25
"""How often a write told by its in-process relay still reads the outbox (another relay, another
replica's, may publish its rows; an erase may remove them)."""
_QUEUED = (
    "SELECT event_id, payload->'data' AS data FROM mnemo.outbox WHERE event_id = ANY($1::uuid[])"
)
_PROCESSED = "SELECT event_id FROM mnemo.inbox WHERE consumer = $1 AND event_id = ANY($2::uuid[])"


class PostgresWriteLog:
    """`WriteLog`: the tenant's outbox rows (queued in one transaction) and ingest's inbox, read
    under the tenant's row-level security."""

    def __init__(
        self, pool: asyncpg.Pool, ingest_inbox: str, relay: OutboxRelay | None = None
    ) -> None:
        self._pool = pool
        self._ingest_inbox = ingest_inbox
        self._relay = relay
        """The in-process relay: woken once rows are queued (no idle pause), and telling a write
        when its rows are published (no polling)."""

    async def queue(self, tenant: uuid.UUID, events: Sequence[OutboxEvent]) -> None:
        ids = [event.event_id for event in events]
        async with self._pool.acquire() as connection, connection.transaction():
            await connection.execute(_SET_TENANT, str(tenant))
            known = {
                row["event_id"]: json.loads(row["data"])
                for row in await connection.fetch(_QUEUED, ids)
            }
            reused = [
                e.event_id
                for e in events
                if known.get(e.event_id, e.payload["data"]) != e.payload["data"]
            ]
            if reused:
                raise EventIdReusedError(
                    f"event ids already sent with another store or values: "
                    f"{', '.join(str(i) for i in reused[:10])} (an event id names one row; "
                    "send new rows with new ids)"
                )
            fresh = [e for e in events if e.event_id not in known]
            try:
                if fresh:  # one statement for the request's rows
                    await connection.execute(
                        outbox.INSERT_MANY_SQL, *outbox.insert_many_args(tenant, fresh)
                    )
            except asyncpg.UniqueViolationError as error:
                raise EventIdReusedError(
                    "another request is sending the same event ids at this moment; resend this "
                    "one once it has been answered"
                ) from error
            except asyncpg.PostgresError as error:
                if getattr(error, "sqlstate", None) == TENANT_ERASED_SQLSTATE:
                    # Erased after the request's tenant check (`mnemo tenant erase`).
                    raise UnknownTenantError(
                        f"unknown tenant {tenant}: it has been erased"
                    ) from None
                raise
        if self._relay is not None:  # committed: the relay may take them now
            self._relay.wake()

    async def until_published(
        self, tenant: uuid.UUID, event_ids: Sequence[uuid.UUID], within: float
    ) -> bool:
        ids = list(event_ids)
        deadline = time.monotonic() + within
        # Registered before the first read, so a publication in between is not missed.
        waiter = None if self._relay is None else self._relay.published_waiter(ids)
        pause = 0.005
        try:
            while True:
                if await self._published(tenant, ids):
                    return True
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                if waiter is None:
                    await asyncio.sleep(min(pause, left))
                    pause = min(pause * 2, 0.1)
                elif await waiter.wait(min(RECHECK_SECONDS, left)):
                    return True
        finally:
            if waiter is not None:
                waiter.close()

    async def _published(self, tenant: uuid.UUID, ids: list[uuid.UUID]) -> bool:
        async with self._pool.acquire() as connection, connection.transaction(readonly=True):
            await connection.execute(_SET_TENANT, str(tenant))
            row = await connection.fetchrow(_PUBLISHED, ids, tenant)
        assert row is not None
        if row["erased"]:
            raise _erased(tenant)
        return int(row["published"]) == len(ids)

    async def processed(self, tenant: uuid.UUID, event_ids: Sequence[uuid.UUID]) -> set[uuid.UUID]:
        async with self._pool.acquire() as connection, connection.transaction(readonly=True):
            await connection.execute(_SET_TENANT, str(tenant))
            rows = await connection.fetch(_PROCESSED, self._ingest_inbox, list(event_ids))
            if len(rows) < len(event_ids) and await connection.fetchval(_ERASED, tenant):
                raise _erased(tenant)
        return {row["event_id"] for row in rows}


def _erased(tenant: uuid.UUID) -> TenantErasedError:
    return TenantErasedError(
        f"tenant {tenant} was erased while this request waited: its queued rows were removed "
        "with the rest of the tenant and will never be written"
    )
