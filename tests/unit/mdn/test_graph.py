"""The corpus graph (MDN.md §1): read rules with counted diagnostics, document order, constructors."""

from __future__ import annotations

import math

import mnemo_mdn.graph as graph_module
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mnemo_mdn import (
    RELATION_TYPES,
    CorpusGraph,
    Document,
    Edge,
    GraphDiagnostics,
    GraphFormatError,
    Polarity,
    polarity_of,
)
from mnemo_mdn.graph import AscendingIndex


def test_the_catalog_is_closed_with_the_spec_polarities() -> None:
    assert set(RELATION_TYPES) == {
        "cite",
        "elaborate",
        "corroborate",
        "contradict",
        "supersede",
        "depend",
        "implement",
        "exemplify",
    }
    assert {t for t in RELATION_TYPES if polarity_of(t) is Polarity.POSITIVE} == {
        "cite",
        "elaborate",
        "corroborate",
    }
    assert {t for t in RELATION_TYPES if polarity_of(t) is Polarity.NEGATIVE} == {
        "contradict",
        "supersede",
    }


def test_edges_breaking_a_read_rule_are_skipped_and_counted_never_silently() -> None:
    graph = CorpusGraph.build(
        [Document("a", "A"), Document("b", "B")],
        [
            Edge("a", "b", "cite", 0.5),
            Edge("a", "ghost", "cite", 0.5),
            Edge("a", "b", "likes", 0.5),
            Edge("a", "b", "cite", math.nan),
            Edge("a", "b", "cite", math.inf),
            Edge("b", "a", "contradict", 3.0),
            Edge("b", "b", "depend", 0.0),
        ],
    )
    assert graph.diagnostics == GraphDiagnostics(
        unknown_endpoint=1, unknown_type=1, non_finite_weight=2, clamped_weight=2
    )
    assert graph.diagnostics.skipped_edges == 4
    assert graph.edges == (
        Edge("a", "b", "cite", 0.5),
        Edge("b", "a", "contradict", 1.0),
        Edge("b", "b", "depend", 1e-9),
    )


def test_an_edge_breaking_several_rules_is_counted_once_for_the_first() -> None:
    graph = CorpusGraph.build([Document("a", "A")], [Edge("a", "ghost", "likes", math.nan)])
    assert graph.diagnostics.to_json() == {
        "skipped_edges": 1,
        "skipped": {"unknown_endpoint": 1, "unknown_type": 0, "non_finite_weight": 0},
        "clamped_weights": 0,
    }


def test_declared_order_keeps_the_documents_as_given() -> None:
    graph = CorpusGraph.build([Document("b", "B"), Document("a", "A")], [])
    assert graph.ids == ("b", "a")


def test_id_order_sorts_documents_by_id_in_byte_order_and_remaps_edges() -> None:
    graph = CorpusGraph.build(
        [Document("é", "E"), Document("b", "B"), Document("B", "upper"), Document("a", "A")],
        [Edge("é", "a", "cite", 0.4)],
        order="id",
    )
    assert graph.ids == tuple(sorted(["é", "b", "B", "a"], key=lambda s: s.encode()))
    assert graph.ids == ("B", "a", "b", "é")
    assert graph.titles == ("upper", "A", "B", "E")
    assert graph.edges == (Edge("é", "a", "cite", 0.4),)
    assert graph.index == {"B": 0, "a": 1, "b": 2, "é": 3}


def test_parallel_edges_and_self_loops_are_kept() -> None:
    edges = [Edge("a", "b", "cite", 0.2), Edge("a", "b", "cite", 0.2), Edge("a", "a", "depend", 1)]
    graph = CorpusGraph.build([Document("a", "A"), Document("b", "B")], edges)
    assert graph.edges == tuple(edges)


def test_documents_keep_body_priors_and_epistemic_level() -> None:
    doc = Document("a", "A", body="text", depth=2.0, recency=0.25, level="know")
    assert CorpusGraph.build([doc], []).documents == (doc,)
    assert Document("x", "X").level == "believe"


