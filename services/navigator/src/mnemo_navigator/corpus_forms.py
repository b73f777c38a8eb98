"""Every corpus form served (CORPUS.md, the `corpus` seed): the navigator's requests by form.

`FormsNavigator` is what the HTTP API calls. It reads the corpus's registry row and sends the
request to the form that serves it:

- (d) `store_graph`, the living graph: the store navigator (`mnemo_navigator.use_cases`), as before;
- (a) `inline`, a flat collection: `retrieve` and the search gateway rank its stored documents
  (`mnemo_store.corpus_documents`, written by `mnemo apply` with the corpus version) by Postgres
  full text, as a store corpus ranks the same texts; `navigate` is refused, it has no relations;
- (c) `graph`, a declared graph: its stored documents and declared relations navigated like (d); an
  adaptive one keeps its memory per tenant and scope in Postgres as an overlay on the declared
  weights (`mnemo.declared_edge_weights`, under row-level security), so one tenant's learning never
  changes another's graph; `retrieve` and the gateway rank its documents like (a);
- (b) `mcp`, a collection on a foreign MCP server: `mnemo_navigator.mcp_corpora`, ranked in
  Python by `rank` (its texts are not in Postgres).

Every form checks the caller and the corpus's status the same way, emits the one
`corpus:<name>:query` audit row per request (query, k_returned, latency, top_similarity), is paged
by `documents` (in id order, each page audited), and the gateway honours `collection` (empty means
the corpus id; another name is a 404 naming both). The gateway's `tags` of a store corpus come from
the tag columns its documents store declares (`mnemo_store.document_tags`), read in the caller's
tenant and scope.
The documents of a declared corpus are shared by every tenant that may read it; the scope of a
declared corpus is the caller's end-client (the token's `client` claim), which keys its memory:
a declared corpus has no columns, so a `where:` filter is refused.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol

import asyncpg
from mnemo_mdn import (
    DEFAULT_PARAMS,
    CorpusGraph,
    Document,
    Edge,
    MdnError,
    Memory,
    Outcome,
    baseline,
    navigate,
    reinforcement_plan,
)
from mnemo_mdn.tokenization import token_list
from mnemo_store import OutboxEvent, Scope, StoreCorpus
from mnemo_store import outbox as outbox_sql
from mnemo_store import outcomes as outcome_sql
from mnemo_store.corpus_documents import (
    CorpusDocument,
    WeightUpdate,
    edge_overlay,
    lock_scope_memory,
    rank_corpus_documents,
    read_corpus_documents,
    reinforce_declared,
)
from mnemo_store.document_tags import document_tags, tag_columns
from mnemo_store.outcomes import StoredOutcome
from mnemo_store.retrieval import FoundDocument
from mnemo_store.row_values import check_payload

from mnemo_navigator.errors import (
    CorpusNotServedError,
    InvalidRequestError,
    NavigatorError,
)
from mnemo_navigator.ports import Catalogue, CorpusEntry
from mnemo_navigator.use_cases import (
    EMPTY_QUERY,
    Caller,
    Claim,
    DocumentsPage,
    NavigateRequest,
    NavigateResult,
    Navigator,
    RetrieveRequest,
    RetrieveResult,
    checked_query,
    documents_page_query,
    goal_text,
    source_uri,
)

Lookup = Literal["retrieve", "search"]
STORE_KIND = "store_graph"
DECLARED_KINDS = ("inline", "graph")
_SET_TENANT = "SELECT set_config('mnemo.tenant', $1, true)"
_CLAIM = (
    "INSERT INTO mnemo.inbox (axon_tenant, consumer, event_id) VALUES ($1, $2, $3)"
    " ON CONFLICT DO NOTHING RETURNING true"
)


class NoRelationsError(CorpusNotServedError):
    """`navigate` on a corpus without relations (an inline or MCP-bound collection)."""

    code = "NO_RELATIONS"


class UnknownCollectionError(NavigatorError):
    """A gateway request for a collection the corpus does not serve."""

    status = 404
    code = "NOT_FOUND"


# ------------------------------------------------------------------------------------------ ports


class DeclaredWork(Protocol):
    """One tenant's transaction over a declared graph's memory, the inbox and the audit outbox."""

    async def claim(self, consumer: str, request_id: uuid.UUID) -> bool:
        """True the first time (`consumer`, `request_id`) is claimed in a committed unit of work."""
        ...

    async def lock(self, key: str) -> None:
        """Serialise the memory writers of one (tenant, corpus, scope) until the work ends."""
        ...

    async def overlay(self, corpus_id: str, scope: str) -> dict[tuple[str, str, str], float]: ...

    async def reinforce(
        self, corpus_id: str, scope: str, updates: Sequence[WeightUpdate]
    ) -> None: ...

    async def recent_outcomes(
        self, corpus_id: str, scope: str, horizon: int
    ) -> list[StoredOutcome]: ...

    async def record_outcome(
        self,
        corpus_id: str,
        scope: str,
        sequence: int,
        query: str,
        path: Sequence[str],
        traversed: Sequence[Mapping[str, object]],
        score: float,
    ) -> None: ...

    async def append(self, event: OutboxEvent) -> None: ...


class DeclaredCorpora(Protocol):
    """Declared corpora's stored documents, and a tenant's unit of work over their memory."""

    async def documents(self, corpus_id: str, version: str) -> list[CorpusDocument]: ...

    async def ranked(
        self, corpus_id: str, version: str, query: str, k: int
    ) -> list[tuple[CorpusDocument, float]] | None:
        """The `k` documents of the corpus at `version` ranked highest for `query`, with their
        similarity, as a store corpus ranks the same texts; None when none is stored."""
        ...

    def tenant(self, tenant_id: uuid.UUID) -> AbstractAsyncContextManager[DeclaredWork]: ...

    async def store_tags(
        self, tenant_id: uuid.UUID, corpus: StoreCorpus, scope: Scope, ids: Sequence[str]
    ) -> dict[str, tuple[str, ...]]:
        """The gateway tags of a store corpus's documents `ids`, read in the tenant and `scope`
        from the columns its documents store declares (`mnemo_store.document_tags`)."""
        ...


class OtherForm(Protocol):
    """A corpus form served outside Postgres (the MCP-bound one)."""

    async def retrieve(
        self, entry: CorpusEntry, query: str, k: int
    ) -> tuple[list[RankedText], str]: ...

    async def documents(self, entry: CorpusEntry) -> list[RankedText]:
        """Every document of the corpus (its listing), in no particular order."""
        ...


# -------------------------------------------------------------------------------------- adapters


class PostgresDeclaredWork:
    """`DeclaredWork` on one connection inside one tenant transaction."""

    def __init__(self, connection: asyncpg.Connection, tenant: uuid.UUID) -> None:
        self._connection = connection
        self._tenant = tenant

    async def claim(self, consumer: str, request_id: uuid.UUID) -> bool:
        claimed = await self._connection.fetchval(_CLAIM, self._tenant, consumer, request_id)
        return bool(claimed)

    async def lock(self, key: str) -> None:
        await lock_scope_memory(self._connection, key)

    async def overlay(self, corpus_id: str, scope: str) -> dict[tuple[str, str, str], float]:
        return await edge_overlay(self._connection, corpus_id, scope)

    async def reinforce(self, corpus_id: str, scope: str, updates: Sequence[WeightUpdate]) -> None:
        await reinforce_declared(self._connection, corpus_id, scope, updates)

    async def recent_outcomes(
        self, corpus_id: str, scope: str, horizon: int
    ) -> list[StoredOutcome]:
        rows = await self._connection.fetch(outcome_sql.RECENT_SQL, corpus_id, scope, horizon, 0)
        return [
            StoredOutcome(int(r["seq"]), tuple(r["path"]), float(r["score"]))
            for r in reversed(rows)
        ]

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
        await self._connection.execute(
            outcome_sql.INSERT_SQL,
            self._tenant,
            corpus_id,
            scope,
            sequence,
            query,
            list(path),
            json.dumps(list(traversed), sort_keys=True),
            score,
        )

    async def append(self, event: OutboxEvent) -> None:
        check_payload(event.payload, f"outbox event {event.event_id} ({event.topic}) payload")
        await self._connection.execute(
            outbox_sql.INSERT_SQL, *outbox_sql.insert_args(self._tenant, event)
        )


class PostgresDeclaredCorpora:
    """`DeclaredCorpora` over the navigator's pool."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool

    async def documents(self, corpus_id: str, version: str) -> list[CorpusDocument]:
        return await read_corpus_documents(self._pool, corpus_id, version)

    async def ranked(
        self, corpus_id: str, version: str, query: str, k: int
    ) -> list[tuple[CorpusDocument, float]] | None:
        return await rank_corpus_documents(self._pool, corpus_id, version, query, k)

    @asynccontextmanager
    async def tenant(self, tenant_id: uuid.UUID) -> AsyncIterator[PostgresDeclaredWork]:
        async with self._pool.acquire() as connection, connection.transaction():
            await connection.execute(_SET_TENANT, str(tenant_id))
            yield PostgresDeclaredWork(connection, tenant_id)

    async def store_tags(
        self, tenant_id: uuid.UUID, corpus: StoreCorpus, scope: Scope, ids: Sequence[str]
    ) -> dict[str, tuple[str, ...]]:
        async with self._pool.acquire() as connection, connection.transaction(readonly=True):
            await connection.execute(_SET_TENANT, str(tenant_id))
            return await document_tags(connection, corpus, ids, scope)


