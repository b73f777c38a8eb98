"""In-memory adapters of the navigator's ports (`mnemo_navigator.ports`), for use-case tests.

They keep what the use cases rely on, checked against the Postgres adapters by one contract suite
(tests/integration/navigator/test_ports_contract.py):

- every tenant's rows, memory, outbox and inbox are its own (row-level security's promise);
- a scope is the real one: it is compiled by `mnemo_store.scope.compile_scope` first (so a filter
  the store refuses is refused here too), then evaluated row by row; a filter naming a column the
  relations store lacks scopes the edges by their two ends, as in Postgres;
- every write statement moves the revision of the corpora reading the store by one, a deletion
  also moves their reset mark (a cached graph cannot be refreshed across it);
- a write unit of work runs alone (stronger than Postgres's locks: a scope's memory lock, the
  revision row) on a copy of the
  tenant's state that replaces it only when the block ends without an error; a read-only one
  reads a copy taken when it began (one snapshot);
- a reinforcement sums the deltas per edge and clamps the weight to [0.001, 1.0];
- a declared graph's memory (`InMemoryDeclaredCorpora`) is an overlay per tenant, corpus and scope,
  each update one clamped step from the declared weight the first time.

Ranking differs: `retrieve` scores a document by the share of the query's distinct terms it holds
(`n / (n + 1)`), not Postgres's `ts_rank_cd`; the order rule (best first, then id) is the same.
Graphs are built with the store's own merge (`mnemo_store.refresh.merge`) from nothing, so they are
the same `GraphRows` a Postgres load gives.
"""

from __future__ import annotations

import asyncio
import copy
import math
import re
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

from mnemo_axon.column_types import AxonType
from mnemo_axon.column_values import value_from_boolean, value_from_number, value_from_text
from mnemo_axon.ir import Deployment, StoreDecl
from mnemo_axon.where import (
    BooleanValue,
    Condition,
    Filter,
    NullValue,
    NumberValue,
    Operator,
    StringValue,
    TimeUnit,
    TimeValue,
    bind_filter,
    parse_filter,
)
from mnemo_mdn.relations import TYPE_CODE
from mnemo_mdn.tokenization import token_list
from mnemo_store import EdgeDelta, GraphArrays, LoadLimits, OutboxEvent, Scope, StoreCorpus
from mnemo_store.corpus_documents import CorpusDocument, WeightUpdate
from mnemo_store.errors import RowLimitExceededError, TenantTransactionClosedError
from mnemo_store.outcomes import NewOutcome, RecentScores, StoredOutcome
from mnemo_store.refresh import ChangedDocument, ChangedEdges, GraphRows, merge
from mnemo_store.reinforcement import MAX_WEIGHT, MIN_WEIGHT, batch
from mnemo_store.retrieval import MAX_QUERY_TERMS, FoundDocument
from mnemo_store.scope import compile_scope

from mnemo_navigator.corpus_forms import RankedText, rank
from mnemo_navigator.ports import CorpusEntry

Row = dict[str, object]

# An approximation of Postgres's calendar intervals, enough for `now() - interval '1 day'`.
_UNIT = {
    TimeUnit.SECOND: timedelta(seconds=1),
    TimeUnit.MINUTE: timedelta(minutes=1),
    TimeUnit.HOUR: timedelta(hours=1),
    TimeUnit.DAY: timedelta(days=1),
    TimeUnit.WEEK: timedelta(weeks=1),
    TimeUnit.MONTH: timedelta(days=30),
    TimeUnit.YEAR: timedelta(days=365),
}


# ---------------------------------------------------------------------------------------- state


@dataclass(slots=True)
class _Outcome:
    corpus_id: str
    scope_digest: str
    sequence: int
    query: str
    path: tuple[str, ...]
    traversed: tuple[Mapping[str, object], ...]
    score: float


