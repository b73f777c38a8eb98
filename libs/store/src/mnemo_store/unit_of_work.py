"""The tenant-scoped unit of work: the only way to reach store rows.

    async with store.tenant(tenant_id) as tx:
        graph = await tx.load_graph(corpus, scope)

`store.tenant` opens a transaction and sets `mnemo.tenant` for that transaction only
(`set_config(…, true)`: a pooled connection never carries a tenant into its next checkout). Every
query of this package runs through a `TenantTransaction`, which exists only inside such a block and
refuses use after it, so a query without a tenant cannot be written. Row-level security is the
second line: with no tenant set, Postgres returns no rows and refuses every write.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from types import TracebackType
from typing import Self

import asyncpg
from mnemo_axon.ir import StoreDecl
from mnemo_axon.row_values import InvalidRowError, row_columns

from mnemo_store import candidates, outbox, outcomes, refresh, retrieval
from mnemo_store.candidates import CandidateDocument
from mnemo_store.erasure import TENANT_ERASED_SQLSTATE, TenantErasedError
from mnemo_store.errors import InvalidValueError, TenantTransactionClosedError
from mnemo_store.identifiers import TENANT_COLUMN, quote, store_table
from mnemo_store.loading import (
    CopyFormat,
    CopyOutput,
    CopyQuery,
    GraphArrays,
    LoadLimits,
    load_graph_arrays,
)
from mnemo_store.outcomes import NewOutcome, RecentScores, StoredOutcome
from mnemo_store.pools import open_pool
from mnemo_store.reinforcement import EdgeDelta, ReinforcementBatch, batch, reinforcement_sql
from mnemo_store.retrieval import FoundDocument
from mnemo_store.row_values import check_payload, column_array
from mnemo_store.scope import CompiledScope, Scope, compile_scope, positional
from mnemo_store.store_corpus import StoreCorpus

_SET_TENANT = "SELECT set_config('mnemo.tenant', $1, true)"
# A write transaction also holds the tenant (`mnemo.hold_tenant`, migration 0014): an erase waits
# for it, and it is refused once the tenant is erased (`mnemo_store.erasure`).
_ENTER_FOR_WRITE = "SELECT set_config('mnemo.tenant', $1, true), mnemo.hold_tenant($1::uuid)"
_HELPER_RELEASE_SECONDS = 60.0
_REVISION = "SELECT revision FROM mnemo.graph_revisions WHERE corpus_id = $1"
_MARKS = "SELECT revision, reset_revision FROM mnemo.graph_revisions WHERE corpus_id = $1"
_SNAPSHOT = "SELECT pg_current_snapshot()::text"
_TAKE_REVISIONS = (
    "INSERT INTO mnemo.graph_revisions AS g (axon_tenant, corpus_id, revision)"
    " SELECT $1, corpus, 1 FROM unnest($2::text[]) AS corpus ORDER BY corpus"
    " ON CONFLICT (axon_tenant, corpus_id) DO UPDATE SET revision = g.revision + 1, updated_at = now()"
)


def _copier(connection: asyncpg.Connection) -> CopyQuery:
    """Runs `COPY (query) TO STDOUT (FORMAT …)` on `connection`, returning the bytes.

    Chunks are appended to one growing buffer as they arrive: joining a list of chunks at the end
    held the whole stream twice (330 MB of edges each at a million documents); a large buffer
    grows in place, with a little slack. With `output` each chunk goes there instead (a graph
    load decodes the edges as they stream in).
    """

    async def copy(
        query: str,
        params: tuple[object, ...],
        form: CopyFormat,
        output: CopyOutput | None = None,
    ) -> bytearray:
        buffer = bytearray()

        async def sink(chunk: bytes) -> None:
            if output is None:
                buffer.extend(chunk)
            else:
                output(chunk)

        await connection.copy_from_query(query, *params, output=sink, format=form)
        return buffer  # read only: decoded, or viewed by numpy

    return copy


class Store:
    """A pool of connections as the application role; rows are reached through `tenant()`."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool

    @classmethod
    async def connect(cls, dsn: str, *, min_size: int = 1, max_size: int = 10) -> Store:
        return cls(await open_pool(dsn, min_size=min_size, max_size=max_size))

    async def close(self) -> None:
        await self._pool.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    @asynccontextmanager
    async def tenant(
        self, tenant_id: uuid.UUID, *, read_only: bool = False
    ) -> AsyncIterator[TenantTransaction]:
        """A transaction for `tenant_id`; committed when the block ends, rolled back on error.

        `read_only=True` gives a REPEATABLE READ, READ ONLY transaction: every read in it sees
        one snapshot, so a graph and its revision are consistent with each other. A write
        transaction of an erased tenant raises `TenantErasedError` on entry.
        """
        if not isinstance(tenant_id, uuid.UUID):
            raise TypeError(f"tenant_id must be a uuid.UUID, got {type(tenant_id).__name__}")
        async with self._pool.acquire() as connection:
            isolation = "repeatable_read" if read_only else "read_committed"
            async with connection.transaction(isolation=isolation, readonly=read_only):
                if read_only:
                    await connection.execute(_SET_TENANT, str(tenant_id))
                else:
                    try:
                        await connection.execute(_ENTER_FOR_WRITE, str(tenant_id))
                    except asyncpg.PostgresError as error:
                        if getattr(error, "sqlstate", None) == TENANT_ERASED_SQLSTATE:
                            raise TenantErasedError(tenant_id) from None
                        raise
                tx = TenantTransaction(
                    connection, tenant_id, helpers=self._pool if read_only else None
                )
                try:
                    yield tx
                except asyncpg.PostgresError as error:
                    # An insert's statement trigger found the tenant erased since entry.
                    if getattr(error, "sqlstate", None) == TENANT_ERASED_SQLSTATE:
                        raise TenantErasedError(tenant_id) from None
                    raise
                finally:
                    tx._close()


