"""`navigate` (spec §4): the entry point of both modes, and the navigation it returns.

The result carries the hits in selection order, the trail, the outcome score (`coverage`, the `s`
memory learns from), the edges actually traversed (what reinforcement updates) and diagnostics
(skipped edges of the graph, why the walk ended).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from itertools import pairwise
from types import MappingProxyType
from typing import Literal

import numpy as np

from mnemo_mdn import axon_mode, mdn_mode
from mnemo_mdn.errors import ParameterError
from mnemo_mdn.frontier import Direction, incident_edges, negative_incidence
from mnemo_mdn.graph import CorpusGraph, Edge
from mnemo_mdn.memory import Memory, apply_memory, bias_vector, recent
from mnemo_mdn.params import DEFAULT_PARAMS, MdnParams
from mnemo_mdn.relations import RELATION_TYPES
from mnemo_mdn.relevance import QueryView, named_by_query, query_view, title_view
from mnemo_mdn.signed_pagerank import epr
from mnemo_mdn.walk import Walk, WalkInputs

Mode = Literal["axon", "mdn"]
MODES: tuple[Mode, ...] = ("axon", "mdn")
DIRECTIONS: tuple[Direction, ...] = ("out", "both")
EMPTY_GRAPH = "the graph has no documents"


@dataclass(frozen=True, slots=True)
class Via:
    """The edge a step followed: from which selected document, of which type, with which weight."""

    source: str
    etype: str
    weight: float

    def to_json(self) -> dict[str, object]:
        return {"from": self.source, "etype": self.etype, "weight": self.weight}


@dataclass(frozen=True, slots=True)
class Hit:
    """One selected document: `score` is the value it was chosen with (spec §4.2)."""

    id: str
    title: str
    score: float
    gain: float
    epr: float
    via: Via | None
    restart: bool
    contradicts: tuple[str, ...]  # selected documents joined to it by a negative edge, either way

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "title": self.title,
            "score": self.score,
            "gain": self.gain,
            "epr": self.epr,
            "via": None if self.via is None else self.via.to_json(),
            "restart": self.restart,
            "contradicts": list(self.contradicts),
        }


@dataclass(frozen=True, slots=True)
class Navigation:
    """The result of `navigate`."""

    mode: Mode
    query: str
    hits: tuple[Hit, ...]
    trail: str  # "<title> (Δ=<gain>)" joined with " → "
    coverage: float  # the outcome score s, in [0, 1]
    top_similarity: float  # largest r(d) among the hits, for the audit row
    traversed: tuple[Edge, ...]  # edges memory reinforces
    diagnostics: Mapping[str, object]

    @property
    def path(self) -> tuple[str, ...]:
        return tuple(hit.id for hit in self.hits)

    @property
    def output(self) -> str:
        """The reference runtime's output: the hits' titles joined with newlines."""
        return "\n".join(hit.title for hit in self.hits)

    def to_json(self) -> dict[str, object]:
        """`{"hits": [...], "trail", "coverage", "diagnostics"}`, the CLI's and the API's shape."""
        return {
            "hits": [hit.to_json() for hit in self.hits],
            "trail": self.trail,
            "coverage": self.coverage,
            "diagnostics": dict(self.diagnostics),
        }


def navigate(
    graph: CorpusGraph,
    query: str,
    seed: str | None = None,
    budget: int = 5,
    mode: Mode = "mdn",
    direction: Direction = "out",
    params: MdnParams = DEFAULT_PARAMS,
    memory: Memory | None = None,
) -> Navigation:
    """Navigate `graph` for `query` from `seed` (spec §4), selecting at most `budget` documents.

    `mode="mdn"` (default) is the signed, weighted, remembered walk with restarts; `mode="axon"`
    reproduces the reference runtime. `memory` supplies the scope's history (see `Memory`).
    Raises `ParameterError` for a bad argument and, in `mdn` mode, `UnknownSeedError` for a seed
    that names no document.
    """
    _check_arguments(query, seed, budget, mode, direction, params, memory)
    history = recent(memory.outcomes, params) if memory is not None else ()
    remembered = graph
    if history and memory is not None and not memory.persisted_weights:
        remembered = apply_memory(graph, history, params)
    if graph.n_documents == 0:
        return _assemble(remembered, query, mode, Walk((), EMPTY_GRAPH), None, 0)

    scores = epr(remembered, params)
    relevance = query_view(remembered, query, params)
    view = relevance if mode == "mdn" else title_view(remembered, query, relevance.relevance)
    inputs = WalkInputs(
        graph=remembered,
        seed=seed,
        budget=budget,
        direction=direction,
        params=params,
        epr=scores,
        bias=bias_vector(remembered, history, params),
        view=view,
        named=(
            named_by_query(remembered, query, view)
            if mode == "mdn"
            else np.zeros(len(view.candidates), dtype=bool)
        ),
    )
    result = mdn_mode.walk(inputs) if mode == "mdn" else axon_mode.walk(inputs)
    return _assemble(remembered, query, mode, result, inputs, scores.iterations)


def _check_arguments(
    query: object,
    seed: object,
    budget: object,
    mode: object,
    direction: object,
    params: object,
    memory: object,
) -> None:
    if not isinstance(query, str):
        raise ParameterError(f"query must be a string, got {query!r}")
    if seed is not None and not isinstance(seed, str):
        raise ParameterError(f"seed must be a document id or title, got {seed!r}")
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise ParameterError(f"budget must be an integer >= 1 (it counts the seed), got {budget!r}")
    if mode not in MODES:
        raise ParameterError(f"mode must be 'axon' or 'mdn', got {mode!r}")
    if direction not in DIRECTIONS:
        raise ParameterError(f"direction must be 'out' or 'both', got {direction!r}")
    if not isinstance(params, MdnParams):
        raise ParameterError(f"params must be MdnParams, got {type(params).__name__}")
    if memory is not None and not isinstance(memory, Memory):
        raise ParameterError(f"memory must be a Memory, got {type(memory).__name__}")


def _assemble(
    graph: CorpusGraph,
    query: str,
    mode: Mode,
    result: Walk,
    inputs: WalkInputs | None,
    epr_iterations: int,
) -> Navigation:
    chosen = [step.document for step in result.steps]
    hits = tuple(
        Hit(
            id=graph.ids[step.document],
            title=graph.titles[step.document],
            score=step.score,
            gain=step.gain,
            epr=float(inputs.epr.epr[step.document]) if inputs is not None else 0.0,
            via=_via(graph, step.via_edge, step.via_from),
            restart=step.restart,
            contradicts=_contradicting(graph, step.document, chosen),
        )
        for step in result.steps
    )
    trail = " → ".join(f"{hit.title} (Δ={hit.gain:.2f})" for hit in hits)
    if inputs is None or mode == "axon":
        total_gain = sum(hit.gain for hit in hits)
        coverage = min(max(total_gain / max(len(hits), 1), 0.0), 1.0)
        traversed = _consecutive_edges(graph, chosen, inputs)
    else:
        coverage = _covered_share(inputs.view, chosen)
        traversed = tuple(graph.edge_at(s.via_edge) for s in result.steps if s.via_edge >= 0)
    top_similarity = (
        max((float(inputs.view.relevance[k]) for k in chosen), default=0.0)
        if inputs is not None
        else 0.0
    )
    diagnostics = {
        **graph.diagnostics.to_json(),
        "reason": result.reason,
        "mode": mode,
        "restarts": sum(hit.restart for hit in hits),
        "epr_iterations": epr_iterations,
    }
    return Navigation(
        mode=mode,
        query=query,
        hits=hits,
        trail=trail,
        coverage=coverage,
        top_similarity=top_similarity,
        traversed=traversed,
        diagnostics=MappingProxyType(diagnostics),
    )


def _via(graph: CorpusGraph, edge: int, selected_from: int) -> Via | None:
    if edge < 0:
        return None
    return Via(
        source=graph.ids[selected_from],
        etype=RELATION_TYPES[int(graph.edge_type[edge])],
        weight=float(graph.edge_weight[edge]),
    )


def _contradicting(graph: CorpusGraph, document: int, chosen: list[int]) -> tuple[str, ...]:
    """Other selected documents joined to `document` by a negative edge, in selection order."""
    negative = negative_incidence(graph).of(document)
    others = set(graph.edge_source[negative].tolist()) | set(graph.edge_target[negative].tolist())
    others.discard(document)
    return tuple(graph.ids[k] for k in chosen if k in others)


def _consecutive_edges(
    graph: CorpusGraph, chosen: list[int], inputs: WalkInputs | None
) -> tuple[Edge, ...]:
    """Parity's traversed edges: those joining consecutive selected documents, as the reference."""
    if inputs is None:
        return ()
    traversed: list[Edge] = []
    for first, second in pairwise(chosen):
        edges = incident_edges(graph, first, inputs.direction)
        joins = (graph.edge_source[edges] == first) & (graph.edge_target[edges] == second)
        if inputs.direction == "both":
            joins |= (graph.edge_source[edges] == second) & (graph.edge_target[edges] == first)
        traversed.extend(graph.edge_at(int(e)) for e in np.sort(edges[joins]))
    return tuple(traversed)


def _covered_share(view: QueryView, chosen: list[int]) -> float:
    """`Σ_{t covered} idf(t) / M`, 0 when no query term occurs in the graph."""
    if view.mass <= 0.0:
        return 0.0
    rows = view.rows_of(np.array(chosen, dtype=np.int64))
    covered = view.contains[rows[rows >= 0]].any(axis=0)
    return float(view.weights[covered].sum() / view.mass)
