"""Default navigation (`mode="mdn"`, MDN.md §4.2): signed, weighted, remembered, with restarts."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mnemo_mdn import (
    DEFAULT_PARAMS,
    RELATION_TYPES,
    CorpusGraph,
    Document,
    Edge,
    Memory,
    Outcome,
    ParameterError,
    UnknownSeedError,
    Via,
    apply_memory,
    epr,
    navigate,
)
from mnemo_mdn.frontier import (
    BACKWARD_WEIGHT,
    SCANNED_LOOKUPS,
    EdgeLookup,
    Frontier,
    _grouped,
    adjacency,
    negative_incidence,
)
from mnemo_mdn.mdn_mode import HELD_CREDIT, NAMED_BOOST
from mnemo_mdn.relations import Polarity


def idf(n: int, df: int) -> float:
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


def trust_factor(graph: CorpusGraph, doc_id: str) -> float:
    """φ(d) = 1 + κ·EPR(d)/max|EPR| with κ = 0.5 (no memory, so π = φ)."""
    net = epr(graph).epr
    return float(1.0 + 0.5 * net[graph.index[doc_id]] / abs(net).max())


@pytest.fixture
def fork() -> CorpusGraph:
    """`s` cites two documents about beta, weakly `a` and strongly `b`."""
    return CorpusGraph.build(
        [Document("s", "alpha"), Document("a", "beta"), Document("b", "beta")],
        [Edge("s", "a", "cite", 0.2), Edge("s", "b", "cite", 0.9)],
    )


def test_the_seed_is_found_by_id_then_by_exact_title(contract_corpus: CorpusGraph) -> None:
    assert navigate(contract_corpus, "liability", seed="2", budget=1).path == ("2",)
    assert navigate(contract_corpus, "liability", seed="termination notice", budget=1).path == (
        "2",
    )


def test_an_unknown_seed_fails_instead_of_falling_back(contract_corpus: CorpusGraph) -> None:
    with pytest.raises(UnknownSeedError, match=r"^unknown seed 'nowhere'$"):
        navigate(contract_corpus, "liability", seed="nowhere")
    assert str(UnknownSeedError("x")) == "unknown seed 'x'"


def test_without_a_seed_the_most_relevant_trusted_document_starts_the_walk(
    contract_corpus: CorpusGraph,
) -> None:
    assert navigate(contract_corpus, "termination", budget=1).path == ("2",)


def test_a_query_matching_nothing_gives_an_empty_result_with_the_reason(
    contract_corpus: CorpusGraph,
) -> None:
    walk = navigate(contract_corpus, "zebra")
    assert walk.hits == ()
    assert walk.diagnostics["reason"] == "no document matches the query"
    assert walk.coverage == 0.0
    assert walk.to_json()["trail"] == ""


def test_a_step_takes_the_largest_gain_times_link_strength_times_trust(fork: CorpusGraph) -> None:
    walk = navigate(fork, "alpha beta", seed="s", budget=2)
    assert walk.path == ("s", "b")
    step = walk.hits[1]
    assert step.gain == pytest.approx(idf(3, 2))
    assert step.score == pytest.approx(idf(3, 2) * 0.9 * trust_factor(fork, "b"))
    assert step.via == Via("s", "cite", 0.9)
    assert step.restart is False
    assert walk.traversed == (Edge("s", "b", "cite", 0.9),)


def test_the_seed_reports_its_own_gain_and_the_relevance_times_trust_it_ranks_with(
    fork: CorpusGraph,
) -> None:
    seed = navigate(fork, "alpha beta", seed="s", budget=1).hits[0]
    assert seed.gain == pytest.approx(idf(3, 1))
    # The query names `s` by its title `alpha`: its relevance (1.0) counts 1 + NAMED_BOOST times.
    assert seed.score == pytest.approx((1.0 + NAMED_BOOST) * trust_factor(fork, "s"))
    assert seed.via is None
    assert seed.epr == pytest.approx(float(epr(fork).epr[0]))


def test_a_negative_edge_links_at_half_its_weight() -> None:
    graph = CorpusGraph.build(
        [Document("s", "alpha"), Document("c", "beta"), Document("d", "beta")],
        [Edge("s", "c", "contradict", 0.9), Edge("s", "d", "depend", 0.5)],
    )
    walk = navigate(graph, "beta", seed="s", budget=2)
    assert walk.path == ("s", "d")  # 0.9 · 0.5 < 0.5 · 1, trust aside (c is distrusted anyway)


def test_a_distrusted_document_ranks_below_an_otherwise_equal_one() -> None:
    graph = CorpusGraph.build(
        [
            Document("s", "alpha"),
            Document("b", "beta"),
            Document("a", "beta"),
            Document("z", "zed"),
        ],
        [Edge("s", "b", "cite", 0.5), Edge("s", "a", "cite", 0.5), Edge("z", "b", "supersede", 1)],
    )
    walk = navigate(graph, "alpha beta", seed="s", budget=2)
    assert walk.path == ("s", "a")
    assert walk.hits[1].epr > float(epr(graph).epr[1])


def test_ties_go_to_the_earlier_document() -> None:
    graph = CorpusGraph.build(
        [Document("s", "alpha"), Document("b", "beta"), Document("a", "beta")],
        [Edge("s", "a", "cite", 0.5), Edge("s", "b", "cite", 0.5)],
    )
    assert navigate(graph, "alpha beta", seed="s", budget=2).path == ("s", "b")


def test_when_no_frontier_document_is_informative_the_walk_restarts_from_relevance() -> None:
    graph = CorpusGraph.build(
        [Document("s", "alpha"), Document("x", "unrelated"), Document("g", "gamma")],
        [Edge("s", "x", "cite", 1.0)],
    )
    walk = navigate(graph, "alpha gamma", seed="s", budget=3)
    assert walk.path == ("s", "g")
    assert walk.hits[1].restart is True
    assert walk.hits[1].via is None
    assert walk.diagnostics["reason"] == "no unselected document matches the query"
    assert walk.diagnostics["restarts"] == 1
    assert walk.traversed == ()


def test_a_restart_document_can_be_followed_by_its_own_edges() -> None:
    # A neutral edge leaves EPR symmetric, so g and d tie on relevance and trust; g is earlier.
    graph = CorpusGraph.build(
        [Document("s", "alpha"), Document("g", "gamma"), Document("d", "delta")],
        [Edge("g", "d", "depend", 0.8)],
    )
    walk = navigate(graph, "alpha gamma delta", seed="s", budget=3)
    assert walk.path == ("s", "g", "d")
    assert [hit.restart for hit in walk.hits] == [False, True, False]
    assert walk.hits[2].via == Via("g", "depend", 0.8)


def test_restarts_pick_by_relevance_even_when_the_document_adds_no_new_term() -> None:
    # After `b`, `a` covers nothing new and no edge leads to it; the spec's restart rule only asks
    # for r(a) > 0.
    graph = CorpusGraph.build(
        [Document("s", "alpha"), Document("a", "beta"), Document("b", "beta")],
        [Edge("s", "b", "cite", 0.9)],
    )
    walk = navigate(graph, "alpha beta", seed="s", budget=3)
    assert walk.path == ("s", "b", "a")
    assert walk.hits[2].restart
    assert walk.hits[2].gain == 0.0


def test_a_linked_document_adding_no_new_term_is_a_step_worth_its_held_query_weight(
    fork: CorpusGraph,
) -> None:
    # After `b`, `a` covers nothing new, but `s` cites it: a step valued HELD_CREDIT·q(a)·c·π
    # (trial 15 of bench/README.md), not a restart.
    walk = navigate(fork, "alpha beta", seed="s", budget=3)
    assert walk.path == ("s", "b", "a")
    hit = walk.hits[2]
    assert not hit.restart
    assert hit.gain == 0.0
    assert hit.via == Via("s", "cite", 0.2)
    held = idf(3, 2)  # q(a): `a` holds `beta`, which two of the three documents have
    assert hit.score == pytest.approx(HELD_CREDIT * held * 0.2 * trust_factor(fork, "a"))


def test_the_budget_counts_the_seed_and_stops_the_walk(fork: CorpusGraph) -> None:
    walk = navigate(fork, "alpha beta", seed="s", budget=2)
    assert len(walk.hits) == 2
    assert walk.diagnostics["reason"] == "budget reached"


def test_coverage_is_the_idf_share_of_query_terms_present_in_the_graph(fork: CorpusGraph) -> None:
    only_alpha = navigate(fork, "alpha beta absent", seed="s", budget=1)
    assert only_alpha.coverage == pytest.approx(idf(3, 1) / (idf(3, 1) + idf(3, 2)))
    assert navigate(fork, "alpha beta absent", seed="s", budget=2).coverage == pytest.approx(1.0)
    assert navigate(fork, "alpha beta", seed="s", budget=2).top_similarity == pytest.approx(1.0)


def test_body_text_counts_for_relevance_and_coverage() -> None:
    graph = CorpusGraph.build(
        [Document("a", "title", body="the liability cap"), Document("b", "other")], []
    )
    walk = navigate(graph, "liability")
    assert walk.path == ("a",)
    assert walk.coverage == 1.0


def test_contradicts_lists_selected_documents_joined_by_a_negative_edge_either_way() -> None:
    graph = CorpusGraph.build(
        [Document("a", "alpha"), Document("b", "beta"), Document("c", "gamma")],
        [Edge("a", "b", "cite", 0.9), Edge("c", "a", "contradict", 0.9), Edge("b", "c", "cite", 1)],
    )
    walk = navigate(graph, "alpha beta gamma", seed="a", budget=3)
    assert walk.path == ("a", "b", "c")
    assert [hit.contradicts for hit in walk.hits] == [("c",), (), ("a",)]


def test_direction_both_follows_edges_backwards_and_reports_the_stored_edge() -> None:
    graph = CorpusGraph.build(
        [Document("a", "alpha"), Document("b", "beta")], [Edge("b", "a", "cite", 0.6)]
    )
    forward = navigate(graph, "alpha beta", seed="a", budget=2)
    assert forward.hits[1].restart
    both = navigate(graph, "alpha beta", seed="a", budget=2, direction="both")
    assert both.hits[1].via == Via("a", "cite", 0.6)
    assert both.traversed == (Edge("b", "a", "cite", 0.6),)


def test_navigation_json_has_the_cli_shape(fork: CorpusGraph) -> None:
    payload = navigate(fork, "alpha beta", seed="s", budget=2).to_json()
    assert list(payload) == ["hits", "trail", "coverage", "diagnostics"]
    hit = payload["hits"][1]  # type: ignore[index]  # a list of dicts, by construction
    assert list(hit) == ["id", "title", "score", "gain", "epr", "via", "restart", "contradicts"]
    assert hit["via"] == {"from": "s", "etype": "cite", "weight": 0.9}
    assert payload["trail"] == "alpha (Δ=0.98) → beta (Δ=0.47)"
    diagnostics = payload["diagnostics"]
    assert isinstance(diagnostics, dict)
    assert diagnostics["skipped_edges"] == 0
    assert diagnostics["reason"] == "budget reached"


def test_skipped_edges_of_the_graph_are_reported_with_the_navigation() -> None:
    graph = CorpusGraph.build([Document("a", "alpha")], [Edge("a", "missing", "cite", 0.5)])
    assert navigate(graph, "alpha").diagnostics["skipped_edges"] == 1


def test_an_empty_graph_navigates_to_nothing_with_a_reason() -> None:
    walk = navigate(CorpusGraph.build([], []), "anything")
    assert walk.hits == ()
    assert walk.diagnostics["reason"] == "the graph has no documents"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"budget": 0}, "budget must be an integer >= 1"),
        ({"budget": 2.0}, "budget must be an integer >= 1"),
        ({"mode": "fast"}, "mode must be 'axon' or 'mdn'"),
        ({"direction": "in"}, "direction must be 'out' or 'both'"),
    ],
)
def test_bad_navigation_arguments_are_parameter_errors(
    fork: CorpusGraph, arguments: dict[str, object], message: str
) -> None:
    with pytest.raises(ParameterError, match=message):
        navigate(fork, "alpha", **arguments)  # type: ignore[arg-type]  # wrong on purpose


def test_memory_reinforced_edges_change_link_strength_and_the_epr_used() -> None:
    graph = CorpusGraph.build(
        [Document("1", "alpha"), Document("2", "beta"), Document("3", "beta")],
        [Edge("1", "2", "cite", 0.5), Edge("1", "3", "cite", 0.5)],
    )
    history = (Outcome(("1", "3"), 1.0, 1), Outcome(("1", "2"), 0.0, 1))
    assert navigate(graph, "alpha beta", seed="1", budget=2).path == ("1", "2")
    remembered = navigate(graph, "alpha beta", seed="1", budget=2, memory=Memory(history))
    assert remembered.path == ("1", "3")
    via = remembered.hits[1].via
    assert via is not None
    assert via.weight == pytest.approx(0.55)
    expected_epr = epr(apply_memory(graph, history)).epr
    assert remembered.hits[1].epr == pytest.approx(float(expected_epr[2]))


def test_persisted_weights_are_not_reinforced_twice_but_the_bias_still_applies() -> None:
    graph = CorpusGraph.build(
        [Document("1", "alpha"), Document("2", "beta"), Document("3", "beta")],
        [Edge("1", "2", "cite", 0.5), Edge("1", "3", "cite", 0.5)],
    )
    history = (Outcome(("3",), 1.0, 0), Outcome(("2",), 0.0, 1))
    walk = navigate(
        graph, "alpha beta", seed="1", budget=2, memory=Memory(history, persisted_weights=True)
    )
    assert walk.path == ("1", "3")  # procedural bias: 3 was part of a good outcome
    assert walk.hits[1].via == Via("1", "cite", 0.5)
    assert walk.hits[1].epr == pytest.approx(float(epr(graph).epr[2]))


def test_negative_incidence_lists_exactly_the_distrust_edges_touching_each_document() -> None:
    rng = np.random.default_rng(4)
    n, m = 60, 400
    ids = [f"d{k:02d}" for k in range(n)]
    source, target = rng.integers(0, n, m), rng.integers(0, n, m)
    etype = rng.integers(0, len(RELATION_TYPES), m)
    graph = CorpusGraph.from_arrays(
        ids,
        ids,
        edge_source=source,
        edge_target=target,
        edge_type=etype,
        edge_weight=np.full(m, 0.5),
    )
    incidence = negative_incidence(graph)
    for document in range(n):
        expected = {
            k
            for k in range(m)
            if graph.edge_polarity[k] == Polarity.NEGATIVE
            and document in (graph.edge_source[k], graph.edge_target[k])
        }
        assert set(incidence.of(document).tolist()) == expected


@settings(max_examples=60, deadline=None)
@given(
    keys=st.lists(st.integers(0, 7), max_size=60),
    asked=st.lists(st.integers(0, 7), min_size=SCANNED_LOOKUPS + 4, max_size=SCANNED_LOOKUPS + 20),
)
def test_an_edge_lookup_answers_what_the_grouped_lists_do_before_and_after_it_groups(
    keys: list[int], asked: list[int]
) -> None:
    column = np.array(keys, dtype=np.int64)
    values = np.arange(100, 100 + 2 * len(keys), 2, dtype=np.int64)[::-1].copy()
    grouped_edges = _grouped(column, np.arange(len(keys), dtype=np.int64), 8)
    grouped_values = _grouped(column, values, 8)
    by_edge, by_value = EdgeLookup(column, None, 8), EdgeLookup(column, values, 8)
    for document in asked:  # past SCANNED_LOOKUPS: the first answers scan, the rest are grouped
        assert by_edge.of(document).tolist() == grouped_edges.of(document).tolist()
        assert by_value.of(document).tolist() == grouped_values.of(document).tolist()
        assert by_edge.of(document).dtype == np.int64


def test_a_graphs_adjacency_lists_each_documents_edges_in_edge_order() -> None:
    rng = np.random.default_rng(9)
    n, m = 40, 300
    ids = [f"d{k:02d}" for k in range(n)]
    graph = CorpusGraph.from_arrays(
        ids,
        ids,
        edge_source=rng.integers(0, n, m),
        edge_target=rng.integers(0, n, m),
        edge_type=rng.integers(0, len(RELATION_TYPES), m),
        edge_weight=np.full(m, 0.5),
    )
    for _ in range(2):  # the first pass scans, the second reads the groups
        for document in range(n):
            outgoing = adjacency(graph, "source").of(document).tolist()
            incoming = adjacency(graph, "target").of(document).tolist()
            assert outgoing == [k for k in range(m) if graph.edge_source[k] == document]
            assert incoming == [k for k in range(m) if graph.edge_target[k] == document]


def test_an_edge_followed_against_its_direction_counts_a_quarter_of_its_weight() -> None:
    # `f` cites `s` (1.0) and `s` cites `d` (0.4): from `s`, walking both ways, `d` is the
    # stronger link (0.4 against 1.0·BACKWARD_WEIGHT), trial 1 of bench/README.md.
    graph = CorpusGraph.build(
        [Document("s", "alpha"), Document("f", "beta"), Document("d", "beta")],
        [Edge("f", "s", "cite", 1.0), Edge("s", "d", "cite", 0.4)],
    )
    frontier = Frontier(graph, "both", DEFAULT_PARAMS.negative_link_factor)
    frontier.add(graph.index["s"])
    assert BACKWARD_WEIGHT == 0.25
    assert frontier.strength[graph.index["f"]] == pytest.approx(0.25)
    assert frontier.strength[graph.index["d"]] == pytest.approx(0.4)
    walk = navigate(graph, "alpha beta", seed="s", budget=2, direction="both")
    assert walk.path == ("s", "d")
    assert walk.hits[1].via == Via("s", "cite", 0.4)
