"""Memory (spec §5): outcomes deform edge weights (semantic) and bias navigation (procedural).

Memory never adds or removes documents or edges. Two forms of the semantic signal:

- batch, `apply_memory`: the whole history replayed onto a graph held in the process (declared
  corpora);
- incremental, `reinforcement_plan`: only the newest outcome's `Δ = η·(s − s̄)`, to be written to a
  store as one relative update per edge (store corpora); `apply_reinforcements` does the same
  update on a graph in memory, `LEAST(GREATEST(weight + Δ, 0.001), 1.0)`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from mnemo_mdn.errors import ParameterError
from mnemo_mdn.graph import CorpusGraph, Edge, FloatArray, IndexArray
from mnemo_mdn.incremental import carry_epr
from mnemo_mdn.params import DEFAULT_PARAMS, MEMORY_WEIGHT_FLOOR, MdnParams
from mnemo_mdn.relations import RELATION_TYPES, TYPE_CODE


@dataclass(frozen=True, slots=True)
class Outcome:
    """One recorded navigation: the selected documents in order, its score `s`, its sequence number.

    `sequence` orders outcomes within their (tenant, corpus, scope); outcomes with a larger one are
    newer. It is the `t_o` of the batch decay `γ^(now − t_o)`. `traversed` are the edges the
    navigation followed (`Navigation.traversed`: each hit's `via` edge, or in parity mode the edges
    joining consecutive selected documents); `None` when they were not recorded, and then the edges
    joining consecutive documents of `path` stand in for them.
    """

    path: tuple[str, ...]
    score: float
    sequence: int = 0
    traversed: tuple[Edge, ...] | None = None


@dataclass(frozen=True, slots=True)
class Memory:
    """What a navigation remembers: the history of its scope, oldest first.

    `persisted_weights=True` says the graph's weights already carry the semantic memory (a store
    corpus reinforced incrementally), so only the procedural bias is taken from the history;
    otherwise the history is replayed onto the weights with `apply_memory` (declared corpora).
    """

    outcomes: tuple[Outcome, ...] = ()
    persisted_weights: bool = False


@dataclass(frozen=True, slots=True)
class EdgeReinforcement:
    """One relative weight update: every edge `(source, target, etype)` gets `weight + delta`."""

    source: str
    target: str
    etype: str
    delta: float


def recent(outcomes: Sequence[Outcome], params: MdnParams = DEFAULT_PARAMS) -> Sequence[Outcome]:
    """The last `H` outcomes, the only ones memory looks at."""
    return outcomes[-params.horizon :]


def baseline(scores: Sequence[float], params: MdnParams = DEFAULT_PARAMS) -> float:
    """`s̄`: mean of the last `H` scores, the newest one included."""
    window = list(scores)[-params.horizon :]
    if not window:
        raise ParameterError("baseline needs at least one score (the newest outcome's)")
    return sum(window) / len(window)


def apply_memory(
    graph: CorpusGraph,
    outcomes: Sequence[Outcome],
    params: MdnParams = DEFAULT_PARAMS,
    now: int | None = None,
) -> CorpusGraph:
    """Batch semantic memory over the last `H` outcomes.

    Every edge an outcome traversed (`Outcome.traversed`, keyed by source, target and type; for an
    outcome that did not record them, every edge `a → b` with `a, b` consecutive in its path) gets
    `Δ = η·Σ_{o containing it} (s_o − s̄)·γ^(now − t_o)`, with `s̄` the mean score of the history and
    `now` the newest sequence number unless given; its weight becomes
    `min(max(weight + Δ, 0.001), 1)`. Edges with no Δ keep their weight exactly.
    """
    history = recent(outcomes, params)
    if not history or graph.n_edges == 0:
        return graph
    mean = sum(outcome.score for outcome in history) / len(history)
    newest = max(outcome.sequence for outcome in history) if now is None else now
    n, k = graph.n_documents, len(RELATION_TYPES)
    edge_keys = (graph.edge_source * n + graph.edge_target) * k + graph.edge_type
    pair_of_edge = edge_keys // k
    edge_delta: dict[int, float] = {}
    for outcome in history:
        factor = (outcome.score - mean) * params.decay ** (newest - outcome.sequence)
        # An edge counts once per outcome, however often the outcome names it.
        for key in _outcome_edges(graph, outcome, edge_keys, pair_of_edge):
            edge_delta[key] = edge_delta.get(key, 0.0) + factor
    touched = {key: delta for key, delta in edge_delta.items() if delta != 0.0}
    if not touched:
        return graph
    keys = np.fromiter(touched, np.int64, len(touched))
    values = params.learning_rate * np.fromiter(touched.values(), np.float64, len(touched))
    return _shifted(graph, edge_keys, keys, values)


def _outcome_edges(
    graph: CorpusGraph, outcome: Outcome, edge_keys: IndexArray, pair_of_edge: IndexArray
) -> set[int]:
    """The keys `(source·n + target)·k + type` of the graph's edges an outcome reinforces."""
    n, k = graph.n_documents, len(RELATION_TYPES)
    if outcome.traversed is not None:
        keys: set[int] = set()
        for edge in outcome.traversed:
            source, target = graph.index.get(edge.source), graph.index.get(edge.target)
            code = TYPE_CODE.get(edge.etype)
            if source is not None and target is not None and code is not None:
                keys.add((source * n + target) * k + code)
        return keys
    indexes = [graph.index.get(doc_id) for doc_id in outcome.path]
    pairs = {
        first * n + second
        for first, second in pairwise(indexes)
        if first is not None and second is not None
    }
    if not pairs:
        return set()
    joined = np.isin(pair_of_edge, np.fromiter(pairs, np.int64, len(pairs)))
    return {int(key) for key in edge_keys[joined]}