@dataclass(slots=True)
class _TenantState:
    rows: dict[str, list[Row]] = field(default_factory=dict)  # store name -> rows (with a key)
    revisions: dict[str, tuple[int, int]] = field(default_factory=dict)  # corpus -> (rev, reset)
    outcomes: list[_Outcome] = field(default_factory=list)
    outbox: list[OutboxEvent] = field(default_factory=list)
    inbox: set[tuple[str, uuid.UUID]] = field(default_factory=set)
    next_key: int = 1

    def wrote(self, store: str, corpora: Sequence[str], *, reset: bool = False) -> None:
        """One statement on `store`: every corpus reading it moves (a reset too, if `reset`)."""
        for corpus in corpora:
            revision, reset_revision = self.revisions.get(corpus, (0, 0))
            self.revisions[corpus] = (revision + 1, revision + 1 if reset else reset_revision)


_KEY = "\x00key"  # each row's hidden integer key (the Postgres adapter's axon_row_id)


class InMemoryStore:
    """Every tenant's store rows, memory, outbox and inbox; `tenant()` is `Transactions`.

    Tests write rows with `write` (an insert statement), `delete` and `forget`, and read what the use
    cases wrote with `outbox`, `outcomes` and `rows`.
    """

    def __init__(self) -> None:
        self._tenants: dict[uuid.UUID, _TenantState] = {}
        self._readers: dict[str, set[str]] = {}  # store name -> corpora reading it
        self._writing = asyncio.Lock()

    def register(self, corpus: StoreCorpus) -> None:
        """Let writes to `corpus`'s stores move its revision (the trigger `apply` installs)."""
        for store in (corpus.documents, corpus.relations):
            self._readers.setdefault(store.name, set()).add(corpus.name)

    def _state(self, tenant_id: uuid.UUID) -> _TenantState:
        return self._tenants.setdefault(tenant_id, _TenantState())

    def write(
        self, tenant_id: uuid.UUID, store: StoreDecl, rows: Sequence[Mapping[str, object]]
    ) -> None:
        """Insert `rows` into `store` for `tenant_id` in one statement."""
        state = self._state(tenant_id)
        table = state.rows.setdefault(store.name, [])
        for row in rows:
            stored: Row = {name: _stored(value, store, name) for name, value in row.items()}
            stored[_KEY] = state.next_key
            state.next_key += 1
            table.append(stored)
        state.wrote(store.name, sorted(self._readers.get(store.name, ())))

    def delete(
        self, tenant_id: uuid.UUID, store: StoreDecl, where: Callable[[Mapping[str, object]], bool]
    ) -> None:
        """Delete the rows of `store` matching `where` in one statement (a reset)."""
        state = self._state(tenant_id)
        state.rows[store.name] = [r for r in state.rows.get(store.name, []) if not where(r)]
        state.wrote(store.name, sorted(self._readers.get(store.name, ())), reset=True)

    def forget(self, tenant_id: uuid.UUID, corpus: StoreCorpus, document_id: str) -> None:
        """What ingest's forget does to what the navigator reads, in one statement: the document
        goes (a reset of every corpus reading its store), and so do the outcomes naming it."""
        self.delete(
            tenant_id, corpus.documents, lambda row: str(row.get(corpus.id_column)) == document_id
        )
        state = self._state(tenant_id)
        state.outcomes = [
            o for o in state.outcomes if o.corpus_id != corpus.name or document_id not in o.path
        ]

    def outbox(self, tenant_id: uuid.UUID) -> list[OutboxEvent]:
        return list(self._state(tenant_id).outbox)

    def outcomes(self, tenant_id: uuid.UUID, corpus_id: str) -> list[StoredOutcome]:
        return [
            StoredOutcome(o.sequence, o.path, o.score)
            for o in self._state(tenant_id).outcomes
            if o.corpus_id == corpus_id
        ]

    def rows(self, tenant_id: uuid.UUID, store: StoreDecl) -> list[dict[str, object]]:
        """The tenant's rows of `store` as they stand (copies)."""
        return [
            {name: value for name, value in row.items() if name != _KEY}
            for row in self._state(tenant_id).rows.get(store.name, [])
        ]

    @asynccontextmanager
    async def tenant(
        self, tenant_id: uuid.UUID, *, read_only: bool = False
    ) -> AsyncIterator[InMemoryTenantWork]:
        if not isinstance(tenant_id, uuid.UUID):
            raise TypeError(f"tenant_id must be a uuid.UUID, got {type(tenant_id).__name__}")
        if read_only:
            snapshot = copy.deepcopy(self._state(tenant_id))
            work = InMemoryTenantWork(snapshot, self._readers, read_only=True)
            try:
                yield work
            finally:
                work.close()
            return
        async with self._writing:
            staged = copy.deepcopy(self._state(tenant_id))
            work = InMemoryTenantWork(staged, self._readers, read_only=False)
            try:
                yield work
            finally:
                work.close()
            self._tenants[tenant_id] = staged  # committed: the block ended without an error


