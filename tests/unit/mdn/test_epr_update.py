"""EPR brought up to date by residual push equals a cold run within the tolerance (issue 29)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from mnemo_mdn import CorpusGraph, EprResult, MdnParams, epr
from mnemo_mdn.epr_update import ChannelState, _Sizes, update_channel
from mnemo_mdn.incremental import GraphChange, carry_over
from mnemo_mdn.relations import RELATION_TYPES, Polarity
from mnemo_mdn.signed_pagerank import STATE_PREFIX, UPDATE_PREFIX, epr_key

IDS = [f"d{k:02d}" for k in range(16)]


@dataclass(frozen=True)
class Corpus:
    """Documents (id -> depth, recency) and edges (source, target, type code, weight)."""

    documents: dict[str, tuple[float, float]]
    edges: tuple[tuple[str, str, int, float], ...]

    def graph(self) -> CorpusGraph:
        ids = sorted(self.documents)
        position = {doc_id: k for k, doc_id in enumerate(ids)}
        kept = [e for e in self.edges if e[0] in position and e[1] in position]
        return CorpusGraph.from_arrays(
            ids,
            ids,
            depth=np.array([self.documents[i][0] for i in ids], dtype=np.float64),
            recency=np.array([self.documents[i][1] for i in ids], dtype=np.float64),
            edge_source=np.array([position[s] for s, _, _, _ in kept], dtype=np.int64),
            edge_target=np.array([position[t] for _, t, _, _ in kept], dtype=np.int64),
            edge_type=np.array([c for _, _, c, _ in kept], dtype=np.int64),
            edge_weight=np.array([w for _, _, _, w in kept], dtype=np.float64),
            order="id",
        )


def change_between(old: Corpus, new: Corpus) -> GraphChange:
    """Where each old document went; the changed ones are those whose priors differ or are new."""
    old_ids, new_ids = sorted(old.documents), sorted(new.documents)
    position = {doc_id: k for k, doc_id in enumerate(new_ids)}
    moved = np.array([position.get(doc_id, -1) for doc_id in old_ids], dtype=np.int64)
    changed = [position[i] for i in new_ids if old.documents.get(i) != new.documents[i]]
    return GraphChange(moved, np.array(changed, dtype=np.int64))


priors = st.tuples(
    st.sampled_from([0.0, 0.0, 1.0, 3.0]), st.sampled_from([0.5, 0.5, 0.0, 0.2, 1.0])
)
edge = st.tuples(
    st.sampled_from(IDS[:10]),
    st.sampled_from(IDS[:10]),
    st.integers(min_value=0, max_value=len(RELATION_TYPES) - 1),
    st.floats(min_value=0.05, max_value=1.0),
)
corpora = st.builds(
    Corpus,
    st.dictionaries(st.sampled_from(IDS[:10]), priors, min_size=1, max_size=10),
    st.lists(edge, max_size=30).map(tuple),
)


@st.composite
def changes(draw: st.DrawFn, corpus: Corpus) -> Corpus:
    """A few rows changed: documents added, dropped or given other priors; edges added, dropped,
    reweighted or retyped (trust to distrust and back)."""
    documents = dict(corpus.documents)
    edges = list(corpus.edges)
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        action = draw(st.sampled_from(["add", "drop", "priors", "edge", "unedge", "reweight"]))
        if action == "add":
            documents[draw(st.sampled_from(IDS))] = draw(priors)
        elif action == "drop" and len(documents) > 1:
            documents.pop(draw(st.sampled_from(sorted(documents))))
        elif action == "priors":
            documents[draw(st.sampled_from(sorted(documents)))] = draw(priors)
        elif action == "edge":
            source, _, code, weight = draw(edge)
            edges.append((source, draw(st.sampled_from(IDS)), code, weight))
        elif edges:
            k = draw(st.integers(min_value=0, max_value=len(edges) - 1))
            source, target, code, _ = edges.pop(k)
            if action == "reweight":
                code = draw(st.integers(min_value=0, max_value=len(RELATION_TYPES) - 1))
                edges.append((source, target, code, draw(st.floats(0.05, 1.0))))
    return Corpus(documents, tuple(edges))


def l1(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a - b).sum())


def assert_within_tolerance(updated: EprResult, cold: EprResult, params: MdnParams) -> None:
    # Each channel: the cold run is within d/(1 − d)·tol of the fixed point (L1), the update within
    # a tenth of that (its certificate); net EPR adds λ times the distrust channel's difference.
    d = params.damping
    channel = 1.1 * d / (1 - d) * params.tol
    assert l1(updated.epr_plus, cold.epr_plus) <= channel
    assert l1(updated.epr_minus, cold.epr_minus) <= channel
    assert l1(updated.epr, cold.epr) <= (1 + params.distrust_penalty) * channel
    if d == 0.85:
        assert float(np.abs(updated.epr - cold.epr).max()) <= 1e-9
        assert l1(updated.epr, cold.epr) <= 1e-9


@settings(max_examples=80, deadline=None)
@given(st.data(), corpora, st.sampled_from([0.5, 0.85, 0.85, 0.95]))
def test_an_updated_epr_equals_a_cold_one_within_the_tolerance_after_every_change(
    data: st.DataObject, corpus: Corpus, damping: float
) -> None:
    params = MdnParams(damping=damping)
    graph = corpus.graph()
    epr(graph, params)
    for _ in range(3):  # the first refresh solves the update states, the next ones update them
        following = data.draw(changes(corpus))
        refreshed = carry_over(graph, following.graph(), change_between(corpus, following))
        updated, cold = epr(refreshed, params), epr(following.graph(), params)
        assume(max(cold.iterations, cold.iterations_minus) < params.max_iter)
        assert_within_tolerance(updated, cold, params)
        corpus, graph = following, refreshed


def chain(n: int, seed: int) -> Corpus:
    """`n` documents with 5 random edges each (mixed types and weights), varied priors."""
    rng = np.random.default_rng(seed)
    ids = [f"n{k:06d}" for k in range(n)]
    documents = {doc_id: (float(rng.integers(0, 3)), float(rng.random())) for doc_id in ids}
    edges = tuple(
        (ids[int(s)], ids[int(t)], int(c), float(w))
        for s, t, c, w in zip(
            rng.integers(0, n, 5 * n),
            rng.integers(0, n, 5 * n),
            rng.integers(0, len(RELATION_TYPES), 5 * n),
            0.05 + 0.95 * rng.random(5 * n),
            strict=True,
        )
    )
    return Corpus(documents, edges)


def test_a_new_document_citing_itself_is_settled_in_one_round_per_channel() -> None:
    # The bench's write: one document and a self-citation. Its residual is its own; the push
    # settles a self-loop at once, so the update touches one document, not the graph.
    corpus = chain(3000, seed=5)
    graph = corpus.graph()
    epr(graph)
    for k in range(3):
        fresh = f"n001500x{k}"
        following = Corpus(
            corpus.documents | {fresh: (0.0, 0.5)}, (*corpus.edges, (fresh, fresh, 0, 0.5))
        )
        graph = carry_over(graph, following.graph(), change_between(corpus, following))
        updated, cold = epr(graph), epr(following.graph())
        assert_within_tolerance(updated, cold, MdnParams())
        if k > 0:  # the first refresh solved the states
            assert (updated.iterations, updated.iterations_minus) == (1, 1)
        corpus = following


def test_a_change_that_reaches_the_whole_graph_falls_back_and_still_agrees() -> None:
    corpus = chain(3000, seed=9)
    graph = corpus.graph()
    epr(graph)
    for k in range(3):
        # Every document's out-weights change: the residual is everywhere.
        following = replace(
            corpus,
            edges=tuple((s, t, c, min(1.0, w * 1.5 + 0.01 * k)) for s, t, c, w in corpus.edges),
        )
        graph = carry_over(graph, following.graph(), change_between(corpus, following))
        updated, cold = epr(graph), epr(following.graph())
        assert_within_tolerance(updated, cold, MdnParams())
        # A channel whose update gave up keeps no state: its next refreshes start warm without
        # paying for an update first.
        states = graph.memoised(STATE_PREFIX + epr_key(MdnParams()))
        carried = graph.memoised(UPDATE_PREFIX + epr_key(MdnParams()))
        if k > 0 and isinstance(states, tuple) and isinstance(carried, tuple):
            for before, after in zip(carried, states, strict=True):
                assert before is not None or after is None
        corpus = following


def test_a_channel_whose_change_spreads_starts_warm_while_the_other_keeps_updating() -> None:
    # Trust edges: 5 random ones per document, a change there reaches the whole graph within a
    # few hops. Distrust edges: a few, and the writes add none. Each write is a new document
    # citing two documents and cited by one, as the classifier links a memory.
    n = 3000
    rng = np.random.default_rng(11)
    ids = [f"n{k:06d}" for k in range(n)]
    documents = {doc_id: (0.0, float(rng.random())) for doc_id in ids}
    trust = [(ids[k], ids[int(t)], 0, 0.5) for k in range(n) for t in rng.integers(0, n, 5)]
    distrust = [(ids[int(s)], ids[int(t)], 1, 0.5) for s, t in rng.integers(0, n, (30, 2))]
    corpus = Corpus(documents, (*trust, *distrust))
    key = epr_key(MdnParams())
    graph = corpus.graph()
    epr(graph)
    for k in range(4):
        fresh = f"n{n + k:06d}"
        a, b, c = (ids[int(x)] for x in rng.integers(0, n, 3))
        following = Corpus(
            corpus.documents | {fresh: (0.0, 0.5)},
            (*corpus.edges, (fresh, a, 0, 0.5), (fresh, b, 0, 0.7), (c, fresh, 0, 0.6)),
        )
        graph = carry_over(graph, following.graph(), change_between(corpus, following))
        updated, cold = epr(graph), epr(following.graph())
        assert_within_tolerance(updated, cold, MdnParams())
        states = graph.memoised(STATE_PREFIX + key)
        assert isinstance(states, tuple)
        trust_state, distrust_state = states
        assert isinstance(distrust_state, ChannelState)
        if k > 0:  # the first refresh solved the states from the vectors
            assert trust_state is None  # its update gave up
            assert updated.iterations_minus <= 2  # updated, not iterated
        if k > 1:
            carried = graph.memoised(UPDATE_PREFIX + key)
            assert isinstance(carried, tuple)
            assert carried[0] is None  # no update tried for trust
        corpus = following


def test_an_update_from_a_state_of_another_size_is_refused() -> None:
    graph = chain(50, seed=1).graph()
    wrong = ChannelState(np.ones(49), np.ones(49))
    assert update_channel(graph, Polarity.POSITIVE, 0.85, 1e-10, wrong) is None
    assert update_channel(graph, Polarity.POSITIVE, 0.85, 1e-10, np.ones(3)) is None


def test_an_update_with_no_start_solves_the_channel_like_a_cold_run() -> None:
    graph = chain(400, seed=2).graph()
    cold = epr(graph)
    for polarity, expected in (
        (Polarity.POSITIVE, cold.epr_plus),
        (Polarity.NEGATIVE, cold.epr_minus),
    ):
        solved = update_channel(graph, polarity, 0.85, 1e-10, None)
        assert solved is not None
        assert solved.vector is not None
        assert l1(solved.vector, expected) <= 1.1 * 0.85 / 0.15 * 1e-10
        assert abs(float(solved.vector.sum()) - 1.0) <= 1e-9
        assert bool((solved.vector > 0).all())


def test_an_update_only_reads_the_carried_states() -> None:
    # Two requests may compute one graph's EPR at once from the same carried states: an update
    # that wrote into them would hand the other a half-updated start.
    corpus = chain(500, seed=4)
    graph = corpus.graph()
    epr(graph)
    following = Corpus(corpus.documents | {"n000250x": (0.0, 0.5)}, corpus.edges)
    once = carry_over(graph, following.graph(), change_between(corpus, following))
    epr(once)  # solves the states
    again = Corpus(following.documents | {"n000251x": (1.0, 0.2)}, following.edges)
    twice = carry_over(once, again.graph(), change_between(following, again))
    carried = twice.memoised(UPDATE_PREFIX + epr_key(MdnParams()))
    assert isinstance(carried, tuple)
    before = [(s.y.copy(), s.z.copy()) for s in carried]
    first = update_channel(twice, Polarity.POSITIVE, 0.85, 1e-10, carried[0])
    second = update_channel(twice, Polarity.POSITIVE, 0.85, 1e-10, carried[0])
    assert first is not None
    assert second is not None
    assert first.vector is not None
    assert second.vector is not None
    assert np.array_equal(first.vector, second.vector)
    for (y, z), state in zip(before, carried, strict=True):
        assert np.array_equal(y, state.y)
        assert np.array_equal(z, state.z)


powers = st.integers(min_value=-31, max_value=0).map(lambda e: 0.0 if e == -31 else 2.0**e)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_a_round_picks_the_documents_a_full_scan_would_after_any_changes(
    data: st.DataObject,
) -> None:
    # Powers of two over 31 binary orders add up exactly, so the kept sizes must equal a fresh
    # scan's: the documents above the cut found among the changed ones are those above it anywhere
    # (every picked document is changed before the next pick, as a push round changes them).
    n = 60
    r_y = np.array(data.draw(st.lists(powers, min_size=n, max_size=n)))
    r_z = np.array(data.draw(st.lists(powers, min_size=n, max_size=n)))
    sizes = _Sizes((r_y, r_z))
    for _ in range(data.draw(st.integers(min_value=1, max_value=8))):
        left = 2.0 ** data.draw(st.integers(min_value=-36, max_value=3))
        fresh = _Sizes((r_y.copy(), r_z.copy()))
        picked = sizes.holding(left).tolist()
        assert sorted(picked) == sorted(fresh.holding(left).tolist())
        # As a push round does: the picked documents change, and some others (their targets).
        changed = sorted({*picked, *data.draw(st.lists(st.integers(0, n - 1), max_size=12))})
        for k in changed:
            r_y[k], r_z[k] = data.draw(powers), data.draw(powers)
        sizes.changed(np.array(changed, dtype=np.intp))
        assert sizes.total == float((np.abs(r_y) + np.abs(r_z)).sum())
