"""Signed EPR (MDN.md §2): the spec's reference values, its stop rule and its properties."""

from __future__ import annotations

import random
from typing import TypedDict

import mnemo_mdn.signed_pagerank as signed_pagerank
import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mnemo_mdn import (
    POLARITY,
    RELATION_TYPES,
    CorpusGraph,
    Document,
    Edge,
    MdnParams,
    Polarity,
    epr,
    teleport_vector,
)

from .graph_strategies import GraphSpec, graph_specs


class EdgeArrays(TypedDict):
    """The edge columns `CorpusGraph.from_arrays` takes as keywords."""

    edge_source: npt.ArrayLike
    edge_target: npt.ArrayLike
    edge_type: npt.ArrayLike
    edge_weight: npt.ArrayLike


REFERENCE_TOLERANCE = 1e-9


def literal_spec_epr(spec: GraphSpec, params: MdnParams) -> tuple[list[float], list[float], int]:
    """MDN.md §2 written out with Python loops, as the oracle for the vectorised engine."""
    ids = [doc.id for doc in spec.documents]
    n = len(ids)
    position = {doc_id: k for k, doc_id in enumerate(ids)}

    def teleport(raw: list[float]) -> list[float]:
        floored = [max(value, 0.0) + 1e-9 for value in raw]
        total = sum(floored)
        return [value / total for value in floored]

    def channel(polarity: Polarity, u: list[float]) -> tuple[list[float], int]:
        rows = [[0.0] * n for _ in range(n)]
        for edge in spec.edges:
            if POLARITY[edge.etype] == polarity:
                rows[position[edge.source]][position[edge.target]] += edge.weight
        sums = [sum(row) for row in rows]
        d = params.damping
        x = [1.0 / n] * n
        iteration = 0
        for iteration in range(1, params.max_iter + 1):  # noqa: B007 (the count is the result)
            dangling = sum(x[j] for j in range(n) if sums[j] == 0.0)
            following = [
                (1 - d) * u[i]
                + d * dangling / n
                + d * sum(x[j] * rows[j][i] / sums[j] for j in range(n) if sums[j] > 0.0)
                for i in range(n)
            ]
            delta = sum(abs(following[i] - x[i]) for i in range(n))
            x = following
            if delta < params.tol:
                break
        return x, iteration

    plus, iterations = channel(
        Polarity.POSITIVE, teleport([1.0 / (doc.depth + 1.0) for doc in spec.documents])
    )
    minus, _ = channel(Polarity.NEGATIVE, teleport([doc.recency for doc in spec.documents]))
    return plus, minus, iterations


def test_epr_matches_reference_example_a(example_a: CorpusGraph) -> None:
    result = epr(example_a, MdnParams(distrust_penalty=0.5))
    assert result.iterations == 42
    assert result.epr_plus == pytest.approx(
        [0.5947775628, 0.2094294004, 0.1957930368], abs=REFERENCE_TOLERANCE
    )
    assert result.epr_minus == pytest.approx(
        [0.2093906095, 0.4889110889, 0.3016983016], abs=REFERENCE_TOLERANCE
    )
    assert result.epr == pytest.approx(
        [0.4900822581, -0.0350261440, 0.0449438860], abs=REFERENCE_TOLERANCE
    )


def test_epr_matches_reference_example_b_session_knowledge(session_knowledge: CorpusGraph) -> None:
    result = epr(session_knowledge)
    assert result.iterations == 33
    assert result.epr_plus == pytest.approx(
        [0.4744121715, 0.3411710466, 0.1844167819], abs=REFERENCE_TOLERANCE
    )
    assert result.epr_minus == pytest.approx(
        [0.4805194805, 0.2597402597, 0.2597402597], abs=REFERENCE_TOLERANCE
    )
    assert result.epr == pytest.approx(
        [0.2341524313, 0.2113009167, 0.0545466520], abs=REFERENCE_TOLERANCE
    )


def test_epr_json_maps_ids_to_values_and_reports_the_positive_iterations(
    example_a: CorpusGraph,
) -> None:
    payload = epr(example_a).to_json()
    assert list(payload) == ["epr", "epr_plus", "epr_minus", "iterations"]
    assert payload["iterations"] == 42
    assert payload["epr"] == pytest.approx({"1": 0.4900822581, "2": -0.035026144, "3": 0.044943886})


def test_a_single_document_without_edges_has_both_channels_equal_to_one() -> None:
    result = epr(CorpusGraph.build([Document("only", "only")], []))
    assert result.epr_plus.tolist() == pytest.approx([1.0])
    assert result.epr_minus.tolist() == pytest.approx([1.0])
    assert result.epr.tolist() == pytest.approx([0.5])


