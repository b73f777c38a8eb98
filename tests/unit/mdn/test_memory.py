"""Memory (MDN.md §5): batch reinforcement, the incremental plan, the baseline, procedural bias."""

from __future__ import annotations

import pytest
from mnemo_mdn import (
    CorpusGraph,
    Document,
    Edge,
    EdgeReinforcement,
    MdnParams,
    Outcome,
    ParameterError,
    apply_memory,
    apply_reinforcements,
    baseline,
    bias_vector,
    navigate,
    procedural_bias,
    reinforcement_plan,
)


def weights(graph: CorpusGraph) -> dict[str, float]:
    return {f"{edge.source}→{edge.target}": edge.weight for edge in graph.edges}


def test_apply_memory_matches_the_batch_reference(memory_graph: CorpusGraph) -> None:
    history = [Outcome(("1", "2"), 1.0, sequence=0), Outcome(("1", "3"), 0.0, sequence=0)]
    assert weights(apply_memory(memory_graph, history)) == pytest.approx(
        {"1→2": 0.55, "1→3": 0.45, "2→4": 0.50}, abs=1e-12
    )


def test_apply_memory_leaves_untouched_edges_exactly_and_never_changes_the_structure(
    memory_graph: CorpusGraph,
) -> None:
    reinforced = apply_memory(memory_graph, [Outcome(("1", "2"), 1.0), Outcome(("4",), 0.0)])
    assert reinforced.ids == memory_graph.ids
    assert [(e.source, e.target, e.etype) for e in reinforced.edges] == [
        (e.source, e.target, e.etype) for e in memory_graph.edges
    ]
    assert reinforced.edges[2].weight == 0.5
    assert reinforced.edges[1].weight == 0.5


def test_apply_memory_decays_older_outcomes(memory_graph: CorpusGraph) -> None:
    history = [Outcome(("1", "2"), 1.0, sequence=3), Outcome(("1", "3"), 0.0, sequence=5)]
    # s̄ = 0.5; 1→2 is two outcomes old: Δ = 0.1 · 0.5 · 0.95².
    assert weights(apply_memory(memory_graph, history))["1→2"] == pytest.approx(
        0.5 + 0.05 * 0.95**2
    )


def test_apply_memory_floors_and_caps_reinforced_weights() -> None:
    graph = CorpusGraph.build(
        [Document("a", "A"), Document("b", "B"), Document("c", "C")],
        [Edge("a", "b", "cite", 0.99), Edge("a", "c", "cite", 0.002)],
    )
    history = [Outcome(("a", "b"), 1.0), Outcome(("a", "c"), 0.0)]
    reinforced = weights(apply_memory(graph, history, MdnParams(learning_rate=1.0)))
    assert reinforced == {"a→b": 1.0, "a→c": 0.001}


def test_apply_memory_uses_only_the_last_h_outcomes(memory_graph: CorpusGraph) -> None:
    history = [Outcome(("1", "3"), 0.0), Outcome(("1", "2"), 1.0), Outcome(("1", "2"), 0.5)]
    only_two = apply_memory(memory_graph, history, MdnParams(horizon=2))
    # s̄ = 0.75; 1→2 gets 0.1·(0.25 − 0.25) = 0 and 1→3 is outside the window.
    assert weights(only_two) == {"1→2": 0.5, "1→3": 0.5, "2→4": 0.5}


def test_the_incremental_plan_replays_the_three_navigation_reference(
    memory_graph: CorpusGraph,
) -> None:
    graph, scores = memory_graph, []
    plans = []
    for path, score in ((("1", "2"), 1.0), (("1", "3"), 0.0), (("1", "2"), 1.0)):
        scores.append(score)
        traversed = [Edge(path[0], path[1], "cite", 0.5)]
        plan = reinforcement_plan(traversed, score, baseline(scores))
        plans.append(plan)
        graph = apply_reinforcements(graph, plan)
        if len(plans) == 2:
            assert weights(graph)["1→3"] == pytest.approx(0.45, abs=1e-12)
    assert plans[0] == []  # the first navigation of a scope writes nothing (s̄ = s)
    [update] = plans[1]
    assert (update.source, update.target, update.etype) == ("1", "3", "cite")
    assert update.delta == pytest.approx(-0.05, abs=1e-12)
    assert weights(graph) == pytest.approx(
        {"1→2": 0.5 + 0.1 / 3, "1→3": 0.45, "2→4": 0.5}, abs=1e-12
    )


