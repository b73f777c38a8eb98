"""A refreshed graph takes over its predecessor's term index (updated) and EPR (as a warm start)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import mnemo_mdn.graph as graph_module
import mnemo_mdn.incremental as incremental
import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from mnemo_mdn import (
    DEFAULT_PARAMS,
    RELATION_TYPES,
    CorpusGraph,
    EdgeReinforcement,
    MdnParams,
    apply_reinforcements,
    epr,
)
from mnemo_mdn.graph import ids_in_order
from mnemo_mdn.incremental import GraphChange, carry_over
from mnemo_mdn.relevance import TERMS_MEMO, TermIndex, _build_term_index, term_index
from mnemo_mdn.signed_pagerank import UPDATE_PREFIX, epr_key

# Separators of every kind, letters whose lowercase form is longer or depends on context, CJK.
ALPHABET = "aZq09_ -.,\n\x00—’\u00a0éÉΣσςİßﬁ日本x"
texts = st.text(alphabet=ALPHABET, max_size=12)
Text = tuple[str, str | None]


def graph_of(
    documents: Mapping[str, Text],
    edges: Sequence[tuple[str, str, int, float]] = (),
) -> CorpusGraph:
    ids = sorted(documents)
    position = {doc_id: k for k, doc_id in enumerate(ids)}
    kept = [(s, t, c, w) for s, t, c, w in edges if s in position and t in position]
    return CorpusGraph.from_arrays(
        ids,
        [documents[i][0] for i in ids],
        bodies=[documents[i][1] for i in ids],
        edge_source=np.array([position[s] for s, _, _, _ in kept], dtype=np.int64),
        edge_target=np.array([position[t] for _, t, _, _ in kept], dtype=np.int64),
        edge_type=np.array([c for _, _, c, _ in kept], dtype=np.int64),
        edge_weight=np.array([w for _, _, _, w in kept], dtype=np.float64),
        order="id",
    )


def change_between(old: Mapping[str, Text], new: Mapping[str, Text]) -> GraphChange:
    old_ids, new_ids = sorted(old), sorted(new)
    position = {doc_id: k for k, doc_id in enumerate(new_ids)}
    moved = np.array([position.get(doc_id, -1) for doc_id in old_ids], dtype=np.int64)
    changed = [position[i] for i in new_ids if i not in old or old[i] != new[i]]
    return GraphChange(moved, np.array(changed, dtype=np.int64))


def assert_same_index(updated: TermIndex, rebuilt: TermIndex) -> None:
    assert updated.n_documents == rebuilt.n_documents
    assert np.array_equal(updated.lengths, rebuilt.lengths)
    assert updated.average_length == rebuilt.average_length
    assert (updated.title_postings is updated.postings) == (
        rebuilt.title_postings is rebuilt.postings
    )
    assert updated.title_terms.tolist() == rebuilt.title_terms.tolist()
    for term in set(updated.terms) | set(rebuilt.terms):
        assert updated.document_frequency(term) == rebuilt.document_frequency(term), term
        assert updated.idf(term) == rebuilt.idf(term), term
        for read in ("documents_with", "frequencies", "titles_with"):
            mine: npt.NDArray[np.int32] = getattr(updated, read)(term)
            theirs: npt.NDArray[np.int32] = getattr(rebuilt, read)(term)
            assert mine.tolist() == theirs.tolist(), (term, read)


document_ids = st.sampled_from([f"d{k:02d}" for k in range(14)])
corpora = st.dictionaries(document_ids, st.tuples(texts, st.none() | texts), max_size=10)
edits = st.lists(
    st.tuples(st.sampled_from(["drop", "set"]), document_ids, st.tuples(texts, st.none() | texts)),
    max_size=8,
)


@settings(max_examples=300, deadline=None)
@given(corpora, edits)
def test_an_updated_term_index_equals_a_rebuild(
    old: dict[str, Text], changes: list[tuple[str, str, Text]]
) -> None:
    new = dict(old)
    for action, doc_id, text in changes:
        if action == "drop":
            new.pop(doc_id, None)
        else:
            new[doc_id] = text
    before, after = graph_of(old), graph_of(new)
    term_index(before)
    carry_over(before, after, change_between(old, new))
    rebuilt = _build_term_index(graph_of(new))
    carried = after.memoised(TERMS_MEMO)
    if isinstance(carried, TermIndex):
        assert_same_index(carried, rebuilt)
    # Carried or not (bodies appearing or vanishing, most documents changed), the index is right.
    assert_same_index(term_index(after), rebuilt)


@pytest.mark.parametrize("layer_share", [0.0, 0.125, 1e9])
@settings(max_examples=120, deadline=None)
@given(corpora, st.lists(edits, min_size=1, max_size=5))
def test_a_chain_of_updates_through_layers_and_folds_equals_a_rebuild_after_every_step(
    layer_share: float, old: dict[str, Text], chain: list[list[tuple[str, str, Text]]]
) -> None:
    # Each refresh layers the postings over the last one's (never folded at 1e9, folded every
    # time at 0): after every step the index answers what a rebuild does.
    previous = graph_of(old)
    term_index(previous)
    current = old
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(incremental, "_LAYER_SHARE", layer_share)
        for changes in chain:
            new = dict(current)
            for action, doc_id, text in changes:
                if action == "drop":
                    new.pop(doc_id, None)
                else:
                    new[doc_id] = text
            successor = carry_over(previous, graph_of(new), change_between(current, new))
            rebuilt = _build_term_index(graph_of(new))
            assert_same_index(term_index(successor), rebuilt)
            assert term_index(successor).title_terms.tolist() == rebuilt.title_terms.tolist()
            previous, current = successor, new


def test_sixty_single_document_refreshes_keep_the_layers_small_and_the_index_exact() -> None:
    documents = {f"d{k:04d}": (f"title w{k % 11}", f"body w{k % 13} v{k % 17}") for k in range(400)}
    graph = graph_of(documents)
    term_index(graph)
    for k in range(60):
        new = dict(documents) | {f"d{k:04d}x": (f"fresh{k} w{k % 5}", "w1 w2")}
        graph = carry_over(graph, graph_of(new), change_between(documents, new))
        documents = new
        postings = term_index(graph).postings
        # Layers never grow past their share of the lists before they are folded.
        assert postings.added is None or postings.added.entries <= 0.125 * len(postings.documents)
    assert_same_index(term_index(graph), _build_term_index(graph_of(documents)))
    assert term_index(graph).postings.layered


def test_one_added_document_updates_the_index_without_a_rebuild() -> None:
    old = {f"d{k:03d}": (f"title w{k % 7}", f"body w{k % 5} ΣΟΦΙΑ") for k in range(200)}
    new = dict(old) | {"d100x": ("fresh note", "w1 naïve"), "d007": ("changed w9", None)}
    del new["d050"]
    before, after = graph_of(old), graph_of(new)
    term_index(before)
    carry_over(before, after, change_between(old, new))
    carried = after.memoised(TERMS_MEMO)
    assert isinstance(carried, TermIndex)
    assert_same_index(carried, _build_term_index(graph_of(new)))
    assert carried.documents_with("fresh").tolist() == [after.index["d100x"]]


def test_a_refreshed_graph_finds_the_ids_its_predecessor_found_without_a_search(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    old = {f"d{k:03d}": (f"title w{k % 7}", None) for k in range(300)}
    new = dict(old) | {"d000a": ("fresh note", None)}
    del new["d150"]
    before, after = graph_of(old), graph_of(new)
    asked = ["d007", "d151", "d299"]
    assert [before.index_of(d) for d in [*asked, "d150"]] == [7, 151, 299, 150]
    carry_over(before, after, change_between(old, new))
    searches: list[object] = []

    def counted(*arguments: object) -> int:
        searches.append(arguments)
        return 0

    monkeypatch.setattr(graph_module, "bisect_left", counted)
    assert [after.index_of(d) for d in asked] == [8, 151, 299]
    assert searches == []


def test_a_change_that_does_not_fit_the_graphs_carries_nothing() -> None:
    old: dict[str, Text] = {f"d{k}": (f"w{k}", None) for k in range(5)}
    new: dict[str, Text] = {f"e{k}": (f"w{k}", None) for k in range(5)}
    before, after = graph_of(old), graph_of(new)
    term_index(before)
    epr(before)
    same_positions = GraphChange(np.arange(5, dtype=np.int64), np.zeros(0, dtype=np.int64))
    carry_over(before, after, same_positions)  # the ids differ: the change is not theirs
    assert after.memo_items() == []
    out_of_order = GraphChange(np.array([1, 0, 2, 3, 4]), np.zeros(0, dtype=np.int64))
    fresh = graph_of(old)
    carry_over(before, fresh, out_of_order)
    assert fresh.memo_items() == []


@pytest.mark.parametrize("before", [{}, {"a": ("alpha", None)}])
def test_a_refresh_to_an_empty_graph_carries_nothing_and_navigates(
    before: Mapping[str, Text],
) -> None:
    # An empty scope (a filter nothing matches) whose cached graph had its EPR computed, then
    # refreshed after a write elsewhere: there is no start vector to seed (it divided by zero).
    old = graph_of(before)
    epr(old)
    after = carry_over(old, graph_of({}), change_between(before, {}))
    assert after.n_documents == 0
    assert len(epr(after).epr) == 0


def random_graph(
    n: int, seed: int, extra: int = 0
) -> tuple[dict[str, Text], list[tuple[str, str, int, float]]]:
    rng = np.random.default_rng(seed)
    documents: dict[str, Text] = {f"n{k:06d}": (f"w{k % 97}", None) for k in range(n + extra)}
    ids = sorted(documents)
    edges = [
        (ids[int(s)], ids[int(t)], int(c), float(w))
        for s, t, c, w in zip(
            rng.integers(0, n, 5 * n),
            rng.integers(0, n, 5 * n),
            rng.integers(0, 5, 5 * n),
            0.05 + 0.95 * rng.random(5 * n),
            strict=True,
        )
    ]
    return documents, edges


def test_a_refreshed_epr_is_within_the_tolerance_of_a_cold_one() -> None:
    documents, edges = random_graph(3000, seed=7)
    before = graph_of(documents, edges)
    epr(before)
    grown = dict(documents) | {"n001500x": ("fresh", None)}
    more = [*edges, ("n001500x", "n000001", 0, 0.5), ("n000002", "n001500x", 4, 0.7)]
    after = carry_over(before, graph_of(grown, more), change_between(documents, grown))
    warm, cold = epr(after), epr(graph_of(grown, more))
    # Each channel stops when a pass moves it less than tol (tol/10 when warm or updated; L1), so
    # each run is within d/(1 − d)·tol of the fixed point: at the defaults within 1e-9 of each other.
    # (The first refresh after a cold run solves the update states of `epr_update`; how few rounds
    # later refreshes take is test_epr_update's.)
    assert float(np.abs(warm.epr - cold.epr).max()) <= 1e-9
    assert float(np.abs(warm.epr_plus - cold.epr_plus).sum()) <= 2e-9
    assert abs(float(warm.epr_plus.sum()) - 1.0) <= 1e-9


@settings(max_examples=60, deadline=None)
@given(
    st.integers(min_value=1, max_value=40),
    st.integers(min_value=0, max_value=3),
    st.integers(min_value=0, max_value=10_000),
    st.sampled_from([0.5, 0.85, 0.95]),
)
def test_warm_and_cold_epr_agree_on_random_graphs(
    n: int, extra: int, seed: int, damping: float
) -> None:
    params = MdnParams(damping=damping)
    documents, edges = random_graph(n, seed)
    before = graph_of(documents, edges)
    epr(before, params)
    grown, _ = random_graph(n, seed, extra)
    grown = {k: v for k, v in grown.items() if k != "n000000" or extra % 2 == 0}
    after = carry_over(before, graph_of(grown, edges), change_between(documents, grown))
    warm, cold = epr(after, params), epr(graph_of(grown, edges), params)
    # Within max_iter passes, that is: a cold run cut off there is not within tol of anything.
    assume(max(cold.iterations, cold.iterations_minus) < params.max_iter)
    # Each run is within d/(1 − d)·(its last step) of the fixed point (L1), the warm one stopping
    # at tol/10: 1e-9 at the defaults (d = 0.85), more for a damping closer to 1.
    bound = 1.1 * (1 + params.distrust_penalty) * damping / (1 - damping) * params.tol
    assert float(np.abs(warm.epr - cold.epr).max()) <= max(bound, 1e-9)


def test_many_new_postings_are_placed_by_one_search_over_all_keys(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(incremental, "_LOOPED_INSERTS", 0)
    test_one_added_document_updates_the_index_without_a_rebuild()


def test_reinforced_weights_update_epr_from_the_graphs_own_and_agree_with_a_cold_run() -> None:
    documents, edges = random_graph(3000, seed=11)
    before = graph_of(documents, edges)
    epr(before)
    ids = sorted(documents)
    plan = [
        EdgeReinforcement(source, target, RELATION_TYPES[code], 0.2)
        for source, target, code, _ in edges[:40]
    ]
    after = apply_reinforcements(before, plan)
    assert not np.array_equal(after.edge_weight, before.edge_weight)
    cold_graph = CorpusGraph.from_arrays(
        ids,
        after.titles,
        bodies=after.bodies,
        edge_source=after.edge_source.astype(np.int64),
        edge_target=after.edge_target.astype(np.int64),
        edge_type=after.edge_type.astype(np.int64),
        edge_weight=after.edge_weight,
    )
    warm, cold = epr(after), epr(cold_graph)
    assert float(np.abs(warm.epr - cold.epr).max()) <= 1e-9
    assert after.memoised(UPDATE_PREFIX + epr_key(DEFAULT_PARAMS)) is not None


def test_ids_in_order_holds_only_for_strings_strictly_ascending() -> None:
    assert ids_in_order(["a", "b", "c\u00e9"])
    assert ids_in_order([])
    assert not ids_in_order(["a", "a"])
    assert not ids_in_order(["b", "a"])
    assert not ids_in_order(["a", 2])
