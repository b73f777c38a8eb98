"""Incremental refresh of a loaded graph: read only the rows changed since it was loaded.

Every store row carries `axon_changed`, the id of the transaction that last inserted or updated it
(`ddl`, migration 0008). A graph loaded in a snapshot S holds exactly the rows S sees. A row that a
later snapshot S' sees differently was written by a transaction S did not see as committed: one
that was running when S was taken or started after it. Every such transaction's id is at least
`xmin(S)`, the oldest id running when S was taken, so

    axon_changed >= xmin(S) AND NOT pg_visible_in_snapshot(axon_changed, S)

finds every changed row, whatever order transactions commit in: the first half is a range over the
`(axon_tenant, axon_changed)` index (xid8 comparisons are leakproof, so row-level security keeps
the index), the second drops rows S already saw. Watermarking with the largest marker seen instead
would miss a transaction that started earlier and committed later.

Changed rows are merged by identity: documents by their id (the id column must be the primary key
or unique), edges by an integer row key (the relations store's single integer primary key, or the
hidden row id). A changed row that no longer matches the scope leaves the graph; a document that
enters it brings back the edges touching it (an index lookup by endpoint), since they may have been
loaded while it was missing. Deleted rows and rows whose identity changed leave no marker: a
trigger records a reset on the corpus's revision row, and `GraphRows.reset_revision` older than it
makes the caller load in full.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, TypeVar

import numpy as np
import numpy.typing as npt
from mnemo_axon.column_types import AxonType
from mnemo_mdn.graph import CorpusGraph, ids_in_order
from mnemo_mdn.incremental import GraphChange, carry_over

from mnemo_store.identifiers import ROW_ID_COLUMN, quote, store_table
from mnemo_store.loading import _TYPE_CODE_CASES, GraphArrays, IndexArray, LoadLimits
from mnemo_store.scope import CompiledScope
from mnemo_store.store_corpus import StoreCorpus

CHANGE_COLUMN: Final = "axon_changed"
_T = TypeVar("_T")
_INTEGER_KEYS: Final = (AxonType.INTEGER, AxonType.BIGINT)
# Up to this many removals and insertions, a merge's lists are changed in one copy (`_splice`).
_SPLICED_IN_PLACE: Final = 64

# ----------------------------------------------------------------------------- what qualifies


def edge_key_column(corpus: StoreCorpus) -> str | None:
    """The integer column identifying an edge row, or None when the corpus cannot be refreshed
    incrementally (a non-integer or composite edge key, or document ids that are not unique)."""
    documents = corpus.documents
    id_decl = documents.column(corpus.id_column)
    if id_decl is None or not (
        id_decl.unique
        or (
            id_decl.primary_key
            and [c.name for c in documents.columns if c.primary_key] == [corpus.id_column]
        )
    ):
        return None
    key = [column for column in corpus.relations.columns if column.primary_key]
    if not key:
        return ROW_ID_COLUMN
    if len(key) == 1 and key[0].type in _INTEGER_KEYS:
        return key[0].name
    return None


# --------------------------------------------------------------------------------------- SQL

_CHANGED = (
    "{alias}.{column} >= $(xmin)::text::xid8"
    " AND NOT pg_visible_in_snapshot({alias}.{column}, $(snapshot)::text::pg_snapshot)"
)


def changed_documents_sql(corpus: StoreCorpus, scope: CompiledScope) -> str:
    """Documents changed since snapshot `$(snapshot)` (its xmin `$(xmin)`): id, title, body,
    whether in scope (named binds: `mnemo_store.scope.positional`)."""
    body = f"d.{quote(corpus.body_column)}::text" if corpus.body_column else "NULL::text"
    changed = _CHANGED.format(alias="d", column=quote(CHANGE_COLUMN))
    return (
        f"SELECT d.{quote(corpus.id_column)}::text AS axon_id,"
        f" coalesce(d.{quote(corpus.title_column)}::text, '') AS axon_title, {body} AS axon_body,"
        f" coalesce(({scope.sql}), false) AS axon_in_scope"
        f" FROM {store_table(corpus.documents.name)} AS d"
        f" WHERE {changed} AND d.{quote(corpus.id_column)} IS NOT NULL"
    )


def _edge_columns(corpus: StoreCorpus, key: str, scope_sql: str) -> str:
    etype = f"e.{quote(corpus.etype_column)}::text"
    return (
        f"e.{quote(key)}::int8 AS axon_key, e.{quote(corpus.from_column)}::text AS axon_from,"
        f" e.{quote(corpus.to_column)}::text AS axon_to,"
        f" (CASE {etype} {_TYPE_CODE_CASES} ELSE -1 END)::int2 AS axon_code,"
        f" coalesce(e.{quote(corpus.weight_column)}::float8, 'NaN'::float8) AS axon_weight,"
        f" coalesce(({scope_sql}), false) AS axon_in_scope"
    )


def changed_edges_sql(corpus: StoreCorpus, key: str, scope: CompiledScope) -> str:
    """Edges changed since snapshot `$(snapshot)` (its xmin `$(xmin)`), whether in scope."""
    changed = _CHANGED.format(alias="e", column=quote(CHANGE_COLUMN))
    return (
        f"SELECT {_edge_columns(corpus, key, scope.relations_sql)}"
        f" FROM {store_table(corpus.relations.name)} AS e WHERE {changed}"
    )


def incident_edges_sql(corpus: StoreCorpus, key: str, scope: CompiledScope) -> str:
    """Edges with an endpoint among the document ids `$(ids)` (text), whether in scope."""
    kind = corpus.id_type.postgres
    ids = f"$(ids)::text[]::{kind}[]"
    return (
        f"SELECT {_edge_columns(corpus, key, scope.relations_sql)}"
        f" FROM {store_table(corpus.relations.name)} AS e"
        f" WHERE e.{quote(corpus.from_column)} = ANY({ids})"
        f" OR e.{quote(corpus.to_column)} = ANY({ids})"
    )


# ------------------------------------------------------------------------------------ the rows


@dataclass(frozen=True, slots=True)
class ChangeMark:
    """Where a reader of store rows stands: the `pg_snapshot` it read in and the corpus's revision
    and reset revision in it. Rows changed after it are those `changed_documents_sql` finds."""

    snapshot: str
    revision: int
    reset_revision: int

    @property
    def xmin(self) -> str:
        """The snapshot's xmin: every transaction it did not see has an id at least this."""
        return self.snapshot.split(":", 1)[0]