class InMemoryTenantWork:
    """`TenantWork` over one tenant's state (a copy: see `InMemoryStore.tenant`)."""

    def __init__(
        self, state: _TenantState, readers: Mapping[str, set[str]], *, read_only: bool
    ) -> None:
        self._state: _TenantState | None = state
        self._readers = readers
        self.read_only = read_only
        self.graph = InMemoryGraphReads(self)
        self.memory = InMemoryMemory(self)
        self.audit = InMemoryAuditTrail(self)
        self.inbox = InMemoryInbox(self)

    def close(self) -> None:
        self._state = None

    def state(self, *, writing: bool = False) -> _TenantState:
        if self._state is None:
            raise TenantTransactionClosedError()
        if writing and self.read_only:
            raise PermissionError("a read-only unit of work cannot write")
        return self._state

    def readers(self, store: str) -> list[str]:
        return sorted(self._readers.get(store, ()))


class InMemoryGraphReads:
    def __init__(self, work: InMemoryTenantWork) -> None:
        self._work = work

    async def revision(self, corpus_id: str) -> int:
        return self._work.state().revisions.get(corpus_id, (0, 0))[0]

    async def marks(self, corpus_id: str) -> tuple[int, int]:
        return self._work.state().revisions.get(corpus_id, (0, 0))

    async def load(
        self, corpus: StoreCorpus, scope: Scope, limits: LoadLimits
    ) -> tuple[GraphArrays, GraphRows | None]:
        rows = self._rows(corpus, scope, limits)
        return rows, rows

    async def refresh(
        self, corpus: StoreCorpus, rows: GraphRows, scope: Scope, limits: LoadLimits
    ) -> GraphRows | None:
        revision, reset = self._work.state().revisions.get(corpus.name, (0, 0))
        if reset != rows.reset_revision or revision < rows.revision:
            return None
        if revision == rows.revision:
            return rows
        # Read again in full: the same rows a merge of the changes gives, without its change map
        # (the use case then builds the graph afresh rather than carrying the old one over).
        return self._rows(corpus, scope, limits)

    def _rows(self, corpus: StoreCorpus, scope: Scope, limits: LoadLimits) -> GraphRows:
        state = self._work.state()
        revision, reset = state.revisions.get(corpus.name, (0, 0))
        documents, edges = _in_scope(state, corpus, scope)
        documents = [row for row in documents if row.get(corpus.id_column) is not None]
        if len(documents) > limits.max_documents:
            raise RowLimitExceededError(corpus.name, "documents", limits.max_documents)
        if len(edges) > limits.max_edges:
            raise RowLimitExceededError(corpus.name, "edges", limits.max_edges)
        nothing = ChangedEdges.of([])
        empty = GraphRows(
            corpus=corpus.name,
            revision=0,
            ids=[],
            titles=[],
            bodies=None if corpus.body_column is None else [],
            edge_source=nothing.key,
            edge_target=nothing.key,
            edge_type=nothing.code,
            edge_weight=nothing.weight,
            snapshot="0:0:",
            reset_revision=0,
            edge_key=nothing.key,
        )
        changed = ChangedEdges.of(
            [
                (
                    _key(row),
                    _text(row.get(corpus.from_column)),
                    _text(row.get(corpus.to_column)),
                    TYPE_CODE.get(str(row.get(corpus.etype_column)), -1),
                    _weight(row.get(corpus.weight_column)),
                    True,
                )
                for row in edges
            ]
        )
        snapshot = f"{revision}:{revision}:"
        merged = merge(
            empty,
            [_document(corpus, row) for row in documents],
            changed,
            snapshot=snapshot,
            revision=revision,
            reset_revision=reset,
            limits=limits,
        )
        assert merged is not None  # the limits were checked above
        return replace(merged, change=None, documents_read=len(documents), edges_read=len(edges))

    async def retrieve(
        self, corpus: StoreCorpus, query: str, k: int, scope: Scope
    ) -> list[FoundDocument]:
        terms = set(list(dict.fromkeys(token_list(query)))[:MAX_QUERY_TERMS])
        if not terms or k < 1:
            return []
        documents, _ = _in_scope(self._work.state(), corpus, scope, edges=False)
        found: list[FoundDocument] = []
        for row in documents:
            document = _document(corpus, row)
            held = len(terms & set(token_list(f"{document.title} {document.body or ''}")))
            if held:
                similarity = held / (held + 1)
                found.append(FoundDocument(document.id, document.title, document.body, similarity))
        found.sort(key=lambda d: (-d.similarity, d.id.encode()))
        return found[:k]

    async def documents_page(
        self, corpus: StoreCorpus, after: str | None, limit: int, scope: Scope
    ) -> list[FoundDocument]:
        documents, _ = _in_scope(self._work.state(), corpus, scope, edges=False)
        page = sorted(
            (_document(corpus, row) for row in documents if row.get(corpus.id_column) is not None),
            key=lambda d: d.id.encode(),
        )
        if after is not None:
            page = [d for d in page if d.id.encode() > after.encode()]
        return [FoundDocument(d.id, d.title, d.body) for d in page[: max(0, limit)]]