# --------------------------------------------------------------------------------------- ranking


@dataclass(frozen=True, slots=True)
class RankedText:
    """A document of a flat collection as retrieve answers it."""

    id: str
    title: str
    content: str
    similarity: float
    source_uri: str
    tags: tuple[str, ...] = ()


def rank(query: str, documents: Sequence[RankedText], k: int) -> list[RankedText]:
    """The `k` documents best matching `query`'s tokens (MDN.md §3), embeddings-free.

    A document's score is `Σ idf(t)·tf/(tf + 1.2)` over the query's distinct tokens it holds (its
    title counted twice), `idf(t) = ln(1 + N/df)`; the similarity is `score / (score + 1)`, in
    [0, 1). Documents matching no token are left out; ties go by id.
    """
    terms = list(dict.fromkeys(token_list(query)))
    if not terms or not documents:
        return []
    counts = [Counter(token_list(f"{d.title} {d.title} {d.content}")) for d in documents]
    df = {t: sum(1 for c in counts if t in c) for t in terms}
    n = len(documents)
    scored: list[tuple[float, RankedText]] = []
    for document, count in zip(documents, counts, strict=True):
        score = sum(
            math.log(1 + n / df[t]) * count[t] / (count[t] + 1.2) for t in terms if count[t]
        )
        if score > 0:
            similarity = score / (score + 1)
            scored.append((similarity, _with(document, similarity)))
    scored.sort(key=lambda pair: (-pair[0], pair[1].id))
    return [document for _, document in scored[:k]]


