"""The graph cache (pure): freshness by exact revision, LRU by bytes, `advance` moving an entry
forward without holding the lock while the new graph is made, a size estimate that matches what
a navigated graph really holds, and the bounds that keep one tenant's flood of scopes (each
distinct `where:` is an entry) from taking the cache or another tenant's graphs."""

from __future__ import annotations

import gc
import random
import threading
import tracemalloc
import uuid

import pytest
from mnemo_mdn import DEFAULT_PARAMS, Memory, navigate
from mnemo_mdn.graph import CorpusGraph
from mnemo_store import graph_cache
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


# ------------------------------------------------------------------- the estimate against reality

WORDS = [f"term{k}" for k in range(30_000)]


def texts(n: int, body_words: int, seed: int) -> tuple[list[str], list[str], list[str | None]]:
    """Fresh strings (as a database driver hands them over), bodies of `body_words` words."""
    rnd = random.Random(seed)
    ids = [f"doc-{seed}-{k:06d}" for k in range(n)]
    titles = [" ".join(rnd.choices(WORDS, k=4)) for _ in range(n)]
    bodies: list[str | None] = [
        " ".join(rnd.choices(WORDS, k=body_words)) if body_words else None for _ in range(n)
    ]
    return ids, titles, bodies


def fresh(
    ids: list[str], titles: list[str], bodies: list[str | None]
) -> tuple[list[str], list[str], list[str | None]]:
    """Copies of every string, made where tracemalloc sees them."""
    return (
        [s.encode().decode() for s in ids],
        [s.encode().decode() for s in titles],
        [None if s is None else s.encode().decode() for s in bodies],
    )


def built(ids: list[str], titles: list[str], bodies: list[str | None]) -> CorpusGraph:
    n = len(ids)
    rnd = random.Random(n)
    return CorpusGraph.from_arrays(
        ids,
        titles,
        bodies=bodies,
        edge_source=[rnd.randrange(n) for _ in range(3 * n)],
        edge_target=[rnd.randrange(n) for _ in range(3 * n)],
        edge_type=["cite"] * (3 * n),
        edge_weight=[0.5] * (3 * n),
        order="id",
    )


def navigated(graph: CorpusGraph) -> CorpusGraph:
    """`graph` after a navigation: its term index, adjacency and EPR memoised on it."""
    memory = Memory(outcomes=(), persisted_weights=True)
    query = " ".join(WORDS[:3])
    navigate(graph, query, None, 5, "mdn", "both", DEFAULT_PARAMS, memory)
    return graph


@pytest.mark.parametrize(
    ("n", "body_words"),
    [(2000, 0), (2000, 20), (200, 2000), (20, 20_000)],
    ids=["titles only", "short bodies", "long bodies", "very long bodies"],
)
def test_the_estimate_is_within_a_quarter_of_what_tracemalloc_measures(
    n: int, body_words: int
) -> None:
    ids, titles, bodies = texts(n, body_words, seed=n)
    gc.collect()
    tracemalloc.start()
    try:
        graph = navigated(built(*fresh(ids, titles, bodies)))
        gc.collect()
        measured, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    estimate = graph_bytes(graph)
    assert 0.75 * measured <= estimate <= 1.25 * measured, (estimate, measured)


def test_evicted_graphs_are_released_and_the_cache_holds_what_it_counts() -> None:
    """A flood of scopes through a small cache: after it, the memory still held is what the cache
    counts (nothing keeps an evicted graph alive), within the estimate's margin."""
    tenant = uuid.UUID(int=7)
    gc.collect()
    tracemalloc.start()
    try:
        cache = GraphCache(4 * 1024**2)
        for k in range(30):
            graph = built(*texts(20, 300, seed=k))
            cache.put((tenant, "Corpus", f"scope-{k}"), navigated(graph), 1)
        del graph
        gc.collect()
        measured, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert 2 <= len(cache) < 30
    assert cache.nbytes <= cache.max_bytes
    assert measured <= 1.25 * cache.nbytes + 256 * 1024, (measured, cache.nbytes)


# ------------------------------------------------------------------------- tenants and scopes