def test_an_empty_graph_has_empty_epr_and_no_iterations() -> None:
    result = epr(CorpusGraph.build([], []))
    assert result.epr.size == 0
    assert result.iterations == 0


def test_net_epr_can_be_negative(example_a: CorpusGraph) -> None:
    assert epr(example_a).epr[1] < 0


def test_neutral_edges_take_no_part_in_epr(example_a: CorpusGraph) -> None:
    with_neutral = CorpusGraph.build(
        example_a.documents, [*example_a.edges, Edge("1", "3", "depend", 1.0)]
    )
    assert epr(with_neutral).epr == pytest.approx(epr(example_a).epr, abs=1e-15)


def test_parallel_edges_add_their_weights() -> None:
    documents = [Document("a", "a"), Document("b", "b"), Document("c", "c")]
    split = CorpusGraph.build(
        documents,
        [
            Edge("a", "b", "cite", 0.3),
            Edge("a", "b", "corroborate", 0.3),
            Edge("a", "c", "cite", 0.6),
        ],
    )
    merged = CorpusGraph.build(
        documents, [Edge("a", "b", "cite", 0.6), Edge("a", "c", "cite", 0.6)]
    )
    assert epr(split).epr_plus == pytest.approx(epr(merged).epr_plus, abs=1e-15)


def test_teleport_vector_floors_negative_entries_and_normalises() -> None:
    vector = teleport_vector(np.array([-1.0, 0.0, 2.0]))
    assert vector.sum() == pytest.approx(1.0)
    assert vector[0] == vector[1] > 0


def test_a_channel_stops_at_max_iter_when_it_has_not_converged(example_a: CorpusGraph) -> None:
    assert epr(example_a, MdnParams(max_iter=5)).iterations == 5


def test_epr_is_memoised_per_graph_and_parameters(example_a: CorpusGraph) -> None:
    assert epr(example_a) is epr(example_a)
    assert epr(example_a, MdnParams(damping=0.5)) is not epr(example_a)


@settings(max_examples=60, deadline=None)
@given(spec=graph_specs(max_documents=6, max_edges=12), damping=st.floats(0.05, 0.95))
def test_epr_equals_the_literal_spec_computation(spec: GraphSpec, damping: float) -> None:
    params = MdnParams(damping=damping)
    plus, minus, iterations = literal_spec_epr(spec, params)
    result = epr(spec.build(), params)
    assert result.iterations == iterations
    assert result.epr_plus == pytest.approx(plus, abs=1e-13)
    assert result.epr_minus == pytest.approx(minus, abs=1e-13)