class InMemoryMemory:
    def __init__(self, work: InMemoryTenantWork) -> None:
        self._work = work

    async def serialise(self, corpus_id: str, scope_digest: str) -> None:
        # The unit of work already runs alone (`InMemoryStore.tenant`): nothing more to lock.
        return None

    async def recent_outcomes(
        self, corpus_id: str, scope_digest: str, horizon: int, *, since: int = 0
    ) -> list[StoredOutcome]:
        return self._recent(corpus_id, scope_digest, horizon, since)

    def _recent(
        self, corpus_id: str, scope_digest: str, horizon: int, since: int = 0
    ) -> list[StoredOutcome]:
        mine = sorted(
            (
                o
                for o in self._work.state().outcomes
                if o.corpus_id == corpus_id
                and o.scope_digest == scope_digest
                and o.sequence >= since
            ),
            key=lambda o: o.sequence,
        )
        last = mine[-horizon:] if horizon > 0 else []
        return [StoredOutcome(o.sequence, o.path, o.score) for o in last]

    async def recent_scores(self, corpus_id: str, scope_digest: str, horizon: int) -> RecentScores:
        recent = self._recent(corpus_id, scope_digest, horizon)
        return RecentScores(recent[-1].sequence if recent else 0, tuple(o.score for o in recent))

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
        state = self._work.state(writing=True)
        if any(
            (o.corpus_id, o.scope_digest, o.sequence) == (corpus_id, scope_digest, sequence)
            for o in state.outcomes
        ):
            raise ValueError(
                f"outcome {sequence} of corpus {corpus_id!r} in scope {scope_digest} is already "
                "recorded: allocate the next sequence holding the scope (`serialise`)"
            )
        state.outcomes.append(
            _Outcome(corpus_id, scope_digest, sequence, query, tuple(path), tuple(traversed), score)
        )

    async def record_outcomes(
        self, corpus_id: str, scope_digest: str, recorded: Sequence[NewOutcome]
    ) -> None:
        for outcome in recorded:
            await self.record_outcome(
                corpus_id,
                scope_digest,
                outcome.sequence,
                outcome.query,
                outcome.path,
                outcome.traversed,
                outcome.score,
            )

    async def reinforce_in_turn(
        self, corpus: StoreCorpus, plans: Sequence[Sequence[EdgeDelta]], scope: Scope
    ) -> None:
        for deltas in plans:
            await self.reinforce(corpus, deltas, scope)

    async def reinforce(
        self, corpus: StoreCorpus, deltas: Sequence[EdgeDelta], scope: Scope
    ) -> int:
        state = self._work.state(writing=True)
        rows = batch(deltas)
        if not len(rows):
            return 0
        summed = {
            (s, t, e): d
            for s, t, e, d in zip(rows.sources, rows.targets, rows.etypes, rows.deltas, strict=True)
        }
        _, edges = _in_scope(state, corpus, scope)
        moved = 0
        for row in edges:
            weight = row.get(corpus.weight_column)
            delta = summed.get(_edge_ends(corpus, row))
            if delta is None or weight is None:
                continue
            row[corpus.weight_column] = min(max(_weight(weight) + delta, MIN_WEIGHT), MAX_WEIGHT)
            moved += 1
        state.wrote(corpus.relations.name, self._work.readers(corpus.relations.name))
        return moved