def test_the_baseline_is_the_mean_of_the_last_h_scores() -> None:
    assert baseline([1.0, 0.0, 1.0]) == pytest.approx(2 / 3)
    assert baseline([0.0, 1.0, 1.0], MdnParams(horizon=2)) == 1.0
    with pytest.raises(ParameterError, match="at least one score"):
        baseline([])


def test_reinforcing_a_navigation_writes_its_traversed_edges_once(fork_graph: CorpusGraph) -> None:
    walk = navigate(fork_graph, "alpha beta", seed="s", budget=2)
    plan = reinforcement_plan(walk.traversed, walk.coverage, baseline([0.0, walk.coverage]))
    assert len(plan) == 1
    assert plan[0] == EdgeReinforcement("s", "b", "cite", plan[0].delta)
    assert plan[0].delta == pytest.approx(0.1 * (walk.coverage - walk.coverage / 2))


def test_procedural_bias_matches_the_reference_with_decay_off() -> None:
    bias = procedural_bias(
        [Outcome(("1", "2"), 1.0, 0), Outcome(("3",), 0.1, 1)], MdnParams(decay=1.0)
    )
    # Printed with six decimals in the spec; exactly 1/2.1, 1/2.1 and 0.1/2.1.
    assert bias == pytest.approx({"1": 0.476190, "2": 0.476190, "3": 0.047619}, abs=5e-7)
    assert bias == pytest.approx({"1": 1 / 2.1, "2": 1 / 2.1, "3": 0.1 / 2.1}, abs=1e-12)


def test_procedural_bias_decays_with_the_number_of_newer_outcomes() -> None:
    bias = procedural_bias([Outcome(("a",), 1.0, 0), Outcome(("b",), 1.0, 1)])
    assert bias["a"] / bias["b"] == pytest.approx(0.95)
    assert procedural_bias([Outcome(("a",), 0.0)]) == {"a": 0.0}
    assert procedural_bias([]) == {}


def test_the_bias_vector_is_normalised_to_a_largest_value_of_one(
    memory_graph: CorpusGraph,
) -> None:
    vector = bias_vector(memory_graph, [Outcome(("1", "2"), 1.0), Outcome(("2", "zz"), 1.0)])
    assert vector.tolist() == [0.5, 1.0, 0.0, 0.0]


@pytest.fixture
def fork_graph() -> CorpusGraph:
    return CorpusGraph.build(
        [Document("s", "alpha"), Document("a", "beta"), Document("b", "beta")],
        [Edge("s", "a", "cite", 0.2), Edge("s", "b", "cite", 0.9)],
    )


def test_apply_memory_reinforces_the_edge_each_hit_was_reached_by_not_consecutive_pairs(
    fork_graph: CorpusGraph,
) -> None:
    walk = navigate(fork_graph, "alpha beta", seed="s", budget=3)
    assert walk.path == ("s", "b", "a")
    assert [(hit.id, hit.via.source if hit.via else None) for hit in walk.hits] == [
        ("s", None),
        ("b", "s"),
        ("a", "s"),
    ]
    history = [
        Outcome(walk.path, 1.0, sequence=0, traversed=walk.traversed),
        Outcome(("s",), 0.0, sequence=0, traversed=()),
    ]
    # s̄ = 0.5: both edges the walk followed get Δ = 0.1 · 0.5, the pair b → a joins nothing.
    assert weights(apply_memory(fork_graph, history)) == pytest.approx(
        {"s→a": 0.25, "s→b": 0.95}, abs=1e-12
    )


def test_apply_memory_keys_traversed_edges_by_type_and_follows_backward_steps() -> None:
    graph = CorpusGraph.build(
        [Document("s", "alpha"), Document("a", "beta")],
        [Edge("a", "s", "cite", 0.5), Edge("a", "s", "elaborate", 0.5)],
    )
    history = [
        Outcome(("s", "a"), 1.0, traversed=(Edge("a", "s", "cite", 0.5),)),
        Outcome(("s",), 0.0, traversed=()),
    ]
    reinforced = apply_memory(graph, history)
    assert {e.etype: e.weight for e in reinforced.edges} == pytest.approx(
        {"cite": 0.55, "elaborate": 0.5}, abs=1e-12
    )
