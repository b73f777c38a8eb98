"""The ports the navigator's use cases drive, one per aggregate they touch.

- `GraphReads`: a tenant's corpus rows as the navigator reads them (revision, the graph in a
  scope, the graph brought up to date, full-text matches, pages of documents);
- `NavigationMemory`: the adaptive memory (the revision lock, outcomes, edge reinforcement);
- `AuditTrail`: the query audit events queued for publishing (the outbox);
- `Inbox`: requests handled at most once;
- `Catalogue`: the registry (corpus lookup) and the tenants that exist.

The first four live in one tenant unit of work (`TenantWork`, opened by `Transactions.tenant`):
what a navigation remembers, reinforces and audits commits together or not at all. The Postgres
adapters are in `mnemo_navigator.adapters`, the in-memory ones in `mnemo_navigator.fakes`; one
contract suite (tests/integration/navigator/test_ports_contract.py) runs over both.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from mnemo_store import EdgeDelta, GraphArrays, LoadLimits, OutboxEvent, Scope, StoreCorpus
from mnemo_store.outcomes import NewOutcome, RecentScores, StoredOutcome
from mnemo_store.refresh import GraphRows
from mnemo_store.retrieval import FoundDocument


class GraphReads(Protocol):
    """A tenant's corpus rows. In a read-only unit of work every read sees one snapshot, so a
    graph and the revision read beside it agree."""

    async def revision(self, corpus_id: str) -> int:
        """The corpus's revision (0 before its first write); it moves with every write to its
        rows, so a graph cached at revision r is fresh exactly while this returns r."""
        ...

    async def marks(self, corpus_id: str) -> tuple[int, int]:
        """The corpus's revision and the revision of its last reset (a delete, or a row whose
        identity changed), read in one; (0, 0) before its first write. Forgetting a document
        deletes its row, so an outcome is never taken away without the reset moving."""
        ...

    async def load(
        self, corpus: StoreCorpus, scope: Scope, limits: LoadLimits
    ) -> tuple[GraphArrays, GraphRows | None]:
        """The documents and edges in `scope`, and the same as rows a later `refresh` can bring
        up to date (None when the corpus cannot be refreshed incrementally)."""
        ...

    async def refresh(
        self, corpus: StoreCorpus, rows: GraphRows, scope: Scope, limits: LoadLimits
    ) -> GraphRows | None:
        """`rows` brought up to this unit of work's state (`rows` themselves when nothing
        changed); None when that cannot be done (a reset since, a limit): load in full."""
        ...

    async def retrieve(
        self, corpus: StoreCorpus, query: str, k: int, scope: Scope
    ) -> list[FoundDocument]:
        """At most `k` documents in `scope` matching `query`'s terms, best first."""
        ...

    async def documents_page(
        self, corpus: StoreCorpus, after: str | None, limit: int, scope: Scope
    ) -> list[FoundDocument]:
        """Up to `limit` documents in `scope` in id order (text, byte order), after id `after`."""
        ...


class NavigationMemory(Protocol):
    """What an adaptive corpus remembers of its navigations."""

    async def serialise(self, corpus_id: str, scope_digest: str) -> None:
        """Serialise the scope's memory writers until the unit of work ends (the next sequence
        is then this one's to take). No writer of the corpus's rows waits on it."""
        ...

    async def recent_outcomes(
        self, corpus_id: str, scope_digest: str, horizon: int, *, since: int = 0
    ) -> list[StoredOutcome]:
        """The last `horizon` outcomes of (tenant, corpus, scope) from sequence `since` on, oldest
        first."""
        ...

    async def recent_scores(self, corpus_id: str, scope_digest: str, horizon: int) -> RecentScores:
        """The scores of the last `horizon` outcomes of (tenant, corpus, scope), oldest first,
        and the last sequence taken: what a memory write needs, holding the scope."""
        ...

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
        """Remember one navigation (holding the scope, see `serialise`)."""
        ...

    async def record_outcomes(
        self, corpus_id: str, scope_digest: str, recorded: Sequence[NewOutcome]
    ) -> None:
        """Remember navigations, in one round trip (holding the scope)."""
        ...

    async def reinforce(
        self, corpus: StoreCorpus, deltas: Sequence[EdgeDelta], scope: Scope
    ) -> int:
        """Move each edge in `scope` matching a delta by the deltas' sum, clamped to
        [0.001, 1.0], in one atomic step; the number of edge rows moved. A write: the corpus's
        revision moves by one unless the batch is empty or all zero."""
        ...

    async def reinforce_in_turn(
        self, corpus: StoreCorpus, plans: Sequence[Sequence[EdgeDelta]], scope: Scope
    ) -> None:
        """`reinforce` each plan in its turn (each clamps what the ones before it left), in one
        round trip: the revision moves by one per plan that is neither empty nor all zero."""
        ...


class AuditTrail(Protocol):
    """The query audit events: queued in the unit of work, published only if it commits."""

    async def append(self, event: OutboxEvent) -> None: ...

    async def append_all(self, events: Sequence[OutboxEvent]) -> None:
        """`append` each, in one round trip."""
        ...


class Inbox(Protocol):
    """Requests handled at most once per consumer."""

    async def claim(self, consumer: str, request_id: uuid.UUID) -> bool:
        """True the first time (`consumer`, `request_id`) is claimed in a committed unit of work;
        False when it already was (the caller skips the work)."""
        ...


class TenantWork(Protocol):
    """One tenant's unit of work: every port it holds reads and writes that tenant's rows only,
    and its writes commit together when the block ends without an error."""

    @property
    def graph(self) -> GraphReads: ...
    @property
    def memory(self) -> NavigationMemory: ...
    @property
    def audit(self) -> AuditTrail: ...
    @property
    def inbox(self) -> Inbox: ...


class Transactions(Protocol):
    def tenant(
        self, tenant_id: uuid.UUID, *, read_only: bool = False
    ) -> AbstractAsyncContextManager[TenantWork]:
        """A unit of work for `tenant_id`; `read_only=True` reads one snapshot throughout."""
        ...


@dataclass(frozen=True, slots=True)
class CorpusEntry:
    """A registry row as the navigator needs it."""

    corpus_id: str
    status: str
    kind: str
    definition: Mapping[str, Any]
    version: str = ""
    """The registry's fingerprint of the definition (a declared corpus's documents are stored
    with it)."""
    collection: str = ""
    """The gateway collection; empty means the corpus id."""


class Catalogue(Protocol):
    """The registry's corpora and the deployment's tenants."""

    async def corpus(self, corpus_id: str) -> CorpusEntry | None: ...
    async def tenant_exists(self, tenant: uuid.UUID) -> bool: ...