def test_a_duplicate_id_is_a_format_error_naming_it() -> None:
    with pytest.raises(GraphFormatError, match="document id 'a' appears twice"):
        CorpusGraph.build([Document("a", "A"), Document("a", "again")], [])


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (Document("a", "A", depth=-1.0), "document 'a': depth must be a finite number >= 0"),
        (Document("a", "A", depth=math.inf), "depth must be a finite number >= 0"),
        (Document("a", "A", recency=1.5), "document 'a': recency must be in \\[0, 1\\]"),
        (Document("a", "A", recency=math.nan), "recency must be in \\[0, 1\\]"),
    ],
)
def test_priors_outside_their_domain_are_format_errors(document: Document, message: str) -> None:
    with pytest.raises(GraphFormatError, match=message):
        CorpusGraph.build([document], [])


def test_from_arrays_reads_columns_with_codes_and_counts_unknown_indexes() -> None:
    graph = CorpusGraph.from_arrays(
        ["x", "y", "z"],
        ["X", "Y", "Z"],
        bodies=["body x", None, None],
        depth=np.array([0.0, 1.0, 2.0]),
        edge_source=np.array([0, 1, -1, 2, 0], dtype=np.int32),
        edge_target=np.array([1, 2, 0, 7, 2], dtype=np.int32),
        edge_type=np.array([0, 2, 0, 0, 42], dtype=np.int8),
        edge_weight=np.array([0.5, 2.0, 0.5, 0.5, 0.5]),
    )
    assert graph.diagnostics == GraphDiagnostics(
        unknown_endpoint=2, unknown_type=1, clamped_weight=1
    )
    assert graph.edges == (Edge("x", "y", "cite", 0.5), Edge("y", "z", "contradict", 1.0))
    assert graph.bodies == ("body x", None, None)
    assert graph.recency.tolist() == [0.5, 0.5, 0.5]
    assert graph.depth.tolist() == [0.0, 1.0, 2.0]


def test_from_arrays_accepts_type_names_and_nan_weights() -> None:
    graph = CorpusGraph.from_arrays(
        ["x", "y"],
        ["X", "Y"],
        edge_source=[0, 1, 0],
        edge_target=[1, 0, 0],
        edge_type=np.array(["elaborate", "supersede", "nope"]),
        edge_weight=[0.3, math.nan, 0.3],
    )
    assert graph.edges == (Edge("x", "y", "elaborate", 0.3),)
    assert graph.diagnostics.non_finite_weight == 1
    assert graph.diagnostics.unknown_type == 1


def test_from_arrays_with_id_order_sorts_and_remaps_edges() -> None:
    graph = CorpusGraph.from_arrays(
        ["m", "c", "x"],
        ["M", "C", "X"],
        depth=[1.0, 2.0, 3.0],
        edge_source=[0],
        edge_target=[2],
        edge_type=["cite"],
        edge_weight=[0.7],
        order="id",
    )
    assert graph.ids == ("c", "m", "x")
    assert graph.depth.tolist() == [2.0, 1.0, 3.0]
    assert graph.edges == (Edge("m", "x", "cite", 0.7),)


def test_from_arrays_does_not_share_or_freeze_the_callers_arrays() -> None:
    weights = np.array([0.5])
    graph = CorpusGraph.from_arrays(
        ["a", "b"], ["A", "B"], edge_source=[0], edge_target=[1], edge_type=[0], edge_weight=weights
    )
    weights[0] = 0.9
    assert weights.flags.writeable
    assert graph.edge_weight.tolist() == [0.5]
    assert not graph.edge_weight.flags.writeable


def test_from_arrays_rejects_columns_of_different_lengths() -> None:
    with pytest.raises(GraphFormatError, match="titles has 1 entries for 2 document ids"):
        CorpusGraph.from_arrays(["a", "b"], ["A"])
    with pytest.raises(GraphFormatError, match="edge_weight has 0 entries for 1 edge sources"):
        CorpusGraph.from_arrays(["a"], ["A"], edge_source=[0], edge_target=[0], edge_type=[0])


def test_from_arrays_rejects_non_integer_endpoints_and_non_string_ids() -> None:
    with pytest.raises(GraphFormatError, match="edge_source must be a one-dimensional integer"):
        CorpusGraph.from_arrays(
            ["a"], ["A"], edge_source=[0.5], edge_target=[0], edge_type=[0], edge_weight=[1.0]
        )
    with pytest.raises(GraphFormatError, match="document id at position 1 must be a string"):
        CorpusGraph.from_arrays(["a", 7], ["A", "B"])  # type: ignore[list-item]  # the bad input under test