class InMemoryAuditTrail:
    def __init__(self, work: InMemoryTenantWork) -> None:
        self._work = work

    async def append(self, event: OutboxEvent) -> None:
        self._work.state(writing=True).outbox.append(event)

    async def append_all(self, events: Sequence[OutboxEvent]) -> None:
        for event in events:
            await self.append(event)


class InMemoryInbox:
    def __init__(self, work: InMemoryTenantWork) -> None:
        self._work = work

    async def claim(self, consumer: str, request_id: uuid.UUID) -> bool:
        inbox = self._work.state(writing=True).inbox
        if (consumer, request_id) in inbox:
            return False
        inbox.add((consumer, request_id))
        return True


class InMemoryCatalogue:
    """`Catalogue`: registered corpora (as `mnemo corpus apply` stores them) and tenants."""

    def __init__(self) -> None:
        self._corpora: dict[str, CorpusEntry] = {}
        self._tenants: set[uuid.UUID] = set()
        self.tenant_lookups = 0
        """How many times `tenant_exists` was asked (the use case caches the answer)."""

    def add_tenant(self, tenant_id: uuid.UUID | None = None) -> uuid.UUID:
        tenant = tenant_id or uuid.uuid4()
        self._tenants.add(tenant)
        return tenant

    def remove_tenant(self, tenant_id: uuid.UUID) -> None:
        self._tenants.discard(tenant_id)

    def register(self, deployment: Deployment, name: str, status: str = "published") -> None:
        declared = deployment.corpus(name)
        if declared is None:
            raise KeyError(f"no corpus named {name!r} in these declarations")
        self.add(
            CorpusEntry(
                name,
                status,
                declared.kind.value,
                deployment.corpus_definition(name),
                deployment.fingerprint(name),
            )
        )

    def add(self, entry: CorpusEntry) -> None:
        """A registry row as given (any kind, any definition)."""
        self._corpora[entry.corpus_id] = entry

    def set_status(self, name: str, status: str) -> None:
        self._corpora[name] = replace(self._corpora[name], status=status)

    async def corpus(self, corpus_id: str) -> CorpusEntry | None:
        return self._corpora.get(corpus_id)

    async def tenant_exists(self, tenant: uuid.UUID) -> bool:
        self.tenant_lookups += 1
        return tenant in self._tenants


