"""What the navigator does, over ports: navigate, retrieve, search and page a store corpus.

Every operation: the corpus must be `published` (`CorpusNotServedError` names its status
otherwise); the scope is the caller's `where:` ANDed to the corpus's pinned scope whenever the
token carries a `client` claim (ARCHITECTURE §2); exactly one `corpus:<name>:query` audit event
goes to the outbox per navigate, retrieve, search and documents page. The token's tenant must be a
row of `mnemo.tenants` (`UnknownTenantError` otherwise, before anything is read or written), and a
query (a search goal's text included) is at most `MAX_QUERY_CHARS` characters of valid Unicode.

Navigate reads the graph through the cache, proven fresh against the revision read in the
request's own snapshot (a stale cached graph is refreshed from the rows changed since it was read,
`mnemo_store.refresh`; requests that miss together wait for one build of it), walks it with
`mnemo_mdn`, and, for an adaptive corpus, remembers the outcome, reinforces the traversed edges
in the same scope and queues the audit event in one transaction that first locks the corpus's
revision row. When that lock shows nobody wrote since the cached revision, the cache moves
forward by the same relative update instead of reloading.

Every navigation times its phases (`Timings`: the corpus check, the revision read, the refresh or
load, building the graph, EPR, the walk, the memory and audit transaction); the HTTP answer carries
them as a `Server-Timing` header and the navigate span as attributes. CPU work on a whole graph
(building it, sizing it for the cache, EPR, the walk, moving it forward after a reinforcement) runs
in a worker thread, never on the event loop that serves the other requests.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from mnemo_auth import Principal
from mnemo_axon.errors import FilterError
from mnemo_events.models import AuditRecorded, QueryAudited, new_envelope
from mnemo_events.topics import AUDIT
from mnemo_mdn import (
    DEFAULT_PARAMS,
    CorpusGraph,
    MdnError,
    Memory,
    Navigation,
    Outcome,
    apply_reinforcements,
    baseline,
    navigate,
    reinforcement_plan,
)
from mnemo_mdn.incremental import carry_over
from mnemo_mdn.memory import EdgeReinforcement
from mnemo_mdn.relevance import term_index
from mnemo_store import EdgeDelta, LoadLimits, OutboxEvent, Scope, StoreCorpus
from mnemo_store.errors import NotAStoreCorpusError, StoreError
from mnemo_store.graph_cache import (
    CachedGraph,
    CacheKey,
    GraphCache,
    graph_bytes,
    refreshed_graph_bytes,
)
from mnemo_store.outcomes import NewOutcome
from mnemo_store.refresh import GraphRows
from mnemo_store.retrieval import FoundDocument
from mnemo_store.scope import compile_scope

from mnemo_navigator.errors import (
    CorpusNotServedError,
    InvalidRequestError,
    NavigatorBusyError,
    ScopeForbiddenError,
    UnknownCorpusError,
    UnknownTenantError,
)
from mnemo_navigator.histories import MAX_OUTCOMES, ScopeHistories
from mnemo_navigator.observability import (
    compute_epr,
    observe_graph,
    traced_navigation,
    traced_retrieval,
)
from mnemo_navigator.ports import Catalogue, TenantWork, Transactions
from mnemo_navigator.reinforced import Reinforced
from mnemo_navigator.turns import KeyedTurns
from mnemo_navigator.warm_retrieval import retrieve_from_graph

PRODUCER = "mnemo.navigator"
# hit: the cached graph was current; refresh: it was brought up to date from the changed rows;
# miss: loaded in full (and cached); off: loaded in full, no cache configured.
CacheState = Literal["hit", "refresh", "miss", "off"]
Operation = Literal["navigate", "retrieve", "search", "documents"]
MAX_QUERY_CHARS = 4096
"""The longest query (or search goal text) served: longer ones answer 422, never reach Postgres."""

# --------------------------------------------------------------------------------------- requests


def documents_page_query(limit: int, after: str | None) -> str:
    """What a documents page's audit row records as its query."""
    return f"documents limit={limit}" + ("" if after is None else f" after={after}")


@dataclass(frozen=True, slots=True)
class NavigateRequest:
    query: str
    seed: str | None = None
    budget: int | None = None
    where: str | None = None
    params: Mapping[str, object] = field(default_factory=dict)
    mode: Literal["mdn", "axon"] = "mdn"
    direction: Literal["out", "both"] = "both"  # what bench/quality.py measures (bench/README.md)


