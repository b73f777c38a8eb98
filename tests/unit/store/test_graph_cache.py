"""The graph cache (pure): freshness by exact revision, LRU by bytes, and `advance` moving an entry
forward without holding the lock while the new graph is made."""

from __future__ import annotations

import threading
import uuid

from mnemo_mdn.graph import CorpusGraph
from mnemo_store.graph_cache import CacheKey, GraphCache, graph_bytes

KEY: CacheKey = (uuid.UUID(int=1), "Corpus", "scope")
OTHER: CacheKey = (uuid.UUID(int=2), "Corpus", "scope")


def graph(n: int = 3) -> CorpusGraph:
    ids = [f"d{k}" for k in range(n)]
    return CorpusGraph.from_arrays(
        ids,
        [f"title {k}" for k in range(n)],
        edge_source=list(range(n - 1)),
        edge_target=list(range(1, n)),
        edge_type=["cite"] * (n - 1),
        edge_weight=[0.5] * (n - 1),
        order="id",
    )


def test_an_entry_serves_only_its_exact_revision() -> None:
    cache = GraphCache(10**9)
    first = graph()
    cache.put(KEY, first, 4)
    assert cache.get(KEY, 3) is None
    assert cache.get(KEY, 5) is None
    entry = cache.get(KEY, 4)
    assert entry is not None
    assert entry.graph is first
    assert (cache.hits, cache.misses) == (1, 2)
    cache.put(KEY, graph(), 3)  # older than what is cached: ignored
    assert cache.get(KEY, 4) is not None


def test_the_least_recently_used_entry_goes_first_when_the_bytes_run_out() -> None:
    size = graph_bytes(graph())
    cache = GraphCache(2 * size + size // 2)
    cache.put(KEY, graph(), 1)
    cache.put(OTHER, graph(), 1)
    assert cache.get(KEY, 1) is not None  # KEY is now the most recently used
    third: CacheKey = (uuid.UUID(int=3), "Corpus", "scope")
    cache.put(third, graph(), 1)
    assert cache.peek(OTHER) is None
    assert cache.peek(KEY) is not None
    assert cache.nbytes <= cache.max_bytes


def test_advance_moves_an_entry_at_the_given_revision_and_nothing_else() -> None:
    cache = GraphCache(10**9)
    assert not cache.advance(KEY, 1, 2, lambda g: g)  # absent
    cache.put(KEY, graph(), 1)
    assert not cache.advance(KEY, 0, 2, lambda g: g)  # not at that revision
    moved = graph(4)
    assert cache.advance(KEY, 1, 2, lambda _: moved)
    entry = cache.get(KEY, 2)
    assert entry is not None
    assert entry.graph is moved


def test_advance_makes_the_graph_outside_the_lock_and_yields_to_a_newer_entry() -> None:
    cache = GraphCache(10**9)
    cache.put(KEY, graph(), 1)
    started, release = threading.Event(), threading.Event()
    newer = graph(5)

    def slow(g: CorpusGraph) -> CorpusGraph:
        started.set()
        assert release.wait(10)
        return graph(4)

    outcome: list[bool] = []
    worker = threading.Thread(target=lambda: outcome.append(cache.advance(KEY, 1, 2, slow)))
    worker.start()
    assert started.wait(10)
    # While the change runs, the cache answers at once, and a newer graph may replace the entry.
    answered: list[bool] = []

    def reader() -> None:
        answered.append(cache.get(KEY, 1) is not None)
        cache.put(KEY, newer, 3)

    other = threading.Thread(target=reader)
    other.start()
    other.join(5)
    waited = other.is_alive()
    release.set()
    other.join(10)
    assert not waited, "the cache waited for the change to finish"
    assert answered == [True]
    worker.join(10)
    assert outcome == [False]
    entry = cache.get(KEY, 3)
    assert entry is not None
    assert entry.graph is newer