# ---------------------------------------------------------------------------------------- scope


def _in_scope(
    state: _TenantState, corpus: StoreCorpus, scope: Scope, *, edges: bool = True
) -> tuple[list[Row], list[Row]]:
    """The tenant's documents and edges of `corpus` in `scope` (the edges are the stored rows:
    a reinforcement updates them in place)."""
    compile_scope(scope, corpus)  # refuses what Postgres would refuse, with the same error
    documents = state.rows.get(corpus.documents.name, [])
    relations = state.rows.get(corpus.relations.name, []) if edges else []
    kept_documents = list(documents)
    kept_edges = list(relations)
    for text, values in ((scope.pinned, scope.pinned_params), (scope.where, scope.params)):
        if text is None or not text.strip():
            continue
        bound = bind_filter(parse_filter(text), values, text)
        kept_documents = [r for r in kept_documents if _matches(bound, r, corpus.documents)]
        if not kept_edges:
            continue
        if all(corpus.relations.column(c.column) is not None for c in bound.conditions):
            kept_edges = [r for r in kept_edges if _matches(bound, r, corpus.relations)]
        else:  # documents-only columns: an edge is in scope when both its ends are
            ids = {
                _text(r.get(corpus.id_column))
                for r in documents
                if _matches(bound, r, corpus.documents)
            }
            kept_edges = [
                r
                for r in kept_edges
                if _text(r.get(corpus.from_column)) in ids and _text(r.get(corpus.to_column)) in ids
            ]
    return kept_documents, kept_edges


def _matches(bound: Filter, row: Mapping[str, object], store: StoreDecl) -> bool:
    return any(
        all(_holds(condition, row, store) for condition in group) for group in bound.or_groups()
    )


def _holds(condition: Condition, row: Mapping[str, object], store: StoreDecl) -> bool:
    column = store.column(condition.column)
    assert column is not None  # compile_scope refused a filter naming an unknown column
    actual = row.get(condition.column)
    value = condition.value
    if isinstance(value, NullValue):
        return (actual is None) == (condition.operator is Operator.EQ)
    if actual is None:
        return False  # SQL: a comparison with NULL is not true
    expected: object
    if isinstance(value, TimeValue):
        now = datetime.now(UTC)
        if value.offset is not None and value.unit is not None:
            step = _UNIT[value.unit] * value.amount
            now = now + step if value.offset == "+" else now - step
        expected = now if isinstance(actual, datetime) else now.date()
    elif isinstance(value, StringValue):
        expected = value_from_text(value.text, column.type)
    elif isinstance(value, NumberValue):
        expected = value_from_number(value.literal, column.type)
    elif isinstance(value, BooleanValue):
        expected = value_from_boolean(value.value, column.type)
    else:  # pragma: no cover - the parser makes no other value
        raise AssertionError(f"unexpected value {value!r}")
    if condition.operator is Operator.LIKE:
        return _like(str(expected)).fullmatch(str(actual)) is not None
    return _compare(condition.operator, actual, expected)


def _compare(operator: Operator, actual: object, expected: object) -> bool:
    left, right = _comparable(actual), _comparable(expected)
    if operator is Operator.EQ:
        return left == right
    if operator is Operator.NE:
        return left != right
    try:
        if operator is Operator.LT:
            return bool(left < right)  # type: ignore[operator]  # values of one column type
        if operator is Operator.LE:
            return bool(left <= right)  # type: ignore[operator]  # values of one column type
        if operator is Operator.GT:
            return bool(left > right)  # type: ignore[operator]  # values of one column type
        if operator is Operator.GE:
            return bool(left >= right)  # type: ignore[operator]  # values of one column type
    except TypeError:
        return False
    raise AssertionError(f"unexpected operator {operator!r}")