@dataclass(frozen=True, slots=True)
class RetrieveRequest:
    query: str
    k: int = 5
    where: str | None = None
    params: Mapping[str, object] = field(default_factory=dict)


class Timings:
    """Wall-clock milliseconds spent in each phase of one request, in the order first entered."""

    def __init__(self) -> None:
        self.ms: dict[str, float] = {}

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.ms[name] = self.ms.get(name, 0.0) + (time.perf_counter() - started) * 1000


def server_timing(timings: Mapping[str, float]) -> str:
    """Phases as a `Server-Timing` header value: `revision;dur=0.4, refresh;dur=12.1`."""
    return ", ".join(f"{name};dur={ms:.1f}" for name, ms in timings.items())


@dataclass(frozen=True, slots=True)
class NavigateResult:
    navigation: Navigation
    revision: int
    cache: CacheState
    scope_digest: str
    remembered: bool = True
    """False when the request was already handled (a redelivered request id): the answer is
    computed again, but memory, reinforcement and audit happened once, the first time."""
    timings: Mapping[str, float] = field(default_factory=dict)
    """Milliseconds per phase (`Timings`)."""


@dataclass(frozen=True, slots=True)
class _SharedBuild:
    """A graph one request built, offered to the requests that waited for it: fresh for those
    that began before `snapshot_at` (a `time.perf_counter()` taken before its snapshot)."""

    graph: CorpusGraph
    revision: int
    snapshot_at: float


@dataclass(eq=False)
class _MemoryWrite:
    """One navigation's memory write, queued for its scope's next transaction (`_remember`);
    `done` says whether it was remembered (False: its request was handled before)."""

    key: CacheKey
    caller: Caller
    corpus: StoreCorpus
    scope: Scope
    digest: str
    query: str
    navigation: Navigation
    revision: int
    claim: Claim | None
    started: float
    done: asyncio.Future[bool] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )

    def finish(self, remembered: bool) -> None:
        if not self.done.done():
            self.done.set_result(remembered)

    def fail(self, error: Exception) -> None:
        if not self.done.done():
            self.done.set_exception(error)


@dataclass(frozen=True, slots=True)
class Claim:
    """A request to handle at most once: (`consumer`, `request_id`) goes to the inbox in the same
    transaction as the navigation's memory."""

    consumer: str
    request_id: uuid.UUID