def _with(document: RankedText, similarity: float) -> RankedText:
    return RankedText(
        document.id,
        document.title,
        document.content,
        similarity,
        document.source_uri,
        document.tags,
    )


def _ranked(corpus: str, documents: Sequence[CorpusDocument]) -> list[RankedText]:
    return [
        RankedText(
            d.doc_id,
            d.title,
            d.content,
            0.0,
            d.source_uri or source_uri(corpus, d.doc_id),
            d.tags or ((d.category,) if d.category else ()),
        )
        for d in documents
    ]


def retrieve_result(corpus: str, ranked: Sequence[RankedText]) -> RetrieveResult:
    """Ranked documents as the HTTP API's retrieve result (content, source URI and tags kept)."""
    return RetrieveResult(
        items=tuple(FoundDocument(r.id, r.title, r.content, r.similarity) for r in ranked),
        corpus=corpus,
        source_uris={r.id: r.source_uri for r in ranked},
        tags={r.id: r.tags for r in ranked},
    )


def client_scope(caller: Caller) -> str:
    """The scope of a declared corpus: the caller's end-client (`client` claim), or the tenant."""
    client = caller.principal.client
    if not client:
        return "tenant"
    canonical = json.dumps(dict(client), sort_keys=True, ensure_ascii=False)
    return "client:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def declared_graph(entry: CorpusEntry, documents: Sequence[CorpusDocument]) -> CorpusGraph:
    """The graph of a form (c) corpus: its stored documents and its declared relations."""
    relations = entry.definition.get("corpus", {}).get("relations", [])
    return CorpusGraph.build(
        [Document(d.doc_id, d.title, d.content) for d in documents],
        [
            Edge(str(r["from"]), str(r["to"]), str(r["etype"]), float(r["weight"]))
            for r in relations
        ],
    )


