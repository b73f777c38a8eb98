"""Parity navigation (`mode="axon"`, MDN.md §4.1): the reference runtime's walks, exactly."""

from __future__ import annotations

import pytest
from mnemo_mdn import CorpusGraph, Document, Edge, navigate


def test_parity_query_liability_cap_reaches_the_liability_document(
    contract_corpus: CorpusGraph,
) -> None:
    walk = navigate(contract_corpus, "liability cap", seed="intro overview", budget=3, mode="axon")
    assert walk.output == "intro overview\nliability limitation cap"
    assert walk.trail == "intro overview (Δ=0.00) → liability limitation cap (Δ=2.00)"
    assert [hit.gain for hit in walk.hits] == [0.0, 2.0]
    assert walk.coverage == 1.0


def test_parity_query_termination_liability_selects_all_three_breaking_the_tie_by_order(
    contract_corpus: CorpusGraph,
) -> None:
    walk = navigate(
        contract_corpus, "termination liability", seed="intro overview", budget=3, mode="axon"
    )
    assert walk.output == "intro overview\nliability limitation cap\ntermination notice"
    assert [hit.gain for hit in walk.hits] == [0.0, 1.0, 1.0]
    assert walk.trail == (
        "intro overview (Δ=0.00) → liability limitation cap (Δ=1.00) → termination notice (Δ=1.00)"
    )
    assert walk.coverage == pytest.approx(2 / 3)
    assert walk.diagnostics["reason"] == "budget reached"


def test_parity_query_intro_returns_the_seed_alone(contract_corpus: CorpusGraph) -> None:
    walk = navigate(contract_corpus, "intro", seed="intro overview", budget=3, mode="axon")
    assert walk.output == "intro overview"
    assert walk.trail == "intro overview (Δ=0.00)"
    assert walk.coverage == 0.0
    assert walk.diagnostics["reason"] == "no informative document in the frontier"


def test_parity_falls_back_to_the_first_document_for_an_unknown_seed(
    contract_corpus: CorpusGraph,
) -> None:
    walk = navigate(contract_corpus, "liability", seed="no such title", mode="axon")
    assert walk.path[0] == "0"
    assert navigate(contract_corpus, "liability", mode="axon").path == ("0", "1")


def test_parity_ignores_weights_and_follows_edge_direction() -> None:
    graph = CorpusGraph.build(
        [Document("s", "start"), Document("w", "weak alpha"), Document("x", "strong alpha")],
        [Edge("s", "w", "cite", 0.01), Edge("s", "x", "cite", 1.0), Edge("w", "s", "cite", 1)],
    )
    assert navigate(graph, "alpha", seed="start", mode="axon").path == ("s", "w")
    backwards = navigate(graph, "start", seed="weak alpha", mode="axon")
    assert backwards.path == ("w", "s")


def test_parity_ends_on_an_empty_frontier() -> None:
    graph = CorpusGraph.build([Document("a", "alpha"), Document("b", "beta")], [])
    walk = navigate(graph, "beta", mode="axon")
    assert walk.path == ("a",)
    assert walk.diagnostics["reason"] == "the frontier is empty"


def test_parity_traversed_edges_join_consecutive_selected_documents(
    contract_corpus: CorpusGraph,
) -> None:
    walk = navigate(
        contract_corpus, "termination liability", seed="intro overview", budget=3, mode="axon"
    )
    # 1 → 2 is not an edge: the reference reinforces only edges joining consecutive documents.
    assert walk.traversed == (Edge("0", "1", "cite", 0.9),)


def test_parity_with_direction_both_follows_edges_backwards() -> None:
    graph = CorpusGraph.build(
        [Document("a", "alpha"), Document("b", "beta")], [Edge("b", "a", "cite", 0.5)]
    )
    assert navigate(graph, "beta", seed="alpha", mode="axon").path == ("a",)
    walk = navigate(graph, "beta", seed="alpha", mode="axon", direction="both")
    assert walk.path == ("a", "b")
    assert walk.traversed == (Edge("b", "a", "cite", 0.5),)