@dataclass(frozen=True, slots=True, eq=False)
class ChangedDocument:
    id: str
    title: str
    body: str | None
    in_scope: bool


@dataclass(frozen=True, slots=True, eq=False)
class ChangedEdges:
    """Changed edge rows (one per key): endpoints as document id text."""

    key: IndexArray
    source: list[str | None]
    target: list[str | None]
    code: npt.NDArray[np.int8]
    weight: npt.NDArray[np.float64]
    in_scope: npt.NDArray[np.bool_]

    @classmethod
    def of(
        cls, rows: Sequence[tuple[int, str | None, str | None, int, float, bool]]
    ) -> ChangedEdges:
        unique: dict[int, tuple[int, str | None, str | None, int, float, bool]] = {
            row[0]: row for row in rows
        }
        ordered = [unique[k] for k in sorted(unique)]
        return cls(
            key=np.array([r[0] for r in ordered], dtype=np.int64),
            source=[r[1] for r in ordered],
            target=[r[2] for r in ordered],
            code=np.array([r[3] for r in ordered], dtype=np.int8),
            weight=np.array([r[4] for r in ordered], dtype=np.float64),
            in_scope=np.array([r[5] for r in ordered], dtype=np.bool_),
        )

    def __len__(self) -> int:
        return int(self.key.shape[0])