def _comparable(value: object) -> object:
    """Text compares by its bytes (the C collation the navigator's ids use)."""
    return value.encode() if isinstance(value, str) else value


def _like(pattern: str) -> re.Pattern[str]:
    """A LIKE pattern (escape character `\\`) as a regular expression."""
    parts: list[str] = []
    escaped = False
    for char in pattern:
        if escaped:
            parts.append(re.escape(char))
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "%":
            parts.append(".*")
        elif char == "_":
            parts.append(".")
        else:
            parts.append(re.escape(char))
    return re.compile("".join(parts), re.DOTALL)


# ----------------------------------------------------------------------------------------- rows


def _stored(value: object, store: StoreDecl, name: str) -> object:
    """`value` as Postgres would hold it in `store`'s column `name` (text given for a typed
    column is converted by the column's type rules)."""
    column = store.column(name)
    if column is None:
        raise KeyError(f"store {store.name!r} has no column {name!r}")
    if isinstance(value, str) and column.type is not AxonType.TEXT:
        return value_from_text(value, column.type)
    return value


def _key(row: Mapping[str, object]) -> int:
    key = row[_KEY]
    assert isinstance(key, int)  # `InMemoryStore.write` numbers every row
    return key


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _weight(value: object) -> float:
    """A weight column's value as the graph holds it (NaN for NULL)."""
    if value is None:
        return math.nan
    if not isinstance(value, int | float):
        raise TypeError(f"an edge weight is a number, got {value!r}")
    return float(value)


def _document(corpus: StoreCorpus, row: Mapping[str, object]) -> ChangedDocument:
    title = row.get(corpus.title_column)
    body = row.get(corpus.body_column) if corpus.body_column else None
    return ChangedDocument(
        str(row.get(corpus.id_column)),
        "" if title is None else str(title),
        None if body is None else str(body),
        True,
    )


def _edge_ends(corpus: StoreCorpus, row: Mapping[str, object]) -> tuple[str, str, str]:
    return (
        str(row.get(corpus.from_column)),
        str(row.get(corpus.to_column)),
        str(row.get(corpus.etype_column)),
    )


# ------------------------------------------------------------------------ declared corpora (a, c)


@dataclass
class _DeclaredState:
    """One tenant's memory of declared graphs and its outbox, as `mnemo.declared_edge_weights`,
    `mnemo.nav_outcomes` and `mnemo.outbox` hold them."""

    weights: dict[tuple[str, str, str, str, str], float] = field(default_factory=dict)
    outcomes: list[tuple[str, str, StoredOutcome]] = field(default_factory=list)
    claims: set[tuple[str, uuid.UUID]] = field(default_factory=set)
    outbox: list[OutboxEvent] = field(default_factory=list)


class InMemoryDeclaredWork:
    """`DeclaredWork` on a copy of one tenant's state, kept only if the unit of work succeeds."""

    def __init__(self, state: _DeclaredState) -> None:
        self.state = state

    async def claim(self, consumer: str, request_id: uuid.UUID) -> bool:
        if (consumer, request_id) in self.state.claims:
            return False
        self.state.claims.add((consumer, request_id))
        return True

    async def lock(self, key: str) -> None:
        return None  # the units of work of `InMemoryDeclaredCorpora` already run one at a time

    async def overlay(self, corpus_id: str, scope: str) -> dict[tuple[str, str, str], float]:
        return {
            (source, target, etype): weight
            for (corpus, s, source, target, etype), weight in self.state.weights.items()
            if corpus == corpus_id and s == scope
        }

    async def reinforce(self, corpus_id: str, scope: str, updates: Sequence[WeightUpdate]) -> None:
        for u in updates:
            key = (corpus_id, scope, u.source, u.target, u.etype)
            current = self.state.weights.get(key, u.declared)
            self.state.weights[key] = min(max(current + u.delta, MIN_WEIGHT), MAX_WEIGHT)

    async def recent_outcomes(
        self, corpus_id: str, scope: str, horizon: int
    ) -> list[StoredOutcome]:
        mine = [o for c, s, o in self.state.outcomes if c == corpus_id and s == scope]
        return sorted(mine, key=lambda o: o.sequence)[-horizon:] if horizon > 0 else []

    async def record_outcome(
        self,
        corpus_id: str,
        scope: str,
        sequence: int,
        query: str,
        path: Sequence[str],
        traversed: Sequence[Mapping[str, object]],
        score: float,
    ) -> None:
        if any(
            c == corpus_id and s == scope and o.sequence == sequence
            for c, s, o in self.state.outcomes
        ):
            raise ValueError(f"outcome {sequence} of {corpus_id}/{scope} is already recorded")
        self.state.outcomes.append((corpus_id, scope, StoredOutcome(sequence, tuple(path), score)))

    async def append(self, event: OutboxEvent) -> None:
        self.state.outbox.append(event)


