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

The cache is shared by tenants, and a read token chooses its scope (`where:`), so each distinct
filter would be a new entry: two bounds keep one caller from taking it over. A tenant holds at
most `scopes_per_corpus` scopes of one corpus (its corpus's least recently used scope goes first).
`tenant_share` of `max_bytes` is a tenant's fair share: while the cache has room a tenant may hold
more (a lone tenant's million-document graph is cached), but when the cache is over `max_bytes`
the entries that go are the least recently used ones of the tenants holding more than their share,
and only when no tenant does, the least recently used of all. So a tenant flooding the cache evicts
its own graphs, never those of a tenant within its share. The size counted for a graph (`graph_bytes`) is what it
holds once navigated: its arrays, strings, id index and term index (built by the sizing, which the
first navigation would build anyway), within about 25% of what tracemalloc measures.

Evicting a graph frees its memory to the allocator, which keeps most of it (graphs are built in
worker threads, each with its own glibc arena): once an eighth of the bound has been evicted,
`release_due` says so and `release_memory` (a worker thread's job) hands the free pages back to
the operating system (`malloc_trim`; nothing where the C library has none).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import itertools
import sys
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final

import numpy as np
from mnemo_mdn.graph import CorpusGraph
from mnemo_mdn.incremental import GraphChange
from mnemo_mdn.relevance import TERMS_MEMO, TermIndex, term_index

from mnemo_store.refresh import GraphRows

CacheKey = tuple[uuid.UUID, str, str]
"""(tenant, corpus, scope digest)."""

ENTRY_BYTES: Final = 4096
"""What every graph holds whatever its size: the objects around its arrays (numpy headers, the
memo dict, diagnostics, the entry and its key), counted once per graph."""
_TERM_SAMPLE: Final = 1024
"""Terms whose string sizes are read to size them all (reading every one of a large vocabulary
would cost more than the rest of the sizing)."""


@dataclass(frozen=True, slots=True)
class CachedGraph:
    graph: CorpusGraph
    revision: int
    nbytes: int
    rows: GraphRows | None = None


def graph_bytes(graph: CorpusGraph) -> int:
    """An estimate of the memory a graph holds once navigated: its arrays, its strings, its id
    index and its term index (built here if the graph has none yet: the first navigation would
    build it anyway, and with long bodies it is as large as the bodies themselves)."""
    return _fixed_bytes(graph) + _all_strings_bytes(graph) + term_index_bytes(term_index(graph))


def refreshed_graph_bytes(previous: CachedGraph, graph: CorpusGraph, change: GraphChange) -> int:
    """`graph_bytes(graph)` for a graph refreshed from `previous`'s by `change`, reading only the
    strings of the documents that changed (all of them cost 0.1-0.3 s at 100k documents)."""
    old = previous.graph
    strings = previous.nbytes - rows_bytes(previous.rows) - _fixed_bytes(old) - _terms_held(old)
    replaced = np.isin(change.moved, change.changed) | (change.moved < 0)
    strings -= _strings_bytes(old, np.flatnonzero(replaced).tolist())
    strings += _strings_bytes(graph, change.changed.tolist())
    return _fixed_bytes(graph) + strings + term_index_bytes(term_index(graph))


def term_index_bytes(index: TermIndex) -> int:
    """The term index's postings (documents and counts per term and document: about the size of
    the text itself), its lengths, and its vocabulary: the dict, each term's string (sized from a
    sample) and its row number."""
    postings = {id(p): p for p in (index.postings, index.title_postings)}.values()
    arrays = sum(p.nbytes for p in postings) + int(index.title_terms.nbytes)
    terms = index.terms
    sample = [sys.getsizeof(term) for term in itertools.islice(terms, _TERM_SAMPLE)]
    per_term = sum(sample) / len(sample) + sys.getsizeof(2**20) if sample else 0
    return arrays + int(index.lengths.nbytes) + sys.getsizeof(terms) + int(per_term * len(terms))


def _terms_held(graph: CorpusGraph) -> int:
    held = graph.memoised(TERMS_MEMO)
    return term_index_bytes(held) if isinstance(held, TermIndex) else 0


def _fixed_bytes(graph: CorpusGraph) -> int:
    """The arrays (twice: memoised derived arrays, adjacency, polarity and EPR, roughly double the
    edge arrays), per document the id index's slot (three words) and the ten vectors EPR keeps for
    refreshes (a warm start's two, the carried update states' four and the graph's own four:
    `mnemo_mdn.epr_update`), and the per-graph objects (`ENTRY_BYTES`)."""
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
    return arrays * 2 + 8 * (3 + 10) * graph.n_documents + ENTRY_BYTES


def _all_strings_bytes(graph: CorpusGraph) -> int:
    """`_strings_bytes` of every document, with the sizes read by `map` in C (a loop over a
    million documents in Python cost about a second)."""
    size = sys.getsizeof
    bodies = sum(map(size, graph.bodies)) - graph.bodies.count(None) * size(None)
    return 2 * sum(map(size, graph.ids)) + sum(map(size, graph.titles)) + bodies


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


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's `malloc_trim`, or None (another C library, or none found)."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        trim: Callable[[int], int] = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return None
    return trim


_TRIM = _malloc_trim()


class GraphCache:
    """LRU by bytes, with a share per tenant and a number of scopes per (tenant, corpus); safe to
    use from the event loop and from worker threads.

    `tenant_share`: the fraction of `max_bytes` a tenant may keep when the cache is full (its fair
    share; 1: plain LRU). `scopes_per_corpus`: how many scopes of one corpus one tenant may have
    cached (None: no bound)."""

    def __init__(
        self,
        max_bytes: int,
        *,
        tenant_share: float = 1.0,
        scopes_per_corpus: int | None = None,
    ) -> None:
        if not 0.0 < tenant_share <= 1.0:
            raise ValueError(f"tenant_share is {tenant_share}; it must be in (0, 1]")
        if scopes_per_corpus is not None and scopes_per_corpus < 1:
            raise ValueError(f"scopes_per_corpus is {scopes_per_corpus}; it must be at least 1")
        self._max_bytes = max_bytes
        self._tenant_bytes_bound = int(max_bytes * tenant_share)
        self._scopes_per_corpus = scopes_per_corpus
        self._entries: OrderedDict[CacheKey, CachedGraph] = OrderedDict()
        # The same keys, least recently used first, per tenant and per (tenant, corpus); a tenant
        # or corpus without entries has no item here (nothing outlives the last entry).
        self._by_tenant: dict[uuid.UUID, OrderedDict[CacheKey, None]] = {}
        self._by_corpus: dict[tuple[uuid.UUID, str], OrderedDict[CacheKey, None]] = {}
        self._tenant_bytes: dict[uuid.UUID, int] = {}
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        self.evictions = 0
        self._unreleased = 0  # bytes evicted since memory was last handed back

    @property
    def max_bytes(self) -> int:
        return self._max_bytes

    @property
    def tenant_max_bytes(self) -> int:
        """A tenant's fair share: the most its entries keep once the cache is full."""
        return self._tenant_bytes_bound

    @property
    def nbytes(self) -> int:
        return self._bytes

    def tenant_nbytes(self, tenant: uuid.UUID) -> int:
        with self._lock:
            return self._tenant_bytes.get(tenant, 0)

    def keys_by_age(self) -> list[CacheKey]:
        """The cached keys, least recently used first."""
        with self._lock:
            return list(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: CacheKey, revision: int) -> CachedGraph | None:
        """The entry for `key` if it is at exactly `revision` (the current one), else None."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry.revision != revision:
                self.misses += 1
                return None
            self._touch(key)
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

    # -- under the lock

    def _store(self, key: CacheKey, entry: CachedGraph, old: CachedGraph | None) -> None:
        if old is not None:
            self._remove(key)
        if entry.nbytes > self._max_bytes:
            return  # larger than the whole cache: never cached
        tenant, corpus, _ = key
        self._entries[key] = entry
        self._by_tenant.setdefault(tenant, OrderedDict())[key] = None
        self._by_corpus.setdefault((tenant, corpus), OrderedDict())[key] = None
        self._tenant_bytes[tenant] = self._tenant_bytes.get(tenant, 0) + entry.nbytes
        self._bytes += entry.nbytes
        scopes = self._by_corpus[(tenant, corpus)]
        while self._scopes_per_corpus is not None and len(scopes) > self._scopes_per_corpus:
            self._evict(next(iter(scopes)))
        while self._bytes > self._max_bytes:
            self._evict(self._eviction_candidate())

    def _eviction_candidate(self) -> CacheKey:
        """The least recently used entry of a tenant over its fair share, else of all."""
        over = {t for t, held in self._tenant_bytes.items() if held > self._tenant_bytes_bound}
        if over:
            for key in self._entries:
                if key[0] in over:
                    return key
        return next(iter(self._entries))

    def _touch(self, key: CacheKey) -> None:
        tenant, corpus, _ = key
        self._entries.move_to_end(key)
        self._by_tenant[tenant].move_to_end(key)
        self._by_corpus[(tenant, corpus)].move_to_end(key)

    def release_due(self) -> bool:
        """Whether an eighth of the bound has been evicted since `release_memory` last ran."""
        return _TRIM is not None and self._unreleased * 8 >= self._max_bytes

    def release_memory(self) -> None:
        """Hand the allocator's free pages back to the operating system (a few milliseconds per
        hundred megabytes of heap: call it from a worker thread, when `release_due`)."""
        with self._lock:
            self._unreleased = 0
        if _TRIM is not None:
            _TRIM(0)

    def _evict(self, key: CacheKey) -> None:
        self._unreleased += self._entries[key].nbytes
        self._remove(key)
        self.evictions += 1

    def _remove(self, key: CacheKey) -> None:
        tenant, corpus, _ = key
        entry = self._entries.pop(key)
        self._bytes -= entry.nbytes
        held = self._tenant_bytes[tenant] - entry.nbytes
        mine = self._by_tenant[tenant]
        del mine[key]
        if mine:
            self._tenant_bytes[tenant] = held
        else:
            del self._by_tenant[tenant], self._tenant_bytes[tenant]
        scopes = self._by_corpus[(tenant, corpus)]
        del scopes[key]
        if not scopes:
            del self._by_corpus[(tenant, corpus)]