@dataclass(frozen=True, slots=True, eq=False, kw_only=True)
class GraphRows(GraphArrays):
    """A keyed load's columns (`GraphArrays`, the one graph-rows type) ready to merge changes into.

    Documents in id order (text, byte order: the load's order); edges sorted by their row key, with
    endpoints as document positions (-1: not a loaded document). `snapshot` is the `pg_snapshot`
    they were read in, `revision` and `reset_revision` the corpus's revision row in it.
    """

    snapshot: str
    reset_revision: int
    edge_key: IndexArray  # always present: the key changes are merged by
    # The ids are strings in strictly ascending order (checked once at the load, then kept by every
    # merge: removals, and insertions at their sorted places), so no build checks them again.
    ascending: bool = False
    documents_read: int = 0  # rows read to make these rows: all of them, or only the changes
    edges_read: int = 0
    # From the rows these were merged from: where each document went, which are new or changed.
    change: GraphChange | None = None

    @property
    def xmin(self) -> str:
        """The snapshot's xmin: every transaction it did not see has an id at least this."""
        return self.snapshot.split(":", 1)[0]

    @property
    def mark(self) -> ChangeMark:
        return ChangeMark(self.snapshot, self.revision, self.reset_revision)

    @classmethod
    def from_arrays(
        cls, arrays: GraphArrays, snapshot: str, reset_revision: int
    ) -> GraphRows | None:
        """The rows of a keyed full load (None when it was not keyed or is truncated)."""
        if arrays.edge_key is None or arrays.truncated:
            return None
        keys = arrays.edge_key
        source, target = arrays.edge_source, arrays.edge_target
        etype, weight = arrays.edge_type, arrays.edge_weight
        if keys.shape[0] > 1 and not bool((keys[1:] > keys[:-1]).all()):
            # Not read in key order (a table read in its physical order mostly is): sorted, with
            # every column; already in order, the columns are taken as they are.
            order = np.argsort(keys, kind="stable")
            keys = keys[order]
            if bool((keys[1:] == keys[:-1]).any()):
                return None  # not a key after all
            source, target, etype, weight = (
                source[order],
                target[order],
                etype[order],
                weight[order],
            )
        return cls(
            corpus=arrays.corpus,
            snapshot=snapshot,
            revision=arrays.revision,
            reset_revision=reset_revision,
            ids=arrays.ids,
            titles=arrays.titles,
            bodies=arrays.bodies,
            edge_key=keys,
            edge_source=source,
            edge_target=target,
            edge_type=etype,
            edge_weight=weight,
            documents_read=arrays.n_documents,
            edges_read=arrays.n_edges,
            ascending=ids_in_order(arrays.ids),
        )

    def to_graph(self, previous: CorpusGraph | None = None) -> CorpusGraph:
        """The graph of these rows. `previous`, the graph of the rows they were merged from,
        hands over what it computed that still holds (`mnemo_mdn.incremental.carry_over`: the
        term index, updated for the changed documents, and EPR as a warm start)."""
        graph = self._graph(ids_ascending=self.ascending)
        if previous is not None and self.change is not None:
            carry_over(previous, graph, self.change)
        return graph

    def position(self, doc_id: str) -> int:
        """The document's position, or -1."""
        k = bisect.bisect_left(self.ids, doc_id)
        return k if k < len(self.ids) and self.ids[k] == doc_id else -1

    def new_documents(self, changed: Sequence[ChangedDocument]) -> list[str]:
        """Ids of changed documents in scope that these rows do not hold."""
        return sorted({d.id for d in changed if d.in_scope and self.position(d.id) < 0})