class InMemoryDeclaredCorpora:
    """`DeclaredCorpora`: documents by (corpus, version) as `mnemo apply` stores them, and each
    tenant's memory and outbox apart, one unit of work at a time."""

    def __init__(self) -> None:
        self._documents: dict[tuple[str, str], list[CorpusDocument]] = {}
        self._tenants: dict[uuid.UUID, _DeclaredState] = {}
        self._tags: dict[tuple[uuid.UUID, str, str], tuple[str, ...]] = {}
        self._lock = asyncio.Lock()

    def store(self, corpus_id: str, version: str, documents: Sequence[CorpusDocument]) -> None:
        self._documents = {k: v for k, v in self._documents.items() if k[0] != corpus_id}
        self._documents[(corpus_id, version)] = list(documents)

    def weights(self, tenant_id: uuid.UUID) -> dict[tuple[str, str, str, str, str], float]:
        state = self._tenants.get(tenant_id, _DeclaredState())
        return dict(state.weights)

    def outbox(self, tenant_id: uuid.UUID) -> list[OutboxEvent]:
        return list(self._tenants.get(tenant_id, _DeclaredState()).outbox)

    async def documents(self, corpus_id: str, version: str) -> list[CorpusDocument]:
        return sorted(self._documents.get((corpus_id, version), []), key=lambda d: d.doc_id)

    async def ranked(
        self, corpus_id: str, version: str, query: str, k: int
    ) -> list[tuple[CorpusDocument, float]] | None:
        """Ranked by `corpus_forms.rank` (not Postgres's `ts_rank_cd`; the order rule, best
        first then id, is the same)."""
        stored = await self.documents(corpus_id, version)
        if not stored:
            return None
        by_id = {d.doc_id: d for d in stored}
        texts = [RankedText(d.doc_id, d.title, d.content, 0.0, "") for d in stored]
        return [(by_id[r.id], r.similarity) for r in rank(query, texts, k)]

    def tag(self, tenant_id: uuid.UUID, corpus: str, doc_id: str, tags: Sequence[str]) -> None:
        """Give the tenant's document `doc_id` of the store corpus `corpus` its tags."""
        self._tags[(tenant_id, corpus, doc_id)] = tuple(tags)

    async def store_tags(
        self, tenant_id: uuid.UUID, corpus: StoreCorpus, scope: Scope, ids: Sequence[str]
    ) -> dict[str, tuple[str, ...]]:
        """The tags given with `tag` (the scope is the store navigator's business here)."""
        found = ((i, self._tags.get((tenant_id, corpus.name, i))) for i in ids)
        return {i: tags for i, tags in found if tags is not None}

    @asynccontextmanager
    async def tenant(self, tenant_id: uuid.UUID) -> AsyncIterator[InMemoryDeclaredWork]:
        async with self._lock:
            work = InMemoryDeclaredWork(
                copy.deepcopy(self._tenants.get(tenant_id, _DeclaredState()))
            )
            yield work
            self._tenants[tenant_id] = work.state
