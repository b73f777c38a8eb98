"""The ports the ingest use cases own, one per aggregate they touch, and the values they carry.

`Ingest` writes a batch of one tenant in one unit of work (`IngestStore.tenant`): the `Inbox`
(which events were processed, and with which payload), the `Rows` of declared stores (with the
corpus revisions and the documents an edge needs), the `PendingEdges` that wait for an endpoint,
and the `Outbox` of events to publish. Outside the unit of work it reads the `Directory` (tenants
and declared stores) and hands edges that can never be applied to `DeadLetters`.

The Postgres adapters are in `mnemo_ingest.adapters`, the in-memory ones in `mnemo_ingest.fakes`;
one contract suite (`tests/integration/ingest/test_ports_contract.py`) runs over both.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Protocol

from mnemo_axon.ir import StoreDecl
from mnemo_store import OutboxEvent, StoreCorpus
from mnemo_store.ingest_writes import PendingEdge

Role = Literal["documents", "relations"]


@dataclass(frozen=True, slots=True)
class StoreUse:
    """A store and the corpora that read it, each with the role the store plays there."""

    store: StoreDecl
    corpora: tuple[tuple[StoreCorpus, Role], ...] = ()

    def role(self, role: Role) -> StoreCorpus | None:
        return next((c for c, r in self.corpora if r == role), None)


def store_uses(corpora: Iterable[StoreCorpus]) -> dict[str, StoreUse]:
    """Store name → its declaration and the corpora reading it, from the registered corpora."""
    uses: dict[str, list[tuple[StoreCorpus, Role]]] = {}
    decls: dict[str, StoreDecl] = {}
    for corpus in corpora:
        roles: tuple[tuple[StoreDecl, Role], ...] = (
            (corpus.documents, "documents"),
            (corpus.relations, "relations"),
        )
        for store, role in roles:
            decls[store.name] = store
            uses.setdefault(store.name, []).append((corpus, role))
    return {name: StoreUse(decls[name], tuple(corpora)) for name, corpora in uses.items()}


class Directory(Protocol):
    """What ingest knows of tenants and declared stores (the registry, cached). A miss is never
    stale: a tenant created or a store applied before the call is found."""

    async def tenant_exists(self, tenant: uuid.UUID) -> bool: ...

    async def store(self, name: str) -> StoreUse | None: ...

    async def tenants(self) -> Sequence[uuid.UUID]: ...


class DeadLetters(Protocol):
    """Where a parked edge goes when it can never be applied (its hold time passed, or its
    documents turned out to be in another scope)."""

    async def dead_letter_edge(self, tenant: uuid.UUID, edge: PendingEdge, reason: str) -> None: ...


class Inbox(Protocol):
    """Which events a consumer has processed, for this tenant, and with which payload."""

    async def claim(
        self, consumer: str, digests: Mapping[uuid.UUID, str]
    ) -> tuple[set[uuid.UUID], set[uuid.UUID]]:
        """Claim each event of `digests` (event id → digest of its payload) for `consumer`: the
        ids claimed now and, of the others (processed before), those whose earlier payload had
        another digest."""
        ...


class Rows(Protocol):
    """The rows of declared stores, for this tenant."""

    async def take_revisions(self, corpus_ids: Iterable[str]) -> None:
        """Bump (and lock until the unit of work ends) the revisions of `corpus_ids`."""
        ...

    async def insert(self, store: StoreDecl, rows: Sequence[Mapping[str, Any]]) -> int:
        """Insert `rows` (coerced values, every row naming the same columns); returns the count.
        A row whose primary key exists fails the unit of work (the database's verdict)."""
        ...

    async def existing_documents(
        self,
        documents: StoreDecl,
        id_column: str,
        ids: Sequence[str],
        scope_columns: Sequence[str],
    ) -> dict[str, dict[str, Any]]:
        """Document id (as text) → its scope column values (as text), for those of `ids` that
        exist for this tenant."""
        ...

    async def delete_document(
        self,
        documents: StoreDecl,
        id_column: str,
        document_id: str,
        match: Mapping[str, str],
    ) -> bool:
        """Delete this tenant's document `document_id` (its id as text) if each column of `match`
        equals its value (as text); True when one was deleted."""
        ...

    async def delete_edges_touching(
        self, relations: StoreDecl, from_column: str, to_column: str, document_id: str
    ) -> int:
        """Delete this tenant's edges from or to `document_id`; returns how many."""
        ...


class PendingEdges(Protocol):
    """Edges parked until both their documents exist, for this tenant."""

    async def hold(
        self,
        event_id: uuid.UUID,
        store: str,
        values: Mapping[str, Any],
        missing: Sequence[str],
        received_at: datetime | None = None,
    ) -> bool:
        """Park an edge that misses `missing`; False when its event is already parked."""
        ...

    async def take_for(self, document_ids: Sequence[str]) -> list[PendingEdge]:
        """Remove and return the parked edges waiting for any of `document_ids`, oldest first."""
        ...

    async def take_expired(self, received_before: datetime, limit: int = 500) -> list[PendingEdge]:
        """Remove and return up to `limit` parked edges received before `received_before`."""
        ...

    async def drop_naming(
        self, store: str, from_column: str, to_column: str, document_id: str
    ) -> int:
        """Delete the parked edges of `store` from or to `document_id`; returns how many."""
        ...


class Outcomes(Protocol):
    """The navigation outcomes (adaptive corpora's memory), for this tenant."""

    async def forget_naming(self, corpus_id: str, document_id: str) -> int:
        """Delete the outcomes of `corpus_id` whose path went through `document_id`."""
        ...


class Outbox(Protocol):
    """Events that leave (in the given order) only if the unit of work commits."""

    async def append(self, events: Sequence[OutboxEvent]) -> None: ...


class IngestTransaction(Protocol):
    """One tenant's unit of work: everything in it commits together or not at all."""

    @property
    def tenant(self) -> uuid.UUID: ...

    @property
    def inbox(self) -> Inbox: ...

    @property
    def rows(self) -> Rows: ...

    @property
    def pending(self) -> PendingEdges: ...

    @property
    def outcomes(self) -> Outcomes: ...

    @property
    def outbox(self) -> Outbox: ...


class IngestStore(Protocol):
    """Opens a tenant's unit of work: committed when the block ends, rolled back on error."""

    def tenant(self, tenant: uuid.UUID) -> AbstractAsyncContextManager[IngestTransaction]: ...