def reinforcement_plan(
    traversed: Iterable[Edge], score: float, baseline: float, params: MdnParams = DEFAULT_PARAMS
) -> list[EdgeReinforcement]:
    """Incremental semantic memory: the updates the newest outcome writes.

    `traversed` are the edges the navigation actually followed (`Navigation.traversed`), `score`
    its outcome score and `baseline` the mean of the last `H` scores including this one. Every
    traversed edge gets `Δ = η·(s − s̄)`; when `Δ = 0` (the first navigation of a scope, for one)
    nothing is written.
    """
    delta = params.learning_rate * (score - baseline)
    if delta == 0.0:
        return []
    seen: set[tuple[str, str, str]] = set()
    plan: list[EdgeReinforcement] = []
    for edge in traversed:
        key = (edge.source, edge.target, edge.etype)
        if key not in seen:
            seen.add(key)
            plan.append(EdgeReinforcement(edge.source, edge.target, edge.etype, delta))
    return plan


def apply_reinforcements(graph: CorpusGraph, plan: Iterable[EdgeReinforcement]) -> CorpusGraph:
    """The store's relative update on a graph in memory: `LEAST(GREATEST(w + Δ, 0.001), 1.0)`."""
    n, k = graph.n_documents, len(RELATION_TYPES)
    deltas: dict[int, float] = {}
    for update in plan:
        source, target = graph.index.get(update.source), graph.index.get(update.target)
        code = TYPE_CODE.get(update.etype)
        if source is None or target is None or code is None:
            continue
        key = (source * n + target) * k + code
        deltas[key] = deltas.get(key, 0.0) + update.delta
    if not deltas:
        return graph
    edge_keys = (graph.edge_source * n + graph.edge_target) * k + graph.edge_type
    shifted = _shifted(
        graph,
        edge_keys,
        np.fromiter(deltas, np.int64, len(deltas)),
        np.fromiter(deltas.values(), np.float64, len(deltas)),
    )
    # A few weights moved: the graph's EPR is the warm start of the new one's.
    return carry_epr(graph, shifted)


def _shifted(
    graph: CorpusGraph, edge_keys: IndexArray, keys: IndexArray, deltas: FloatArray
) -> CorpusGraph:
    """Add `deltas[j]` to every edge whose key is `keys[j]`, then floor at 0.001 and cap at 1."""
    order = np.argsort(keys)
    keys, deltas = keys[order], deltas[order]
    slot = np.minimum(np.searchsorted(keys, edge_keys), len(keys) - 1)
    hit = keys[slot] == edge_keys
    weights = graph.edge_weight.copy()
    weights[hit] = np.clip(weights[hit] + deltas[slot[hit]], MEMORY_WEIGHT_FLOOR, 1.0)
    return graph.with_edge_weights(weights)


def procedural_bias(
    outcomes: Sequence[Outcome], params: MdnParams = DEFAULT_PARAMS
) -> dict[str, float]:
    """`Bias(d) = Σ_{o containing d} s_o·γ^(age_o) / Z` over the last `H` outcomes.

    `age_o` is how many outcomes are newer than `o`; `Z` makes the values sum to 1 (all zero when
    every score is zero). Keys are document ids in first-seen order.
    """
    history = recent(outcomes, params)
    own = np.array([outcome.sequence for outcome in history], dtype=np.int64)
    ages = len(own) - np.searchsorted(np.sort(own), own, side="right")
    raw: dict[str, float] = {}
    for outcome, age in zip(history, ages.tolist(), strict=True):
        contribution = outcome.score * params.decay**age
        for doc_id in dict.fromkeys(outcome.path):
            raw[doc_id] = raw.get(doc_id, 0.0) + contribution
    total = sum(raw.values())
    if total == 0.0:
        return dict.fromkeys(raw, 0.0)
    return {doc_id: value / total for doc_id, value in raw.items()}


def bias_vector(
    graph: CorpusGraph, outcomes: Sequence[Outcome], params: MdnParams = DEFAULT_PARAMS
) -> FloatArray:
    """`b(d)` in document order, normalised so that its largest value is 1 (zeros without memory)."""
    result = np.zeros(graph.n_documents, dtype=np.float64)
    position = graph.index.get
    for doc_id, value in procedural_bias(outcomes, params).items():
        k = position(doc_id)
        if k is not None:
            result[k] = value
    top = float(result.max()) if graph.n_documents else 0.0
    if top > 0.0:
        result /= top
    return result