def test_with_edge_weights_changes_only_weights_and_shares_the_structure(
    memory_graph: CorpusGraph,
) -> None:
    _ = memory_graph.index
    reweighted = memory_graph.with_edge_weights([0.1, 0.2, 0.3])
    assert [edge.weight for edge in reweighted.edges] == [0.1, 0.2, 0.3]
    assert reweighted.ids == memory_graph.ids
    assert reweighted.index is memory_graph.index
    assert [edge.weight for edge in memory_graph.edges] == [0.5, 0.5, 0.5]


# -- the id index of a graph whose ids arrive sorted (a store graph's) ----------------------------

id_text = st.text(alphabet=st.characters(codec="utf-8"), max_size=6)


@given(st.sets(id_text, max_size=40), st.lists(id_text | st.integers() | st.none(), max_size=20))
def test_an_ascending_index_finds_exactly_what_a_dict_of_every_id_finds(
    ids: set[str], probes: list[object]
) -> None:
    ordered = tuple(sorted(ids))
    searched, full = AscendingIndex(ordered), {doc_id: k for k, doc_id in enumerate(ordered)}
    for probe in [*probes, *ordered, *ordered]:  # twice: the second lookup is a found one
        assert searched.get(probe) == full.get(probe)  # type: ignore[arg-type, call-overload]
        assert (probe in searched) == (probe in full)
    assert list(searched) == list(full)
    assert len(searched) == len(full)


def test_a_graph_with_ids_in_ascending_order_searches_them_instead_of_indexing_every_id() -> None:
    ids = [f"d{k:05d}" for k in range(1000)]
    graph = CorpusGraph.from_arrays(ids, ids, order="id", ids_ascending=True)
    assert isinstance(graph.index, AscendingIndex)
    assert [graph.index_of(doc_id) for doc_id in ids[::97]] == list(range(0, 1000, 97))
    assert graph.index_of("d99999") is None
    assert isinstance(graph.with_edge_weights([]).index, AscendingIndex)
    # Ids not in order are sorted by the build (order="id") or kept as declared: a dict then.
    shuffled = CorpusGraph.from_arrays(ids[::-1], ids[::-1], order="declared")
    assert isinstance(shuffled.index, dict)
    assert shuffled.index_of("d00000") == 999


@given(
    st.sets(id_text, min_size=1, max_size=40),
    st.sets(id_text, max_size=10),
    st.data(),
)
def test_an_index_carried_to_a_changed_graph_finds_exactly_what_a_dict_of_its_ids_finds(
    ids: set[str], added: set[str], data: st.DataObject
) -> None:
    before = tuple(sorted(ids))
    removed = set(data.draw(st.lists(st.sampled_from(before), max_size=10)))
    after = tuple(sorted((ids - removed) | added))
    # Where each old id went (-1: removed, or wrong on purpose for a drawn few: a carry checks).
    moved = np.array([after.index(d) if d in after else -1 for d in before], dtype=np.int64)
    if data.draw(st.booleans()) and len(after) > 1:
        moved[data.draw(st.integers(0, len(before) - 1))] = data.draw(
            st.integers(0, len(after) - 1)
        )
    previous = AscendingIndex(before)
    for probe in data.draw(st.lists(st.sampled_from(before), max_size=20)):
        previous.get(probe)
    carried = AscendingIndex(after)
    carried.carry(previous, moved)
    full = {doc_id: k for k, doc_id in enumerate(after)}
    for probe in [*before, *after, *added]:
        assert carried.get(probe) == full.get(probe)


def test_a_carried_index_searches_none_of_the_ids_its_predecessor_found(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    before = tuple(f"d{k:05d}" for k in range(0, 2000, 2))
    after = tuple(sorted((*before[1:], "d00001")))  # one id gone, one new before the others
    moved = np.array([-1, *range(1, len(before))], dtype=np.int64)
    previous = AscendingIndex(before)
    asked = before[1::7]
    assert [previous[d] for d in asked] == [before.index(d) for d in asked]
    carried = AscendingIndex(after)
    carried.carry(previous, moved)
    searches = []

    def counted(*arguments: object) -> int:
        searches.append(arguments)
        return 0

    monkeypatch.setattr(graph_module, "bisect_left", counted)
    assert [carried[d] for d in asked] == [after.index(d) for d in asked]
    assert searches == []