def merge(
    rows: GraphRows,
    documents: Sequence[ChangedDocument],
    edges: ChangedEdges,
    *,
    snapshot: str,
    revision: int,
    reset_revision: int,
    limits: LoadLimits,
) -> GraphRows | None:
    """`rows` with the changes applied, as read at `snapshot` (pure); None when past a limit
    (the caller loads in full, which fails or flags as the limits say)."""
    old_ids = rows.ids
    n = len(old_ids)
    removed: set[int] = set()
    updated: dict[int, ChangedDocument] = {}
    added: dict[str, ChangedDocument] = {}
    for document in documents:
        k = rows.position(document.id)
        if k >= 0:
            if document.in_scope:
                updated[k] = document
            else:
                removed.add(k)
        elif document.in_scope:
            added[document.id] = document
    additions = [added[i] for i in sorted(added)]
    inserts = [bisect.bisect_left(old_ids, d.id) for d in additions]
    if n - len(removed) + len(additions) > limits.max_documents:
        return None

    # Old position -> new position (-1: removed), without a Python loop over the documents.
    removed_mask = np.zeros(n, dtype=np.bool_)
    if removed:
        removed_mask[np.fromiter(removed, dtype=np.int64, count=len(removed))] = True
    removed_before: IndexArray = np.cumsum(removed_mask, dtype=np.int64) - removed_mask
    added_before = np.searchsorted(np.asarray(inserts, dtype=np.int64), np.arange(n), "right")
    remap = np.arange(n, dtype=np.int64) - removed_before + added_before
    remap[removed_mask] = -1

    titles, bodies = rows.titles, rows.bodies
    if updated:  # copied to be changed (the splice below copies them anyway)
        titles = list(titles)
        bodies = list(bodies) if bodies is not None else None
        for k, document in updated.items():
            titles[k] = document.title
            if bodies is not None:
                bodies[k] = document.body
    gone = sorted(removed)
    ids = _splice(old_ids, gone, inserts, [d.id for d in additions])
    titles = _splice(titles, gone, inserts, [d.title for d in additions])
    if bodies is not None:
        bodies = _splice(bodies, gone, inserts, [d.body for d in additions])

    # Position -1 (an endpoint that is not a loaded document) reads the -1 appended at the end.
    remap_or_gone = np.append(remap, -1)

    def moved(positions: IndexArray) -> IndexArray:
        return remap_or_gone.take(positions)

    source, target = moved(rows.edge_source), moved(rows.edge_target)
    key, etype, weight = rows.edge_key, rows.edge_type.copy(), rows.edge_weight.copy()

    if len(edges):
        lookup = _Positions(ids)
        c_source = np.array([lookup(v) for v in edges.source], dtype=np.int64)
        c_target = np.array([lookup(v) for v in edges.target], dtype=np.int64)
        at = np.searchsorted(key, edges.key)
        present = np.zeros(len(edges), dtype=np.bool_)
        inside = at < key.shape[0]
        present[inside] = key[at[inside]] == edges.key[inside]
        # Edges that left the scope leave the graph.
        drop = at[present & ~edges.in_scope]
        # Edges still here: new values in place.
        keep = present & edges.in_scope
        place = at[keep]
        source[place], target[place] = c_source[keep], c_target[keep]
        etype[place], weight[place] = edges.code[keep], edges.weight[keep]
        if drop.size:
            mask = np.ones(key.shape[0], dtype=np.bool_)
            mask[drop] = False
            key, source, target = key[mask], source[mask], target[mask]
            etype, weight = etype[mask], weight[mask]
        new = ~present & edges.in_scope
        if new.any():
            where = np.searchsorted(key, edges.key[new])
            key = np.insert(key, where, edges.key[new])
            source = np.insert(source, where, c_source[new])
            target = np.insert(target, where, c_target[new])
            etype = np.insert(etype, where, edges.code[new])
            weight = np.insert(weight, where, edges.weight[new])
    if key.shape[0] > limits.max_edges:
        return None
    locate = _Positions(ids)
    changed = sorted({int(remap[k]) for k in updated} | {locate(d.id) for d in additions})
    return GraphRows(
        corpus=rows.corpus,
        snapshot=snapshot,
        revision=revision,
        reset_revision=reset_revision,
        ids=ids,
        titles=titles,
        bodies=bodies,
        edge_key=key,
        edge_source=source,
        edge_target=target,
        edge_type=etype,
        edge_weight=weight,
        documents_read=len(documents),
        edges_read=len(edges),
        change=GraphChange(remap, np.array(changed, dtype=np.int64)),
        ascending=rows.ascending,
    )


class _Positions:
    def __init__(self, ids: list[str]) -> None:
        self._ids = ids

    def __call__(self, doc_id: str | None) -> int:
        if doc_id is None:
            return -1
        k = bisect.bisect_left(self._ids, doc_id)
        return k if k < len(self._ids) and self._ids[k] == doc_id else -1


def _splice(
    old: Sequence[_T], removed: Sequence[int], inserts: Sequence[int], values: Sequence[_T]
) -> list[_T]:
    """`old` without the positions `removed` (ascending), with `values[j]` placed before old
    position `inserts[j]` (ascending).

    A few events go into one copy, the last first (so the positions before it stay): each is a
    move of the pointers after it, where copying slices would count every reference twice more.
    Many go by slices between the events, the copying in C either way."""
    if not removed and not inserts:
        return list(old)
    events = sorted(
        [(p, 1, j) for j, p in enumerate(inserts)] + [(p, 2, -1) for p in removed]
    )  # at one position: the insert goes before the old entry, which may be removed
    if len(events) <= _SPLICED_IN_PLACE:
        spliced = list(old)
        for position, kind, j in reversed(events):
            if kind == 1:
                spliced.insert(position, values[j])
            else:
                del spliced[position]
        return spliced
    result: list[_T] = []
    start = 0
    for position, kind, j in events:
        result.extend(old[start:position])
        start = max(start, position)
        if kind == 1:
            result.append(values[j])
        else:
            start = position + 1
    result.extend(old[start:])
    return result


__all__ = [
    "CHANGE_COLUMN",
    "ChangeMark",
    "ChangedDocument",
    "ChangedEdges",
    "GraphRows",
    "changed_documents_sql",
    "changed_edges_sql",
    "edge_key_column",
    "incident_edges_sql",
    "merge",
]