class TenantTransaction:
    """Queries for one tenant inside one transaction. Obtain it from `Store.tenant`."""

    def __init__(
        self,
        connection: asyncpg.Connection,
        tenant_id: uuid.UUID,
        *,
        helpers: asyncpg.Pool | None = None,
    ) -> None:
        self._connection: asyncpg.Connection | None = connection
        self._tenant_id = tenant_id
        # In a REPEATABLE READ transaction a second pooled connection can import its snapshot,
        # so a graph load runs its two COPYs at once and still reads one consistent state.
        self._helpers = helpers

    @property
    def tenant_id(self) -> uuid.UUID:
        return self._tenant_id

    def _close(self) -> None:
        self._connection = None

    def _open(self) -> asyncpg.Connection:
        if self._connection is None:
            raise TenantTransactionClosedError()
        return self._connection

    # ------------------------------------------------------------------------------- graph reads

    async def graph_revision(self, corpus_id: str) -> int:
        """The corpus's revision for this tenant (0 before its first write): one index lookup.

        A graph cached at revision r is fresh exactly when this still returns r.
        """
        value = await self._open().fetchval(_REVISION, corpus_id)
        return 0 if value is None else int(value)

    async def graph_marks(self, corpus_id: str) -> tuple[int, int]:
        """The corpus's revision and the revision of its last reset (a delete, or a row whose
        identity changed: see `refresh`); (0, 0) before its first write."""
        row = await self._open().fetchrow(_MARKS, corpus_id)
        return (0, 0) if row is None else (int(row["revision"]), int(row["reset_revision"]))

    async def load_graph_rows(
        self, corpus: StoreCorpus, scope: Scope | None = None, limits: LoadLimits | None = None
    ) -> tuple[GraphArrays, refresh.GraphRows | None]:
        """`load_graph`, plus the rows in the form `refresh_graph` merges changes into (None when
        the corpus cannot be refreshed incrementally, see `refresh.edge_key_column`)."""
        key = refresh.edge_key_column(corpus)
        # Snapshot and reset mark first: the rows read after them are as new or newer, so a later
        # refresh from this snapshot re-reads, never misses, what they already hold.
        snapshot = await self._open().fetchval(_SNAPSHOT)
        _, reset = await self.graph_marks(corpus.name)
        arrays = await self.load_graph(corpus, scope, limits, edge_key=key)
        if key is None:
            return arrays, None
        # Sorting every edge by its key (500k at 100k documents): in a worker thread.
        rows = await asyncio.to_thread(refresh.GraphRows.from_arrays, arrays, str(snapshot), reset)
        return arrays, rows

    async def refresh_graph(
        self,
        corpus: StoreCorpus,
        rows: refresh.GraphRows,
        scope: Scope | None = None,
        limits: LoadLimits | None = None,
    ) -> refresh.GraphRows | None:
        """`rows` brought up to this transaction's snapshot by reading only the rows changed since
        theirs (`refresh`); None when that cannot be done (a reset since, a limit, a corpus
        without an integer edge key): load in full instead."""
        key = refresh.edge_key_column(corpus)
        if key is None:
            return None
        connection = self._open()
        limits = limits or LoadLimits()
        changes = await self.changed_documents(corpus, rows.mark, scope)
        if changes is None:
            return None
        mark, documents = changes
        snapshot, revision, reset = mark.snapshot, mark.revision, mark.reset_revision
        if mark == rows.mark:
            return rows
        compiled = compile_scope(scope or Scope(), corpus)
        changed, params = positional(
            refresh.changed_edges_sql(corpus, key, compiled),
            compiled,
            xmin=rows.xmin,
            snapshot=rows.snapshot,
        )
        edge_rows = [tuple(r) for r in await connection.fetch(changed, *params)]
        arriving = rows.new_documents(documents)
        if arriving:
            incident, params = positional(
                refresh.incident_edges_sql(corpus, key, compiled), compiled, ids=arriving
            )
            edge_rows += [tuple(r) for r in await connection.fetch(incident, *params)]
        # The merge copies the graph's columns (O(documents)): in a worker thread, off the loop.
        return await asyncio.to_thread(
            refresh.merge,
            rows,
            documents,
            refresh.ChangedEdges.of(edge_rows),
            snapshot=snapshot,
            revision=revision,
            reset_revision=reset,
            limits=limits,
        )

    async def change_mark(self, corpus: StoreCorpus) -> refresh.ChangeMark:
        """Where this transaction stands in the corpus's changes: rows read after this call are
        as new or newer, so `changed_documents` from the mark re-reads, never misses, them."""
        snapshot = str(await self._open().fetchval(_SNAPSHOT))
        revision, reset = await self.graph_marks(corpus.name)
        return refresh.ChangeMark(snapshot, revision, reset)

    async def changed_documents(
        self, corpus: StoreCorpus, since: refresh.ChangeMark, scope: Scope | None = None
    ) -> tuple[refresh.ChangeMark, list[refresh.ChangedDocument]] | None:
        """The documents changed between `since` and this transaction's snapshot (`refresh`),
        each saying whether it is in `scope`, with this transaction's mark; None when a reset
        happened since (a delete, an identity change): read in full instead. The one freshness
        step of every cache of store rows (the navigator's graphs, the classifier's indexes)."""
        mark = await self.change_mark(corpus)
        if mark.reset_revision != since.reset_revision or mark.revision < since.revision:
            return None
        if mark == since:
            return mark, []
        compiled = compile_scope(scope or Scope(), corpus)
        sql, params = positional(
            refresh.changed_documents_sql(corpus, compiled),
            compiled,
            xmin=since.xmin,
            snapshot=since.snapshot,
        )
        rows = await self._open().fetch(sql, *params)
        return mark, [refresh.ChangedDocument(r[0], r[1], r[2], r[3]) for r in rows]

    async def load_graph(
        self,
        corpus: StoreCorpus,
        scope: Scope | None = None,
        limits: LoadLimits | None = None,
        *,
        edge_key: str | None = None,
    ) -> GraphArrays:
        """The corpus's documents and edges in `scope`, as engine arrays, with their revision.

        The revision is read first: in a READ COMMITTED transaction the rows can then only be
        newer than it (a cache reloads once more), never older. Use `tenant(..., read_only=True)`
        for rows and revision from one snapshot.
        """
        connection = self._open()
        compiled = compile_scope(scope or Scope(), corpus)
        revision = await self.graph_revision(corpus.name)
        limits = limits or LoadLimits()
        helper = await self._helper()
        if helper is None:
            return await load_graph_arrays(
                _copier(connection),
                _copier(connection),
                corpus,
                compiled,
                limits,
                revision,
                concurrent=False,
                edge_key=edge_key,
            )
        pool, second = helper
        try:
            snapshot = await connection.fetchval("SELECT pg_export_snapshot()")
            async with second.transaction(isolation="repeatable_read", readonly=True):
                await second.execute(f"SET TRANSACTION SNAPSHOT '{snapshot}'")
                await second.execute(_SET_TENANT, str(self._tenant_id))
                return await load_graph_arrays(
                    _copier(second),
                    _copier(connection),
                    corpus,
                    compiled,
                    limits,
                    revision,
                    concurrent=True,
                    edge_key=edge_key,
                )
        finally:
            # The release resets the connection; unless told, asyncpg bounds that by the acquire's
            # 50 ms, which a busy database exceeds (the load then failed with TimeoutError).
            await pool.release(second, timeout=_HELPER_RELEASE_SECONDS)

    async def _helper(self) -> tuple[asyncpg.Pool, asyncpg.Connection] | None:
        """A second connection when one is free right now; never waits (that could starve the
        pool: every holder of one connection waiting for a second)."""
        pool = self._helpers
        if pool is None or (pool.get_idle_size() == 0 and pool.get_size() >= pool.get_max_size()):
            return None
        try:
            return pool, await pool.acquire(timeout=0.05)
        except TimeoutError:
            return None

    async def retrieve(
        self, corpus: StoreCorpus, query: str, k: int, scope: Scope | None = None
    ) -> list[FoundDocument]:
        """The `k` documents in `scope` ranked highest by full-text rank for `query` (index lookup)."""
        text = retrieval.text_query(query)
        if not text or k < 1:
            return []
        compiled = compile_scope(scope or Scope(), corpus)
        sql, params = positional(
            retrieval.retrieve_sql(corpus, compiled), compiled, query=text, k=k
        )
        rows = await self._open().fetch(sql, *params)
        return [
            FoundDocument(
                row["axon_id"], row["axon_title"], row["axon_body"], row["axon_similarity"]
            )
            for row in rows
        ]

    async def neighbourhood(
        self,
        corpus: StoreCorpus,
        document_id: str,
        *,
        keys: Sequence[str],
        names: Sequence[str],
        max_holders: int,
        cited: Sequence[str],
        titles: Sequence[str],
        limit: int,
        scope: Scope | None = None,
    ) -> tuple[list[CandidateDocument], dict[str, int]]:
        """The edge classifier's read, in one statement (`candidates.neighbourhood_sql`): how many
        documents in `scope` hold each of `keys`, and the candidates: documents whose title key is
        one of `titles`, or that hold one of `cited`, or one of `names` held by at most
        `max_holders` documents; id order, at most `limit`, the document itself excluded."""
        compiled = compile_scope(scope or Scope(), corpus)
        sql, params = positional(
            candidates.neighbourhood_sql(corpus, compiled.sql),
            compiled,
            keys=list(keys),
            names=list(names),
            max_holders=max_holders,
            cited=list(cited),
            titles=list(titles),
            document_id=document_id,
            limit=max(0, limit),
        )
        rows = await self._open().fetch(sql, *params)
        found = [
            CandidateDocument(r["axon_id"], r["axon_title"], r["axon_body"])
            for r in rows
            if r["axon_kind"] == "doc"
        ]
        counts = {r["axon_id"]: int(r["axon_count"]) for r in rows if r["axon_kind"] == "key"}
        return found, counts

    async def documents_page(
        self, corpus: StoreCorpus, after: str | None, limit: int, scope: Scope | None = None
    ) -> list[FoundDocument]:
        """Up to `limit` documents in `scope`, in id order (text, byte order), after id `after`."""
        compiled = compile_scope(scope or Scope(), corpus)
        sql, params = positional(
            retrieval.page_sql(corpus, compiled), compiled, after=after, limit=limit
        )
        rows = await self._open().fetch(sql, *params)
        return [FoundDocument(row["axon_id"], row["axon_title"], row["axon_body"]) for row in rows]

    async def recent_outcomes(
        self, corpus_id: str, scope_digest: str, horizon: int, *, since: int = 0
    ) -> list[StoredOutcome]:
        """The last `horizon` outcomes of (this tenant, `corpus_id`, scope) from sequence `since`
        on, oldest first."""
        rows = await self._open().fetch(
            outcomes.RECENT_SQL, corpus_id, scope_digest, horizon, since
        )
        return [
            StoredOutcome(int(row["seq"]), tuple(row["path"]), float(row["score"]))
            for row in reversed(rows)
        ]

    async def recent_scores(self, corpus_id: str, scope_digest: str, horizon: int) -> RecentScores:
        """The scores of the last `horizon` outcomes of (this tenant, `corpus_id`, scope), oldest
        first, and the last sequence: what a memory write reads holding the scope's lock."""
        row = await self._open().fetchrow(outcomes.SCORES_SQL, corpus_id, scope_digest, horizon)
        if row is None:  # an aggregate answers one row; kept for the type
            return RecentScores(0, ())
        return RecentScores(int(row["last"]), tuple(row["scores"]))

    # ------------------------------------------------------------------------------------ writes

    async def serialise_memory(self, corpus_id: str, scope_digest: str) -> None:
        """Serialise the memory writers of (this tenant, `corpus_id`, scope) until the
        transaction ends: read the scope's recent outcomes and record the next after this.

        An advisory lock of that scope alone: a writer of the corpus's rows (ingest, the
        classifier) never waits on it. The reinforcement that follows takes the corpus's
        revision row in its own statement (the store's revision trigger), before any edge row,
        and holds it only from then to the commit.
        """
        key = outcomes.memory_lock_key(self._tenant_id, corpus_id, scope_digest)
        await self._open().execute(outcomes.MEMORY_LOCK_SQL, key)

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
        """Remember one navigation (call holding the scope's lock, see `serialise_memory`)."""
        await self.record_outcomes(
            corpus_id, scope_digest, [NewOutcome(sequence, query, tuple(path), traversed, score)]
        )

    async def record_outcomes(
        self, corpus_id: str, scope_digest: str, recorded: Sequence[NewOutcome]
    ) -> None:
        """Remember navigations in one round trip (call holding the scope's lock)."""
        if not recorded:
            return
        await self._open().executemany(
            outcomes.INSERT_SQL,
            [
                (
                    self._tenant_id,
                    corpus_id,
                    scope_digest,
                    outcome.sequence,
                    outcome.query,
                    list(outcome.path),
                    json.dumps(list(outcome.traversed), sort_keys=True),
                    outcome.score,
                )
                for outcome in recorded
            ],
        )

    async def reinforce(
        self, corpus: StoreCorpus, deltas: Iterable[EdgeDelta], scope: Scope | None = None
    ) -> int:
        """Move every traversed edge's weight by its (summed) delta in one statement.

        Returns the number of edge rows updated (parallel rows with the same endpoints and type
        all move). An empty or all-zero batch writes nothing.
        """
        rows = batch(deltas)
        if not len(rows):
            return 0
        sql, params = _reinforcement(corpus, compile_scope(scope or Scope(), corpus), rows)
        status = await self._open().execute(sql, *params)
        return int(status.rsplit(" ", 1)[-1])

    async def reinforce_in_turn(
        self, corpus: StoreCorpus, plans: Sequence[Iterable[EdgeDelta]], scope: Scope | None = None
    ) -> None:
        """`reinforce` each plan in its turn, one statement each (each clamps what the ones
        before it left), all sent in one round trip. Empty or all-zero plans write nothing."""
        batches = [rows for rows in (batch(deltas) for deltas in plans) if len(rows)]
        if not batches:
            return
        compiled = compile_scope(scope or Scope(), corpus)
        statements = [_reinforcement(corpus, compiled, rows) for rows in batches]
        await self._open().executemany(statements[0][0], [params for _, params in statements])

    async def insert_rows(self, store: StoreDecl, rows: Sequence[Mapping[str, object]]) -> int:
        """Insert rows into a declared store for this tenant in one statement; returns the count.

        Every row must name the same columns. Values are bound per column as typed arrays;
        Json values may be given as Python objects, other values as text (`row_values`). A column
        the store does not declare, or a value Postgres cannot take, is an InvalidValueError naming
        its row and column, before any SQL.
        """
        connection = self._open()
        if not rows:
            return 0
        names = list(rows[0])
        try:
            columns = row_columns(store, names)
        except InvalidRowError as error:
            raise InvalidValueError(str(error)) from None
        for number, row in enumerate(rows):
            if row.keys() != rows[0].keys():
                raise InvalidValueError(
                    f"row {number} names columns {sorted(row)}, row 0 names {sorted(names)}: "
                    "every row of one insert must name the same columns"
                )
        arrays = [
            column_array(store.name, column, [row[column.name] for row in rows])
            for column in columns
        ]
        unnest = ", ".join(
            f"${index + 2}::{column.type.postgres}[]" for index, column in enumerate(columns)
        )
        target = ", ".join(quote(column.name) for column in columns)
        status = await connection.execute(
            f"INSERT INTO {store_table(store.name)} ({quote(TENANT_COLUMN)}, {target})"
            f" SELECT $1, * FROM unnest({unnest})",
            self._tenant_id,
            *arrays,
        )
        return int(status.rsplit(" ", 1)[-1])

    async def take_revisions(self, corpus_ids: Iterable[str]) -> None:
        """Bump (and so lock, until commit) the revision rows of `corpus_ids`, in name order.

        Every store write already takes its corpora's revision rows before its rows (the trigger
        runs before the statement). A transaction that writes stores of *different* corpora calls
        this first with all of them, so two such transactions cannot take them in opposite orders.
        """
        names = sorted(set(corpus_ids))
        if names:
            await self._open().execute(_TAKE_REVISIONS, self._tenant_id, names)

    async def append_outbox(self, event: outbox.OutboxEvent) -> None:
        """Queue `event` for publishing; it leaves only if this transaction commits."""
        await self.append_outbox_all([event])

    async def append_outbox_all(self, events: Sequence[outbox.OutboxEvent]) -> None:
        """Queue `events` for publishing, in one round trip; they leave only if this commits."""
        for event in events:
            check_payload(event.payload, f"outbox event {event.event_id} ({event.topic}) payload")
        if events:
            await self._open().executemany(
                outbox.INSERT_SQL, [outbox.insert_args(self._tenant_id, e) for e in events]
            )

    async def claim_event(self, consumer: str, event_id: uuid.UUID) -> bool:
        """Record that `consumer` processes `event_id` in this transaction.

        False when it already did (the caller skips the work). A concurrent duplicate waits for the
        first to commit and then gets False; if the first rolls back, the second gets True.
        """
        claimed = await self._open().fetchval(
            "INSERT INTO mnemo.inbox (axon_tenant, consumer, event_id) VALUES ($1, $2, $3)"
            " ON CONFLICT DO NOTHING RETURNING true",
            self._tenant_id,
            consumer,
            event_id,
        )
        return bool(claimed)


def _reinforcement(
    corpus: StoreCorpus, scope: CompiledScope, rows: ReinforcementBatch
) -> tuple[str, tuple[object, ...]]:
    """The reinforcement statement of `rows` in `scope`, and its values (asyncpg's order)."""
    return positional(
        reinforcement_sql(corpus, scope),
        scope,
        sources=rows.sources,
        targets=rows.targets,
        etypes=rows.etypes,
        deltas=rows.deltas,
    )