@dataclass(frozen=True, slots=True)
class RetrieveResult:
    items: tuple[FoundDocument, ...]
    corpus: str
    source_uris: Mapping[str, str] = field(default_factory=dict)
    """Per item id, where it comes from when not the corpus's own document address (an MCP
    resource URI, a declared document's source)."""
    tags: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Per item id, its tags (a declared document's category and front-matter tags)."""
    timings: Mapping[str, float] = field(default_factory=dict)
    """Milliseconds per phase: `retrieve-memory` (a fresh cached graph answered) or
    `retrieve-store` (Postgres did), or both when the graph's texts sent it on."""


@dataclass(frozen=True, slots=True)
class DocumentsPage:
    documents: tuple[FoundDocument, ...]
    next_after: str | None
    revision: int
    source_uris: Mapping[str, str] = field(default_factory=dict)
    """Per document id, where it comes from when not the corpus's own document address (an MCP
    resource URI, a declared document's source)."""


@dataclass(frozen=True, slots=True)
class Caller:
    """Who asks: the verified principal and the trace the request belongs to."""

    principal: Principal
    trace_id: str | None = None
    traceparent: str | None = None

    @property
    def name(self) -> str:
        subject = self.principal.subject or "anonymous"
        if self.principal.client:
            client = ",".join(f"{k}={v}" for k, v in sorted(self.principal.client.items()))
            return f"{subject} (client {client})"
        return subject


def source_uri(corpus: str, doc_id: str) -> str:
    return f"mnemo://corpora/{corpus}/documents/{doc_id}"


def goal_text(goal: Mapping[str, Any]) -> str:
    """The query of a gateway goal: `utterance`, `message`, `query` or `topic`, else the whole goal
    serialised with sorted keys (CORPUS.md A)."""
    for name in ("utterance", "message", "query", "topic"):
        value = goal.get(name)
        if isinstance(value, str) and value.strip():
            return value
    return json.dumps(goal, sort_keys=True, ensure_ascii=False, default=str)


EMPTY_QUERY = (
    "query: empty; give the text to look for, or a seed document in 'from' to explore from it"
)


def checked_query(text: str, what: str = "query") -> str:
    """`text` if the navigator serves it as a query: at most `MAX_QUERY_CHARS` characters, and
    valid Unicode (a lone surrogate such as U+D800, which JSON's `\\ud800` escape can carry, has
    no UTF-8 form: neither the audit digest nor Postgres could take it)."""
    if len(text) > MAX_QUERY_CHARS:
        raise InvalidRequestError(
            f"{what}: {len(text)} characters; at most {MAX_QUERY_CHARS} are served (shorten it)"
        )
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise InvalidRequestError(
            f"{what}: holds a lone surrogate {text[error.start]!r} at character {error.start}; "
            "send valid Unicode (a surrogate escape must come as a pair)"
        ) from None
    return text


# -------------------------------------------------------------------------------------- use cases


@dataclass(frozen=True, slots=True)
class Policy:
    pinned_scopes: Mapping[str, str] = field(default_factory=dict)
    audit_query_text: bool = True
    audit_topic: str = AUDIT
    default_budget: int = 5
    limits: LoadLimits = field(default_factory=LoadLimits)
    tenant_cache_seconds: float = 60.0
    max_navigations: int = 64
    """Navigations in flight at most; one more answers `NavigatorBusyError` (503) at once."""
    history_max_outcomes: int = MAX_OUTCOMES
    """Outcomes kept over all scopes so a navigation reads only those since its scope's last
    (`histories`); 0 reads every navigation's whole."""


class Navigator:
    def __init__(
        self, transactions: Transactions, catalogue: Catalogue, cache: GraphCache, policy: Policy
    ) -> None:
        self._db = transactions
        self._catalogue = catalogue
        self._cache = cache
        self._policy = policy
        # Per corpus id, the definition last parsed and its StoreCorpus (one item per registered
        # corpus: a new definition replaces the old one). Nothing here is keyed by scope: every
        # per-scope graph lives in the cache alone, so an eviction releases it.
        self._corpora: dict[str, tuple[str, StoreCorpus]] = {}
        self._tenants_seen: dict[uuid.UUID, float] = {}
        # Per cache key, the build under way (`_graph`): what it will cache, None if it fails.
        self._building: dict[CacheKey, asyncio.Future[_SharedBuild | None]] = {}
        self._navigations = 0  # in flight
        # Per cache key (tenant, corpus, scope), the adaptive navigations remembering in turn.
        self._memory_turns = KeyedTurns()
        # Per cache key, the last reinforcement committed, to bring the cached graph forward.
        self._reinforced = Reinforced()
        # Per cache key, the memory writes waiting for the scope's next transaction, in order.
        self._queued_writes: dict[CacheKey, list[_MemoryWrite]] = {}
        self._memory_tasks: set[asyncio.Future[None]] = set()  # the transactions under way
        # Per cache key, the scope's last outcomes read, so the next reads only those since.
        self._histories = ScopeHistories(DEFAULT_PARAMS.horizon, policy.history_max_outcomes)

    @property
    def cache(self) -> GraphCache:
        return self._cache

    # -- shared steps

    async def admit(self, principal: Principal) -> None:
        """A caller with the `read` scope whose tenant exists: a token signed for a tenant that
        was never created (or was removed) reads nothing and leaves no outcome rows. A tenant
        found is believed for `Policy.tenant_cache_seconds`; one not found is asked every time."""
        principal.require("read")
        tenant = principal.tenant
        now = time.monotonic()
        seen = self._tenants_seen.get(tenant)
        if seen is not None and now - seen < self._policy.tenant_cache_seconds:
            return
        if not await self._catalogue.tenant_exists(tenant):
            self._tenants_seen.pop(tenant, None)
            raise UnknownTenantError(
                f"unknown tenant {tenant}: the token names a tenant that does not exist in this "
                "deployment; ask the operator for a token of an existing tenant "
                "(`mnemo tenant list`)"
            )
        self._tenants_seen[tenant] = now

    async def served_corpus(self, corpus_id: str) -> StoreCorpus:
        """The published store corpus `corpus_id`, or the error saying why it is not served."""
        entry = await self._catalogue.corpus(corpus_id)
        if entry is None:
            raise UnknownCorpusError(f"no corpus named {corpus_id!r} is registered")
        if entry.status != "published":
            raise CorpusNotServedError(
                f"corpus {corpus_id!r} is {entry.status}; only published corpora are served "
                f"(an operator publishes it with `mnemo corpus publish {corpus_id}`)"
            )
        version = json.dumps(entry.definition, sort_keys=True, default=str)
        cached = self._corpora.get(corpus_id)
        if cached is not None and cached[0] == version:
            return cached[1]
        try:
            corpus = StoreCorpus.from_definition(entry.definition)
        except (NotAStoreCorpusError, StoreError) as error:
            raise CorpusNotServedError(
                f"corpus {corpus_id!r} is a {entry.kind} corpus; the navigator serves store "
                f"corpora (corpus … from axonstore): {error}"
            ) from error
        self._corpora[corpus_id] = (version, corpus)
        return corpus

    def scope_for(
        self,
        principal: Principal,
        corpus: StoreCorpus,
        where: str | None,
        params: Mapping[str, object],
    ) -> tuple[Scope, str]:
        """The request's scope and its digest: a client-confined token always gets the corpus's
        pinned template, bound from its `client` claim only, ANDed to `where`."""
        scope = Scope(where=where, params=dict(params))
        if principal.client:
            template = self._policy.pinned_scopes.get(corpus.name)
            if template is None:
                raise ScopeForbiddenError(
                    f"this token is confined to an end-client (its 'client' claim), and corpus "
                    f"{corpus.name!r} has no pinned scope to confine it by; ask the operator for "
                    "one, or use a tenant-wide token"
                )
            scope = Scope(
                where=where,
                params=dict(params),
                pinned=template,
                pinned_params={"client": dict(principal.client)},
            )
        try:
            compiled = compile_scope(scope, corpus)
        except FilterError as error:
            if principal.client and _pinned_fails(scope, corpus):
                raise ScopeForbiddenError(
                    f"the pinned scope of {corpus.name!r} cannot be bound from this token's "
                    f"'client' claim: {error}"
                ) from error
            raise InvalidRequestError(f"where: {error}") from error
        return scope, compiled.digest

    # -- navigate

    @traced_navigation
    async def navigate(
        self,
        caller: Caller,
        corpus_id: str,
        request: NavigateRequest,
        *,
        claim: Claim | None = None,
        bounded: bool = True,
    ) -> NavigateResult:
        """Navigate `request` in `corpus_id`; refused at once (`NavigatorBusyError`) when
        `Policy.max_navigations` are in flight: past that, a queue only grows (each navigation
        waits for CPU the ones before it hold) until its callers time out and it serves nobody.
        Not `bounded`: a caller that takes work at its own pace (the Kafka consumer, a batch at a
        time) is never refused, and counts toward the bound of the others."""
        limit = self._policy.max_navigations
        if bounded and self._navigations >= limit:
            raise NavigatorBusyError(
                f"navigator busy: {self._navigations} navigations in flight, the most it takes "
                f"({limit}, MNEMO_NAVIGATOR_MAX_NAVIGATIONS); retry after a moment, or add "
                "replicas"
            )
        self._navigations += 1
        try:
            return await self._navigate(caller, corpus_id, request, claim)
        finally:
            self._navigations -= 1

    async def _navigate(
        self, caller: Caller, corpus_id: str, request: NavigateRequest, claim: Claim | None
    ) -> NavigateResult:
        started = time.perf_counter()
        timings = Timings()
        principal = caller.principal
        with timings.phase("corpus"):
            await self.admit(principal)
            checked_query(request.query)
            if not request.query.strip() and request.seed is None:
                raise InvalidRequestError(EMPTY_QUERY)
            corpus = await self.served_corpus(corpus_id)
            scope, digest = self.scope_for(principal, corpus, request.where, request.params)
        key: CacheKey = (principal.tenant, corpus.name, digest)
        graph, revision, cache_state, history = await self._graph(
            principal.tenant, corpus, scope, key, digest, timings, started
        )
        with timings.phase("epr"):
            await observe_graph(graph)
        memory = Memory(outcomes=history, persisted_weights=True)
        try:
            with timings.phase("walk"):
                navigation = await asyncio.to_thread(
                    navigate,
                    graph,
                    request.query,
                    request.seed,
                    request.budget or self._policy.default_budget,
                    request.mode,
                    request.direction,
                    DEFAULT_PARAMS,
                    memory,
                )
        except MdnError as error:
            raise InvalidRequestError(str(error)) from error
        write = _MemoryWrite(
            key, caller, corpus, scope, digest, request.query, navigation, revision, claim, started
        )
        with timings.phase("remember"):
            remembered = await self._remember(key, write)
        return NavigateResult(navigation, revision, cache_state, digest, remembered, timings.ms)

    async def _remember(self, key: CacheKey, write: _MemoryWrite) -> bool:
        """Remember `write` (its outcome, audit event, reinforcement; only the audit event for a
        corpus that is not adaptive); False when its request was already handled.

        One scope's memory writes take turns (before their connection: a navigation waiting on
        the scope's lock in Postgres would hold one the others need), and the writes that queued
        while one was under way go together, in their order, in the next transaction: under a
        steady stream of navigations of one scope each write costs a share of one transaction's
        round trips instead of all of them (issue 22's load: ten a second of one scope)."""
        if not write.corpus.adaptive:
            await self._write_memory([write])
            return await write.done
        self._queued_writes.setdefault(key, []).append(write)
        async with self._memory_turns.turn(key):
            writes = self._queued_writes.pop(key, None)  # every write queued meanwhile, in order
            if writes:
                # Their own task (kept until done: the loop holds tasks weakly): a caller that
                # goes away meanwhile (this one) does not take the others' writes with it.
                task = asyncio.ensure_future(self._write_together(writes))
                self._memory_tasks.add(task)
                task.add_done_callback(self._memory_tasks.discard)
                await asyncio.shield(task)
        return await asyncio.shield(write.done)

    async def _write_together(self, writes: list[_MemoryWrite]) -> None:
        """`writes` in one transaction; if that fails, each alone (one bad write fails itself)."""
        try:
            await self._write_memory(writes)
        except Exception as error:
            if len(writes) == 1:
                writes[0].fail(error)
                return
            for write in writes:
                try:
                    await self._write_memory([write])
                except Exception as alone:
                    write.fail(alone)

    async def _write_memory(self, writes: Sequence[_MemoryWrite]) -> None:
        """One transaction: each write's inbox claim, then (adaptive corpora) its outcome under
        the scope's lock, each sequence and baseline as if written one by one; the audit events;
        last the reinforcements, in order, sent together, and the commit right after them: they
        take the corpus's revision row (the store's trigger), which every writer of the corpus
        waits on until this commits (`reinforced`: the next navigation reads the revision they
        left)."""
        first = writes[0]
        corpus, digest = first.corpus, first.digest
        plans: list[list[EdgeReinforcement]] = []
        async with self._db.tenant(first.caller.principal.tenant) as tx:
            claimed = []
            for write in writes:
                claim = write.claim
                if claim is None or await tx.inbox.claim(claim.consumer, claim.request_id):
                    claimed.append(write)
            if corpus.adaptive and claimed:
                # The scope's lock, not the corpus's revision: ingest and the classifier write
                # on while this reads the recent scores and records the outcomes.
                await tx.memory.serialise(corpus.name, digest)
                window = DEFAULT_PARAMS.horizon - 1
                recent = await tx.memory.recent_scores(corpus.name, digest, window)
                scores, sequence = list(recent.scores), recent.last_sequence
                recorded = []
                for write in claimed:
                    navigation = write.navigation
                    sequence += 1
                    mean = baseline([*scores, navigation.coverage])
                    scores = [*scores, navigation.coverage][-window:] if window > 0 else []
                    plans.append(
                        reinforcement_plan(navigation.traversed, navigation.coverage, mean)
                    )
                    recorded.append(
                        NewOutcome(
                            sequence,
                            write.query,
                            navigation.path,
                            [
                                {"from": e.source, "to": e.target, "etype": e.etype}
                                for e in navigation.traversed
                            ],
                            navigation.coverage,
                        )
                    )
                await tx.memory.record_outcomes(corpus.name, digest, recorded)
            await tx.audit.append_all([self._navigation_audit(write) for write in claimed])
            deltas = [
                [EdgeDelta(p.source, p.target, p.etype, p.delta) for p in plan] for plan in plans
            ]
            if any(deltas):
                await tx.memory.reinforce_in_turn(corpus, deltas, first.scope)
        made = [(write, plan) for write, plan in zip(claimed, plans, strict=False) if plan]
        if len(made) == 1:
            self._reinforced.record(first.key, made[0][0].revision, made[0][1])
        elif made:  # the revision moved once per plan: which graph they fit is not known
            self._reinforced.forget(first.key)
        for write in writes:
            write.finish(write in claimed)

    def _navigation_audit(self, write: _MemoryWrite) -> OutboxEvent:
        navigation = write.navigation
        return self.query_audit(
            write.caller,
            write.corpus.name,
            "navigate",
            write.query,
            navigation.path,
            (time.perf_counter() - write.started) * 1000,
            navigation.top_similarity if navigation.hits else None,
            write.digest,
            write.revision,
        )

    async def _graph(
        self,
        tenant: uuid.UUID,
        corpus: StoreCorpus,
        scope: Scope,
        key: CacheKey,
        digest: str,
        timings: Timings,
        begun: float,
    ) -> tuple[CorpusGraph, int, CacheState, tuple[Outcome, ...]]:
        """The graph in `scope`, proven fresh: revision and rows from one snapshot taken after the
        request began (`begun`, a `time.perf_counter()`); plus the scope's recent outcomes for the
        procedural bias (`_history`).

        One build per key at a time: a request that misses the cache while another builds that
        key waits for it (holding no connection) and takes its graph when the build's snapshot was
        taken after this request began, as fresh as one of its own; otherwise it looks again. So
        navigations that arrive together after a write cost one refresh, not one each."""
        while True:
            snapshot_at = time.perf_counter()
            async with self._db.tenant(tenant, read_only=True) as tx:
                with timings.phase("revision"):
                    marks = await tx.graph.marks(corpus.name)
                revision = marks[0]
                cached = self._cache.get(key, revision)
                if cached is None and key not in self._building:
                    cached = await self._advanced(key, revision, timings)
                running = self._building.get(key)
                if cached is not None or running is None:
                    state: CacheState = "hit"
                    if cached is not None:
                        graph = cached.graph
                    else:
                        graph, revision, state = await self._build(
                            tx, corpus, scope, key, snapshot_at, timings
                        )
                    history = await self._history(tx, corpus, key, digest, timings, marks)
                    return graph, revision, state, history
            with timings.phase("wait"):
                await asyncio.wait([running])  # never cancels the build for its other waiters
            shared = running.result()
            if shared is not None and shared.snapshot_at >= begun:
                async with self._db.tenant(tenant, read_only=True) as tx:
                    history = await self._history(tx, corpus, key, digest, timings)
                return shared.graph, shared.revision, "hit", history

    async def _advanced(self, key: CacheKey, revision: int, timings: Timings) -> CachedGraph | None:
        """The cached graph of `key` brought to `revision` by the reinforcement committed from
        `revision - 1` when that is the only change between them (`reinforced`), else None. The
        reinforcement is applied exactly as Postgres applied it, to a new graph with new weights
        (built in a worker thread)."""
        plan = self._reinforced.take(key, revision)
        if plan is None:
            return None
        with timings.phase("advance"):
            await asyncio.to_thread(
                self._cache.advance,
                key,
                revision - 1,
                revision,
                lambda graph: apply_reinforcements(graph, plan),
            )
        return self._cache.get(key, revision)

    async def _build(
        self,
        tx: TenantWork,
        corpus: StoreCorpus,
        scope: Scope,
        key: CacheKey,
        snapshot_at: float,
        timings: Timings,
    ) -> tuple[CorpusGraph, int, CacheState]:
        """Refresh (or load) and build the graph of `key` in `tx`, caching it, while the requests
        that miss meanwhile wait for it (`_building`)."""
        running: asyncio.Future[_SharedBuild | None] = asyncio.get_running_loop().create_future()
        self._building[key] = running
        shared: _SharedBuild | None = None
        try:
            graph, revision, state = await self._built_graph(tx, corpus, scope, key, timings)
            shared = _SharedBuild(graph, revision, snapshot_at)
        finally:
            del self._building[key]
            running.set_result(shared)  # None: the build failed; a waiter then tries itself
        return graph, revision, state

    async def _built_graph(
        self, tx: TenantWork, corpus: StoreCorpus, scope: Scope, key: CacheKey, timings: Timings
    ) -> tuple[CorpusGraph, int, CacheState]:
        caching = self._cache.max_bytes > 0
        state: CacheState = "miss" if caching else "off"
        limits = self._policy.limits
        rows: GraphRows | None = None
        previous = self._cache.peek(key) if caching else None
        if previous is not None and previous.rows is not None:
            with timings.phase("refresh"):
                rows = await tx.graph.refresh(corpus, previous.rows, scope, limits)
            state = "miss" if rows is None else "refresh"
        if rows is None:
            with timings.phase("load"):
                arrays, rows = await tx.graph.load(corpus, scope, limits)
        if rows is not None:
            before = previous if state == "refresh" else None
            graph, nbytes, steps = await asyncio.to_thread(_built, rows, before, caching)
            timings.ms.update(steps)
            rows = replace(rows, change=None)  # used: the cache need not hold it
            revision = rows.revision
        else:
            with timings.phase("build"):
                graph = await asyncio.to_thread(arrays.to_graph)
            with timings.phase("size"):
                nbytes = await asyncio.to_thread(graph_bytes, graph) if caching else 0
            revision = arrays.revision
        if caching:
            self._cache.put(key, graph, revision, rows, nbytes=nbytes)
            if self._cache.release_due():  # what it evicted, back to the system
                await asyncio.to_thread(self._cache.release_memory)
        return graph, revision, state

    async def _history(
        self,
        tx: TenantWork,
        corpus: StoreCorpus,
        key: CacheKey,
        digest: str,
        timings: Timings,
        marks: tuple[int, int] | None = None,
    ) -> tuple[Outcome, ...]:
        """The scope's last outcomes in `tx`'s snapshot (whose marks are `marks`, read here when
        not given), oldest first: read from the last one its previous navigation kept on, when
        that still holds (`histories`), else whole."""
        if not corpus.adaptive:
            return ()

        async def read(since: int) -> list[Outcome]:
            stored = await tx.memory.recent_outcomes(
                corpus.name, digest, DEFAULT_PARAMS.horizon, since=since
            )
            return [Outcome(o.path, o.score, o.sequence) for o in stored]

        with timings.phase("outcomes"):
            _, reset = marks if marks is not None else await tx.graph.marks(corpus.name)
            return await self._histories.last_outcomes(key, reset, read)

    # -- retrieve and search

    @traced_retrieval
    async def retrieve(
        self,
        caller: Caller,
        corpus_id: str,
        request: RetrieveRequest,
        *,
        operation: Operation = "retrieve",
    ) -> RetrieveResult:
        started = time.perf_counter()
        principal = caller.principal
        await self.admit(principal)
        checked_query(request.query, "goal" if operation == "search" else "query")
        corpus = await self.served_corpus(corpus_id)
        scope, digest = self.scope_for(principal, corpus, request.where, request.params)
        timings = Timings()
        async with self._db.tenant(principal.tenant) as tx:
            revision = await tx.graph.revision(corpus.name)
            # A graph of this scope at this revision answers from memory (`warm_retrieval`).
            warm = self._cache.peek((principal.tenant, corpus.name, digest))
            found = None
            if warm is not None and warm.revision == revision and warm.rows is not None:
                with timings.phase("retrieve-memory"):
                    found = await asyncio.to_thread(
                        retrieve_from_graph, warm.graph, request.query, request.k
                    )
            if found is None:
                with timings.phase("retrieve-store"):
                    found = await tx.graph.retrieve(corpus, request.query, request.k, scope)
            items = found
            latency = (time.perf_counter() - started) * 1000
            await tx.audit.append(
                self.query_audit(
                    caller,
                    corpus.name,
                    operation,
                    request.query,
                    tuple(item.id for item in items),
                    latency,
                    max((item.similarity for item in items), default=None),
                    digest,
                    revision,
                )
            )
        return RetrieveResult(tuple(items), corpus.name, timings=timings.ms)

    async def search(
        self, caller: Caller, corpus_id: str, goal: Mapping[str, Any], k: int = 10
    ) -> RetrieveResult:
        """The search gateway (CORPUS.md A): the goal's text, ranked like `retrieve`; the goal
        text is bounded like any query (`checked_query`)."""
        return await self.retrieve(
            caller, corpus_id, RetrieveRequest(query=goal_text(goal), k=k), operation="search"
        )

    # -- paging

    async def documents(
        self, caller: Caller, corpus_id: str, after: str | None, limit: int
    ) -> DocumentsPage:
        """A page of the corpus in scope, in id order, audited like a query: its `query` is
        `documents limit=<n>` (and ` after=<cursor>`), its returned ids the page's."""
        started = time.perf_counter()
        principal = caller.principal
        await self.admit(principal)
        corpus = await self.served_corpus(corpus_id)
        scope, digest = self.scope_for(principal, corpus, None, {})
        async with self._db.tenant(principal.tenant) as tx:
            revision = await tx.graph.revision(corpus.name)
            rows = await tx.graph.documents_page(corpus, after, limit + 1, scope)
            more = len(rows) > limit
            rows = rows[:limit]
            described = documents_page_query(limit, after)
            await tx.audit.append(
                self.query_audit(
                    caller,
                    corpus.name,
                    "documents",
                    described,
                    tuple(row.id for row in rows),
                    (time.perf_counter() - started) * 1000,
                    None,
                    digest,
                    revision,
                )
            )
        return DocumentsPage(tuple(rows), rows[-1].id if more and rows else None, revision)

    # -- audit

    def query_audit(
        self,
        caller: Caller,
        corpus: str,
        operation: Operation,
        query: str,
        returned: Sequence[str],
        latency_ms: float,
        top_similarity: float | None,
        scope_digest: str,
        revision: int | None,
    ) -> OutboxEvent:
        """The `corpus:<name>:query` audit event of one request (of the store corpora here, and of
        the forms served beside them: `mnemo_navigator.corpus_forms`)."""
        tenant = caller.principal.tenant
        data = AuditRecorded(
            record=QueryAudited(
                action=f"corpus:{corpus}:query",
                corpus=corpus,
                operation=operation,
                query=_storable(query) if self._policy.audit_query_text else None,
                query_digest=hashlib.sha256(query.encode("utf-8")).hexdigest(),
                k_returned=len(returned),
                latency_ms=max(latency_ms, 0.0),
                top_similarity=top_similarity,
                returned_ids=tuple(returned),
                scope_digest=scope_digest,
                principal=_storable(caller.name),
                trace_id=caller.trace_id,
                revision=revision,
                client={_storable(k): _storable(v) for k, v in caller.principal.client.items()}
                or None,
            )
        )
        envelope = new_envelope(
            data, tenant=tenant, producer=PRODUCER, event_type=AUDIT, trace=caller.traceparent
        )
        headers = {"content-type": "application/json"}
        if caller.traceparent:
            headers["traceparent"] = caller.traceparent
        return OutboxEvent(
            event_id=envelope.event_id,
            topic=self._policy.audit_topic,
            key=str(tenant).encode(),
            payload=envelope.model_dump(mode="json"),
            headers=headers,
        )


def _storable(text: str) -> str:
    """Caller text as the audit log can hold it: a NUL (a search goal or a token's claim may carry
    one; Postgres text and jsonb cannot) becomes U+FFFD. The query digest is of the text as sent."""
    return text.replace("\x00", "\ufffd")


def _built(
    rows: GraphRows, previous: CachedGraph | None, sized: bool
) -> tuple[CorpusGraph, int, dict[str, float]]:
    """The graph of `rows`, taking over what `previous`'s graph computed when `rows` were merged
    from its rows (`mnemo_mdn.incremental.carry_over`: the term index, EPR as a warm start), and
    its `graph_bytes` (0 unless `sized`): CPU work for a worker thread. Also the milliseconds of
    each of the three steps (build, carry, size).

    A graph built whole (not refreshed) computes its EPR in a second thread meanwhile: the sizing,
    or without it the term index, is tokenising under the GIL for seconds at a million documents
    while EPR's products run outside it, so the first navigation waits for the longer of the two
    instead of their sum (the `size` step then includes EPR; the `epr` phase finds it done)."""
    started = time.perf_counter()
    graph = rows.to_graph()
    built = time.perf_counter()
    if previous is not None and rows.change is not None:
        carry_over(previous.graph, graph, rows.change)
    carried = time.perf_counter()
    nbytes = 0
    if previous is not None and rows.change is not None:
        nbytes = refreshed_graph_bytes(previous, graph, rows.change) if sized else 0
    else:
        with ThreadPoolExecutor(1, thread_name_prefix="mnemo-first-epr") as side:
            computed = side.submit(compute_epr, graph)
            nbytes = graph_bytes(graph) if sized else 0
            if not sized:
                term_index(graph)
            computed.result()
    sized_at = time.perf_counter()
    steps = {"build": built - started, "carry": carried - built, "size": sized_at - carried}
    return graph, nbytes, {name: seconds * 1000 for name, seconds in steps.items()}


def _pinned_fails(scope: Scope, corpus: StoreCorpus) -> bool:
    try:
        compile_scope(Scope(where=scope.pinned, params=scope.pinned_params), corpus)
    except FilterError:
        return True
    return False