# ------------------------------------------------------------------------------------- use cases


class FormsNavigator:
    """The navigator of every corpus form; store corpora go to `Navigator` unchanged."""

    def __init__(
        self,
        navigator: Navigator,
        catalogue: Catalogue,
        declared: DeclaredCorpora,
        mcp: OtherForm | None = None,
    ) -> None:
        self._navigator = navigator
        self._catalogue = catalogue
        self._declared = declared
        self._mcp = mcp

    @property
    def store_navigator(self) -> Navigator:
        return self._navigator

    async def _other_form(self, caller: Caller, corpus_id: str) -> CorpusEntry | None:
        """The registry row of a corpus not of form (d), admitted and published; None for a store
        corpus or an unknown one (the store navigator answers those as before)."""
        entry = await self._catalogue.corpus(corpus_id)
        if entry is None or entry.kind == STORE_KIND:
            return None
        await self._navigator.admit(caller.principal)
        if entry.status != "published":
            raise CorpusNotServedError(
                f"corpus {corpus_id!r} is {entry.status}; only published corpora are served "
                f"(an operator publishes it with `mnemo corpus publish {corpus_id}`)"
            )
        return entry

    # -- navigate

    async def navigate(
        self,
        caller: Caller,
        corpus_id: str,
        request: NavigateRequest,
        *,
        claim: Claim | None = None,
        bounded: bool = True,
    ) -> NavigateResult:
        entry = await self._other_form(caller, corpus_id)
        if entry is None:
            return await self._navigator.navigate(
                caller, corpus_id, request, claim=claim, bounded=bounded
            )
        checked_query(request.query)
        if not request.query.strip() and request.seed is None:
            raise InvalidRequestError(EMPTY_QUERY)
        if entry.kind != "graph":
            form = "an inline" if entry.kind == "inline" else f"a {entry.kind}"
            raise NoRelationsError(
                f"corpus {corpus_id!r} is {form} corpus: it has no relations, so there is no "
                "graph to navigate; ask it with retrieve or the search gateway"
            )
        self._no_filter(corpus_id, request.where, request.params)
        return await self._navigate_declared(caller, entry, request, claim)

    async def _stored(self, entry: CorpusEntry) -> list[CorpusDocument]:
        """The documents `mnemo apply` stored for the corpus's current version."""
        documents = await self._declared.documents(entry.corpus_id, entry.version)
        if not documents:
            raise _not_stored(entry)
        return documents

    async def _navigate_declared(
        self,
        caller: Caller,
        entry: CorpusEntry,
        request: NavigateRequest,
        claim: Claim | None = None,
    ) -> NavigateResult:
        """Walk the declared graph with the scope's memory; remember, reinforce and audit it once
        per request id (`claim`: a redelivered Kafka request is answered again, remembered once)."""
        started = time.perf_counter()
        documents = await self._stored(entry)
        graph = declared_graph(entry, documents)
        adaptive = bool(entry.definition.get("corpus", {}).get("adaptive"))
        scope = client_scope(caller)
        tenant = caller.principal.tenant
        name = entry.corpus_id
        async with self._declared.tenant(tenant) as work:
            fresh = claim is None or await work.claim(claim.consumer, claim.request_id)
            history: list[StoredOutcome] = []
            if adaptive:
                if fresh:
                    await work.lock(f"{tenant}|{name}|{scope}")
                overlay = await work.overlay(name, scope)
                if overlay:
                    graph = graph.with_edge_weights(
                        [overlay.get((e.source, e.target, e.etype), e.weight) for e in graph.edges]
                    )
                history = await work.recent_outcomes(name, scope, DEFAULT_PARAMS.horizon)
            memory = Memory(
                outcomes=tuple(Outcome(o.path, o.score, o.sequence) for o in history),
                persisted_weights=True,
            )
            try:
                navigation = await asyncio.to_thread(
                    navigate,
                    graph,
                    request.query,
                    request.seed,
                    request.budget or 5,
                    request.mode,
                    request.direction,
                    DEFAULT_PARAMS,
                    memory,
                )
            except MdnError as error:
                raise InvalidRequestError(str(error)) from error
            if adaptive and fresh:
                recent = history[-(DEFAULT_PARAMS.horizon - 1) :]
                mean = baseline([o.score for o in recent] + [navigation.coverage])
                plan = reinforcement_plan(navigation.traversed, navigation.coverage, mean)
                await work.record_outcome(
                    name,
                    scope,
                    (history[-1].sequence if history else 0) + 1,
                    request.query,
                    navigation.path,
                    [
                        {"from": e.source, "to": e.target, "etype": e.etype}
                        for e in navigation.traversed
                    ],
                    navigation.coverage,
                )
                declared = _declared_weights(entry)
                await work.reinforce(
                    name,
                    scope,
                    [
                        WeightUpdate(
                            p.source,
                            p.target,
                            p.etype,
                            declared.get((p.source, p.target, p.etype), 0.5),
                            p.delta,
                        )
                        for p in plan
                    ],
                )
            if fresh:
                await work.append(
                    self._navigator.query_audit(
                        caller,
                        name,
                        "navigate",
                        request.query,
                        navigation.path,
                        (time.perf_counter() - started) * 1000,
                        navigation.top_similarity if navigation.hits else None,
                        scope,
                        None,
                    )
                )

        return NavigateResult(navigation, 0, "off", scope, fresh)

    # -- retrieve and search

    async def retrieve(
        self,
        caller: Caller,
        corpus_id: str,
        request: RetrieveRequest,
        *,
        operation: Lookup = "retrieve",
    ) -> RetrieveResult:
        entry = await self._other_form(caller, corpus_id)
        if entry is None:
            return await self._navigator.retrieve(caller, corpus_id, request, operation=operation)
        return await self._retrieve_other(caller, entry, request, operation)

    async def search(
        self,
        caller: Caller,
        corpus_id: str,
        goal: Mapping[str, Any],
        k: int = 10,
        collection: str = "",
    ) -> RetrieveResult:
        """The search gateway (CORPUS.md A) for every form: `collection` must be the corpus's
        (empty means the corpus id)."""
        entry = await self._catalogue.corpus(corpus_id)
        if entry is not None and collection:
            served = entry.collection or entry.corpus_id
            if collection != served:
                await self._navigator.admit(caller.principal)
                raise UnknownCollectionError(
                    f"corpus {corpus_id!r} serves the collection {served!r}, not {collection!r} "
                    "(send its name, or leave collection empty for the corpus id)"
                )
        result = await self.retrieve(
            caller, corpus_id, RetrieveRequest(query=goal_text(goal), k=k), operation="search"
        )
        if entry is not None and entry.kind == STORE_KIND and result.items:
            result = await self._with_store_tags(caller, corpus_id, result)
        return result

    async def _with_store_tags(
        self, caller: Caller, corpus_id: str, result: RetrieveResult
    ) -> RetrieveResult:
        """`result` with its documents' tags, when the corpus's documents store declares a tag
        column (`mnemo_store.document_tags`): read in the caller's tenant and scope, so a tag is
        only ever the caller's own document's."""
        corpus = await self._navigator.served_corpus(corpus_id)
        if not tag_columns(corpus):
            return result
        scope, _ = self._navigator.scope_for(caller.principal, corpus, None, {})
        tags = await self._declared.store_tags(
            caller.principal.tenant, corpus, scope, [item.id for item in result.items]
        )
        return replace(result, tags=tags)

    async def _retrieve_other(
        self, caller: Caller, entry: CorpusEntry, request: RetrieveRequest, operation: Lookup
    ) -> RetrieveResult:
        started = time.perf_counter()
        checked_query(request.query, "goal" if operation == "search" else "query")
        self._no_filter(entry.corpus_id, request.where, request.params)
        if entry.kind in DECLARED_KINDS:
            scored = await self._declared.ranked(
                entry.corpus_id, entry.version, request.query, request.k
            )
            if scored is None:
                raise _not_stored(entry)
            listed = _ranked(entry.corpus_id, [document for document, _ in scored])
            ranked = [
                _with(r, similarity) for r, (_, similarity) in zip(listed, scored, strict=True)
            ]
        elif entry.kind == "mcp" and self._mcp is not None:
            ranked, _ = await self._mcp.retrieve(entry, request.query, request.k)
        else:
            raise _not_served(entry)
        async with self._declared.tenant(caller.principal.tenant) as work:
            await work.append(
                self._navigator.query_audit(
                    caller,
                    entry.corpus_id,
                    operation,
                    request.query,
                    tuple(r.id for r in ranked),
                    (time.perf_counter() - started) * 1000,
                    max((r.similarity for r in ranked), default=None),
                    client_scope(caller),
                    None,
                )
            )
        return retrieve_result(entry.corpus_id, ranked)

    # -- paging

    async def documents(
        self, caller: Caller, corpus_id: str, after: str | None, limit: int
    ) -> DocumentsPage:
        """A page of any form's documents in id order (code points, as Postgres's "C" collation
        orders a store corpus's), audited like form (d)'s page. A declared or MCP-bound corpus
        changes only with its declaration, so its pages carry revision 0."""
        entry = await self._other_form(caller, corpus_id)
        if entry is None:
            return await self._navigator.documents(caller, corpus_id, after, limit)
        started = time.perf_counter()
        if entry.kind in DECLARED_KINDS:
            listed = _ranked(entry.corpus_id, await self._stored(entry))
        elif entry.kind == "mcp" and self._mcp is not None:
            listed = await self._mcp.documents(entry)
        else:
            raise _not_served(entry)
        following = sorted((d for d in listed if after is None or d.id > after), key=lambda d: d.id)
        page = following[:limit]
        described = documents_page_query(limit, after)
        async with self._declared.tenant(caller.principal.tenant) as work:
            await work.append(
                self._navigator.query_audit(
                    caller,
                    entry.corpus_id,
                    "documents",
                    described,
                    tuple(d.id for d in page),
                    (time.perf_counter() - started) * 1000,
                    None,
                    client_scope(caller),
                    None,
                )
            )
        return DocumentsPage(
            tuple(FoundDocument(d.id, d.title, d.content) for d in page),
            page[-1].id if len(following) > limit and page else None,
            0,
            {d.id: d.source_uri for d in page},
        )

    @staticmethod
    def _no_filter(corpus_id: str, where: str | None, params: Mapping[str, object]) -> None:
        if where or params:
            raise InvalidRequestError(
                f"where: corpus {corpus_id!r} is a declared corpus with no columns to filter; "
                "send the request without where and params"
            )


def _not_stored(entry: CorpusEntry) -> CorpusNotServedError:
    return CorpusNotServedError(
        f"corpus {entry.corpus_id!r} has no documents stored for its version "
        f"{entry.version}: apply its declarations again with `mnemo apply --documents DIR`"
    )


def _not_served(entry: CorpusEntry) -> CorpusNotServedError:
    return CorpusNotServedError(
        f"corpus {entry.corpus_id!r} is a {entry.kind} corpus, which this navigator does not serve"
    )


def _declared_weights(entry: CorpusEntry) -> dict[tuple[str, str, str], float]:
    relations = entry.definition.get("corpus", {}).get("relations", [])
    return {(str(r["from"]), str(r["to"]), str(r["etype"])): float(r["weight"]) for r in relations}
