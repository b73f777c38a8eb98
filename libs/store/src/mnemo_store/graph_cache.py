"""A byte-bounded cache of loaded corpus graphs, keyed by (tenant, corpus, scope digest).

A cached graph is only an optimisation: every use proves it fresh by comparing its revision with
the corpus's revision read inside the request's own transaction (`get(key, revision)` returns
nothing when they differ), so a write committed before a request began is always seen. Entries
are evicted least recently used first once the total estimated size passes `max_bytes`.

`advance` lets a writer that knows exactly what its own transaction changed (the navigator's
reinforcement) move an entry from revision r to r' without a reload, provided the entry is still
at r: otherwise somebody else wrote in between and the entry is left to be proven stale.

An entry may keep the rows its graph was built from (`refresh.GraphRows`, with the snapshot they
were read in): a stale entry is then refreshed from the rows changed since, not reloaded. `advance`
keeps them as they are: the reinforced rows are newer than their snapshot, so the next refresh
reads them again.
"""

from __future__ import annotations

import sys
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
from mnemo_mdn.graph import CorpusGraph
from mnemo_mdn.incremental import GraphChange

from mnemo_store.refresh import GraphRows

CacheKey = tuple[uuid.UUID, str, str]


@dataclass(frozen=True, slots=True)
class CachedGraph:
    graph: CorpusGraph
    revision: int
    nbytes: int
    rows: GraphRows | None = None


def graph_bytes(graph: CorpusGraph) -> int:
    """An estimate of the memory a graph holds: its arrays, its strings, its id index."""
    strings = _strings_bytes(graph, range(graph.n_documents))
    return _fixed_bytes(graph) + strings


def refreshed_graph_bytes(previous: CachedGraph, graph: CorpusGraph, change: GraphChange) -> int:
    """`graph_bytes(graph)` for a graph refreshed from `previous`'s by `change`, reading only the
    strings of the documents that changed (all of them cost 0.1-0.3 s at 100k documents)."""
    old = previous.graph
    strings = previous.nbytes - rows_bytes(previous.rows) - _fixed_bytes(old)
    replaced = np.isin(change.moved, change.changed) | (change.moved < 0)
    strings -= _strings_bytes(old, np.flatnonzero(replaced).tolist())
    strings += _strings_bytes(graph, change.changed.tolist())
    return _fixed_bytes(graph) + strings


def _fixed_bytes(graph: CorpusGraph) -> int:
    """The arrays (twice: memoised derived arrays, adjacency and term index, roughly double the
    edge arrays) and the id index's slots."""
    arrays = sum(
        int(array.nbytes)
        for array in (
            graph.edge_source,
            graph.edge_target,
            graph.edge_type,
            graph.edge_weight,
            graph.depth,
            graph.recency,
        )
        if isinstance(array, np.ndarray)
    )
    return arrays * 2 + 8 * 3 * graph.n_documents


def _strings_bytes(graph: CorpusGraph, positions: Iterable[int]) -> int:
    ids, titles, bodies = graph.ids, graph.titles, graph.bodies
    total = 0
    for k in positions:
        body = bodies[k]
        total += sys.getsizeof(ids[k]) * 2 + sys.getsizeof(titles[k])  # ids, and the index keys
        total += sys.getsizeof(body) if body is not None else 0
    return total


def rows_bytes(rows: GraphRows | None) -> int:
    """What the merge rows add to a graph: their lists and edge arrays (the strings are shared)."""
    if rows is None:
        return 0
    arrays = (rows.edge_key, rows.edge_source, rows.edge_target, rows.edge_type, rows.edge_weight)
    return sum(int(array.nbytes) for array in arrays) + 8 * 3 * len(rows.ids)


class GraphCache:
    """LRU by bytes; safe to use from the event loop and from worker threads."""

    def __init__(self, max_bytes: int) -> None:
        self._max_bytes = max_bytes
        self._entries: OrderedDict[CacheKey, CachedGraph] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @property
    def max_bytes(self) -> int:
        return self._max_bytes

    @property
    def nbytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: CacheKey, revision: int) -> CachedGraph | None:
        """The entry for `key` if it is at exactly `revision` (the current one), else None."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry.revision != revision:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return entry

    def peek(self, key: CacheKey) -> CachedGraph | None:
        """The entry for `key` at whatever revision it is (for an incremental refresh)."""
        with self._lock:
            return self._entries.get(key)

    def put(
        self,
        key: CacheKey,
        graph: CorpusGraph,
        revision: int,
        rows: GraphRows | None = None,
        *,
        nbytes: int | None = None,
    ) -> None:
        """Keep `graph` (built from `rows`, if given) as `key` at `revision`, unless a newer
        revision is already cached. `nbytes`: the graph's `graph_bytes`, when known."""
        size = graph_bytes(graph) if nbytes is None else nbytes
        entry = CachedGraph(graph, revision, size + rows_bytes(rows), rows)
        with self._lock:
            old = self._entries.get(key)
            if old is not None and old.revision > revision:
                return
            self._store(key, entry, old)

    def advance(
        self,
        key: CacheKey,
        from_revision: int,
        to_revision: int,
        change: Callable[[CorpusGraph], CorpusGraph],
    ) -> bool:
        """Move the entry from `from_revision` to `to_revision` by applying `change` to its graph;
        False (and nothing changed) when the entry is absent or not at `from_revision`, or was
        replaced while `change` ran. `change` runs outside the lock: other users of the cache (the
        event loop's `get`) never wait for it."""
        with self._lock:
            old = self._entries.get(key)
            if old is None or old.revision != from_revision:
                return False
        graph = change(old.graph)
        with self._lock:
            if self._entries.get(key) is not old:
                return False
            self._store(key, CachedGraph(graph, to_revision, old.nbytes, old.rows), old)
            return True

    def _store(self, key: CacheKey, entry: CachedGraph, old: CachedGraph | None) -> None:
        if entry.nbytes > self._max_bytes:
            if old is not None:
                del self._entries[key]
                self._bytes -= old.nbytes
            return
        if old is not None:
            self._bytes -= old.nbytes
        self._entries[key] = entry
        self._entries.move_to_end(key)
        self._bytes += entry.nbytes
        while self._bytes > self._max_bytes and self._entries:
            _, evicted = self._entries.popitem(last=False)
            self._bytes -= evicted.nbytes