def test_a_tenant_flooding_the_cache_with_scopes_evicts_its_own_graphs_not_another_tenants() -> (
    None
):
    size = graph_bytes(graph())
    cache = GraphCache(10 * size, tenant_share=0.5)
    victim: CacheKey = (uuid.UUID(int=1), "Corpus", "scope")
    cache.put(victim, graph(), 1)
    flooder = uuid.UUID(int=2)
    for k in range(200):
        cache.put((flooder, "Corpus", f"title != 'x{k}'"), graph(), 1)
        assert cache.nbytes <= cache.max_bytes
        assert cache.peek(victim) is not None
    assert cache.get(victim, 1) is not None
    # The flooder kept its most recent scopes, as many as the room the victim leaves.
    assert cache.peek((flooder, "Corpus", "title != 'x199'")) is not None
    assert cache.peek((flooder, "Corpus", "title != 'x0'")) is None
    assert len(cache) == 1 + 9


def test_a_lone_tenant_may_use_the_whole_cache_beyond_its_share() -> None:
    """The share is fair play under pressure, not a cap: a single tenant's large graph (a
    million documents with the defaults) is cached while nobody else needs the room."""
    size = graph_bytes(graph())
    cache = GraphCache(3 * size, tenant_share=0.25)
    cache.put(KEY, graph(), 1)
    assert cache.peek(KEY) is not None
    other: CacheKey = (uuid.UUID(int=99), "Corpus", "scope")
    cache.put(other, graph(), 1)
    cache.put((uuid.UUID(int=98), "Corpus", "scope"), graph(), 1)
    cache.put((uuid.UUID(int=97), "Corpus", "scope"), graph(), 1)
    # Full, and every tenant over its share (each graph is larger than one): the oldest goes.
    assert cache.nbytes <= cache.max_bytes
    assert len(cache) == 3
    assert cache.peek(KEY) is None


def test_a_tenant_holds_at_most_its_number_of_scopes_of_one_corpus() -> None:
    cache = GraphCache(10**9, scopes_per_corpus=3)
    tenant = uuid.UUID(int=1)
    other_corpus: CacheKey = (tenant, "Other", "scope")
    cache.put(other_corpus, graph(), 1)
    for k in range(10):
        cache.put((tenant, "Corpus", f"scope-{k}"), graph(), 1)
    assert cache.get((tenant, "Corpus", "scope-7"), 1) is not None  # now the most recent
    cache.put((tenant, "Corpus", "scope-10"), graph(), 1)
    kept = {key[2] for key in cache.keys_by_age() if key[1] == "Corpus"}
    assert kept == {"scope-7", "scope-9", "scope-10"}
    assert cache.peek(other_corpus) is not None  # another corpus's scopes are not counted


def test_a_graph_larger_than_the_whole_cache_is_never_cached() -> None:
    size = graph_bytes(graph())
    cache = GraphCache(size - 1, tenant_share=0.25)
    cache.put(KEY, graph(), 1)
    assert cache.peek(KEY) is None
    assert (len(cache), cache.nbytes, cache.tenant_nbytes(KEY[0])) == (0, 0, 0)


def test_the_bounds_are_checked_when_the_cache_is_made() -> None:
    with pytest.raises(ValueError, match="tenant_share"):
        GraphCache(10, tenant_share=0)
    with pytest.raises(ValueError, match="scopes_per_corpus"):
        GraphCache(10, scopes_per_corpus=0)


def test_memory_is_handed_back_once_an_eighth_of_the_bound_has_been_evicted() -> None:
    size = graph_bytes(graph())
    cache = GraphCache(16 * size)
    tenant = uuid.UUID(int=1)
    for k in range(17):
        cache.put((tenant, "Corpus", f"scope-{k}"), graph(), 1)
    assert not cache.release_due()  # one eviction: a sixteenth of the bound
    cache.put((tenant, "Corpus", "scope-17"), graph(), 1)
    assert cache.release_due()
    cache.release_memory()
    assert not cache.release_due()


def test_the_whole_graphs_string_sizes_read_in_bulk_equal_the_per_document_sum() -> None:
    graph = CorpusGraph.from_arrays(
        ["a", "b", "c\u00e9", "d\u65e5"],
        ["t", "t\u00e9 long title", "", "x"],
        bodies=[None, "body", "b\U0001f600dy", None],
    )
    assert graph_cache._all_strings_bytes(graph) == graph_cache._strings_bytes(
        graph, range(graph.n_documents)
    )