@settings(max_examples=100, deadline=None)
@given(spec=graph_specs(), penalty=st.floats(0.0, 1.0))
def test_epr_channels_sum_to_one_are_positive_and_net_sums_to_one_minus_lambda(
    spec: GraphSpec, penalty: float
) -> None:
    result = epr(spec.build(), MdnParams(distrust_penalty=penalty))
    assert result.epr_plus.sum() == pytest.approx(1.0, abs=1e-9)
    assert result.epr_minus.sum() == pytest.approx(1.0, abs=1e-9)
    assert (result.epr_plus > 0).all()
    assert (result.epr_minus > 0).all()
    assert result.epr.sum() == pytest.approx(1.0 - penalty, abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(spec=graph_specs(), seed=st.integers(0, 2**32 - 1))
def test_epr_does_not_depend_on_the_order_documents_and_edges_are_given_in(
    spec: GraphSpec, seed: int
) -> None:
    shuffler = random.Random(seed)
    documents, edges = list(spec.documents), list(spec.edges)
    shuffler.shuffle(documents)
    shuffler.shuffle(edges)
    first = epr(CorpusGraph.build(spec.documents, spec.edges, order="id"))
    second = epr(CorpusGraph.build(documents, edges, order="id"))
    assert first.ids == second.ids
    assert first.iterations == second.iterations
    assert second.epr == pytest.approx(first.epr, abs=1e-12)


def test_the_threaded_block_iteration_equals_the_single_block_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = np.random.default_rng(7)
    n, m = 3_000, 15_000
    ids = [f"d{k}" for k in range(n)]
    source, target = rng.integers(0, n, m), (rng.pareto(1.5, m) * 50).astype(np.int64) % n
    etype, weight = rng.choice([0, 2, 3, 4, 7], m), rng.uniform(0.05, 1.0, m)
    depth, recency = rng.uniform(0, 3, n), rng.uniform(0, 1, n)

    def fresh_graph() -> CorpusGraph:
        return CorpusGraph.from_arrays(
            ids,
            ids,
            depth=depth,
            recency=recency,
            edge_source=source,
            edge_target=target,
            edge_type=etype,
            edge_weight=weight,
        )

    single = epr(fresh_graph())
    monkeypatch.setattr(signed_pagerank, "_PARALLEL_MIN_EDGES", 0)
    monkeypatch.setattr(signed_pagerank, "_MAX_BLOCKS", 3)
    monkeypatch.setattr("os.cpu_count", lambda: 3)
    threaded = epr(fresh_graph())
    assert threaded.iterations == single.iterations
    assert threaded.iterations_minus == single.iterations_minus
    assert threaded.epr == pytest.approx(single.epr, abs=1e-14)


@pytest.mark.parametrize("larger", [Polarity.POSITIVE, Polarity.NEGATIVE])
def test_the_threaded_schedule_equals_the_single_thread_one_whichever_channel_is_larger(
    monkeypatch: pytest.MonkeyPatch, larger: Polarity
) -> None:
    rng = np.random.default_rng(11)
    n, m = 2_000, 12_000
    ids = [f"d{k}" for k in range(n)]
    codes = {
        polarity: [k for k, t in enumerate(RELATION_TYPES) if POLARITY[t] == polarity]
        for polarity in (Polarity.POSITIVE, Polarity.NEGATIVE)
    }
    smaller = Polarity.NEGATIVE if larger is Polarity.POSITIVE else Polarity.POSITIVE
    etype = np.where(
        rng.random(m) < 0.8, rng.choice(codes[larger], m), rng.choice(codes[smaller], m)
    )
    source, target = rng.integers(0, n, m), (rng.pareto(1.2, m) * 40).astype(np.int64) % n
    depth, recency = rng.uniform(0, 2, n), rng.uniform(0, 1, n)

    def fresh() -> CorpusGraph:
        return CorpusGraph.from_arrays(
            ids,
            ids,
            depth=depth,
            recency=recency,
            edge_source=source,
            edge_target=target,
            edge_type=etype,
            edge_weight=np.linspace(0.05, 1.0, m),
        )

    single = epr(fresh())
    monkeypatch.setattr(signed_pagerank, "_PARALLEL_MIN_EDGES", 0)
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    threaded = epr(fresh())
    assert (threaded.iterations, threaded.iterations_minus) == (
        single.iterations,
        single.iterations_minus,
    )
    assert threaded.epr_plus == pytest.approx(single.epr_plus, abs=1e-14)
    assert threaded.epr_minus == pytest.approx(single.epr_minus, abs=1e-14)


def test_the_public_scipy_path_gives_the_same_epr_as_the_compiled_kernels(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = np.random.default_rng(5)
    n, m = 500, 3_000
    ids = [f"d{k:04d}" for k in range(n)]
    arrays: EdgeArrays = {
        "edge_source": rng.integers(0, n, m),
        "edge_target": (rng.pareto(1.3, m) * 20).astype(np.int64) % n,
        "edge_type": rng.choice([0, 2, 3, 4, 7], m),
        "edge_weight": rng.uniform(0.05, 1.0, m),
    }
    kernels = epr(CorpusGraph.from_arrays(ids, ids, **arrays))
    monkeypatch.setattr(signed_pagerank, "_coo_tocsr", signed_pagerank._coo_tocsr_with_scipy)
    monkeypatch.setattr(signed_pagerank, "_add_product", signed_pagerank._add_product_with_scipy)
    public = epr(CorpusGraph.from_arrays(ids, ids, **arrays))
    assert (public.iterations, public.iterations_minus) == (
        kernels.iterations,
        kernels.iterations_minus,
    )
    assert public.epr == pytest.approx(kernels.epr, abs=1e-15)


@pytest.mark.parametrize("rows_per_step", [1, 7, 64])
def test_passes_taken_in_steps_of_rows_equal_whole_passes(
    monkeypatch: pytest.MonkeyPatch, rows_per_step: int
) -> None:
    rng = np.random.default_rng(9)
    n, m = 400, 2_500
    ids = [f"d{k:04d}" for k in range(n)]
    arrays: EdgeArrays = {
        "edge_source": rng.integers(0, n, m),
        "edge_target": (rng.pareto(1.3, m) * 20).astype(np.int64) % n,
        "edge_type": rng.choice([0, 2, 3, 4, 7], m),
        "edge_weight": rng.uniform(0.05, 1.0, m),
    }
    whole = epr(CorpusGraph.from_arrays(ids, ids, **arrays))
    monkeypatch.setattr(signed_pagerank, "_ROWS_PER_STEP", rows_per_step)
    stepped = epr(CorpusGraph.from_arrays(ids, ids, **arrays))
    assert (stepped.iterations, stepped.iterations_minus) == (
        whole.iterations,
        whole.iterations_minus,
    )
    assert stepped.epr == pytest.approx(whole.epr, abs=1e-15)
