"""Persist commands for a corpus graph: the rows `mnemo ingest-dir` publishes.

Each command is the data of one `mnemo.persist.v1` event, `{store, values}` (one row). The
envelope around it (event id, tenant, time, producer, trace) belongs to whoever publishes.
Documents come before edges, so that on the tenant's ordered partition an edge normally finds
its documents already written; an edge whose target does not exist yet is published anyway
(ingest holds it in `pending_edges` until the document arrives, or dead-letters it with the
reason) and is reported by the graph that produced it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mnemo_mdn import Document, Edge

from mnemo_corpus.entry_graph import EntryGraph, UnresolvedLink

DEFAULT_DOCUMENTS_STORE = "Documents"
DEFAULT_EDGES_STORE = "Edges"


@dataclass(frozen=True, slots=True)
class PersistCommand:
    """One row for one store: the `data` of a `mnemo.persist.v1` event."""

    store: str
    values: dict[str, Any]

    def as_data(self) -> dict[str, Any]:
        return {"store": self.store, "values": dict(self.values)}


@dataclass(frozen=True, slots=True)
class DocumentsStore:
    """Which store and columns receive the documents; `body_column=None` leaves bodies out."""

    name: str = DEFAULT_DOCUMENTS_STORE
    id_column: str = "id"
    title_column: str = "title"
    body_column: str | None = "body"

    def __post_init__(self) -> None:
        _check_store(self.name, (self.id_column, self.title_column, self.body_column))

    def row(self, document: Document) -> dict[str, Any]:
        values: dict[str, Any] = {self.id_column: document.id, self.title_column: document.title}
        if self.body_column is not None:
            values[self.body_column] = document.body
        return values


@dataclass(frozen=True, slots=True)
class EdgesStore:
    """Which store and columns receive the edges."""

    name: str = DEFAULT_EDGES_STORE
    from_column: str = "from_id"
    to_column: str = "to_id"
    etype_column: str = "etype"
    weight_column: str = "weight"

    def __post_init__(self) -> None:
        _check_store(
            self.name, (self.from_column, self.to_column, self.etype_column, self.weight_column)
        )

    def row(self, edge: Edge) -> dict[str, Any]:
        return {
            self.from_column: edge.source,
            self.to_column: edge.target,
            self.etype_column: edge.etype,
            self.weight_column: edge.weight,
        }


@dataclass(frozen=True, slots=True)
class IngestPlan:
    """What ingesting a corpus publishes, and what it has to report."""

    commands: tuple[PersistCommand, ...]
    document_count: int
    edge_count: int
    pending_edge_count: int
    unresolved_links: tuple[UnresolvedLink, ...]

    def summary(self) -> str:
        pending = f" ({self.pending_edge_count} pending)" if self.pending_edge_count else ""
        return (
            f"{self.document_count} documents, {self.edge_count + self.pending_edge_count} "
            f"edges{pending}, {len(self.unresolved_links)} unresolved links"
        )


def plan_ingest(
    graph: EntryGraph,
    documents_store: DocumentsStore | None = None,
    edges_store: EdgesStore | None = None,
) -> IngestPlan:
    """One command per document, then one per edge, then one per pending edge."""
    documents_store = documents_store or DocumentsStore()
    edges_store = edges_store or EdgesStore()
    commands = [
        PersistCommand(documents_store.name, documents_store.row(document))
        for document in graph.documents
    ]
    commands.extend(
        PersistCommand(edges_store.name, edges_store.row(edge))
        for edge in (*graph.edges, *graph.pending_edges)
    )
    return IngestPlan(
        commands=tuple(commands),
        document_count=len(graph.documents),
        edge_count=len(graph.edges),
        pending_edge_count=len(graph.pending_edges),
        unresolved_links=graph.unresolved_links,
    )


def _check_store(store: str, columns: tuple[str | None, ...]) -> None:
    named = [column for column in columns if column is not None]
    if not store:
        raise ValueError("a store name must not be empty")
    if any(not column for column in named):
        raise ValueError(f"store {store!r}: a column name must not be empty")
    if len(set(named)) != len(named):
        raise ValueError(f"store {store!r}: each column must be different, got {named}")
