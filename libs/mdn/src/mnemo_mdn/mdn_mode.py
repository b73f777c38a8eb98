"""Default navigation (`mode="mdn"`, spec §4.2): signed, weighted, remembered, with restarts.

A step takes the frontier document maximising `g(d | S)·c(d | S)·π(d)` among those whose gain is at
least ε; when none is informative the walk restarts from the unselected document with the largest
`r(d)·π(d)` (if `r(d) > 0`), so the walk falls back on relevance instead of stopping.

Two rules beyond the spec, each kept by the two-dataset trials of bench/README.md (trials 10, 11):
a document the query names by its title (`relevance.named_by_query`) has its relevance multiplied
by `1 + NAMED_BOOST` for the seed and restarts; and before any frontier step, an unselected
document the query names that still adds query terms (gain at least ε) is taken first, by that
boosted `r(d)·π(d)` (a restart): a question naming two things starts from both, and the edges then
lead from each.

A third rule (trial 15): a frontier document that adds no query term (gain below ε) is still a
step, valued by `HELD_CREDIT · q(d)`, `q(d)` the weight of the query terms it holds, instead of
being unreachable. The document a chain's next hop lands on rarely repeats a query word the walk
has not seen (the director's mother's passage names the director, not `mother`); before, any
neighbour with one new query word, however weakly linked, went first, and past those the walk
restarted on relevance.
"""

from __future__ import annotations

from typing import Final

import numpy as np

from mnemo_mdn.errors import UnknownSeedError
from mnemo_mdn.frontier import Frontier
from mnemo_mdn.graph import CorpusGraph, FloatArray
from mnemo_mdn.walk import Step, Walk, WalkInputs, earliest_best

NO_MATCH = "no document matches the query"
NO_MATCH_LEFT = "no unselected document matches the query"
BUDGET_REACHED = "budget reached"

NAMED_BOOST: Final = 0.5
"""A document the query names by its title seeds and restarts with `r(d)·(1 + NAMED_BOOST)`."""
NAMED_FIRST: Final = True
"""Whether documents the query names (adding query terms) are taken before frontier steps."""
HELD_CREDIT: Final = 0.3
"""A frontier document adding no query term steps with value `HELD_CREDIT · q(d)` (0: never)."""


def trust(inputs: WalkInputs) -> FloatArray:
    """`π(d) = φ(d)·(1 + β·b(d))`, `φ(d) = 1 + κ·EPR(d)/max|EPR|`: distrusted ranks lower, never 0."""
    net = inputs.epr.epr
    scale = float(np.abs(net).max()) if len(net) else 0.0
    phi = 1.0 + inputs.params.trust_weight * net / scale if scale > 0.0 else np.ones(len(net))
    result: FloatArray = phi * (1.0 + inputs.params.bias_weight * inputs.bias)
    return result


def seed_document(graph: CorpusGraph, seed: str) -> int:
    """The document whose id is `seed`, else the first whose title is exactly `seed`."""
    by_id = graph.index_of(seed)
    if by_id is not None:
        return by_id
    for k, title in enumerate(graph.titles):
        if title == seed:
            return k
    raise UnknownSeedError(seed)


def walk(inputs: WalkInputs) -> Walk:
    graph, view, params = inputs.graph, inputs.view, inputs.params
    pi = trust(inputs)
    candidates = view.candidates
    relevance = view.relevance.copy()
    relevance[candidates[inputs.named]] *= 1.0 + NAMED_BOOST
    rank = relevance * pi  # r(d)·π(d): the seed and restart rule
    candidate_rank = rank[candidates]
    candidate_pi = pi[candidates]
    matching = view.relevance[candidates] > 0.0
    held = view.contains @ view.weights  # q(d): the query weight each candidate holds

    if inputs.seed is not None:
        first = seed_document(graph, inputs.seed)
    else:
        best = earliest_best(candidate_rank, matching)
        if best is None:
            return Walk((), NO_MATCH)
        first = int(candidates[best])

    selected = np.zeros(graph.n_documents, dtype=bool)
    unselected = np.ones(len(candidates), dtype=bool)
    covered = np.zeros(len(view.terms), dtype=bool)
    frontier = Frontier(graph, inputs.direction, params.negative_link_factor)
    seed_row = int(view.rows_of(np.array([first]))[0])
    seed_gain = float(view.gains(covered)[seed_row]) if seed_row >= 0 else 0.0
    steps = [Step(document=first, score=float(rank[first]), gain=seed_gain)]

    def select(document: int, row: int) -> None:
        selected[document] = True
        if row >= 0:
            unselected[row] = False
            covered[:] |= view.contains[row]
        frontier.add(document)

    select(first, seed_row)
    reason = BUDGET_REACHED
    while len(steps) < inputs.budget:
        gains = view.gains(covered)
        adds = gains >= params.epsilon
        value = np.where(adds, gains, HELD_CREDIT * held)  # what a frontier step is worth
        strength = frontier.strength[candidates]
        informative = unselected & (strength > 0.0) & (value >= params.epsilon)
        named = unselected & inputs.named & adds if NAMED_FIRST else None
        if named is not None and named.any():
            # The query names one: reached by an edge when one leads there, else a restart.
            row = earliest_best(value * strength * candidate_pi, informative & named)
            restart = row is None
            if restart:
                row = earliest_best(candidate_rank, named)
        else:
            row = earliest_best(value * strength * candidate_pi, informative)
            restart = False
        if row is None:
            # Nothing informative is reachable: restart at the best-ranked match left.
            row = earliest_best(candidate_rank, unselected & matching)
            if row is None:
                reason = NO_MATCH_LEFT
                break
            restart = True
        document = int(candidates[row])
        if restart:
            step = Step(
                document=document,
                score=float(candidate_rank[row]),
                gain=float(gains[row]),
                restart=True,
            )
        else:
            step = Step(
                document=document,
                score=float(value[row] * strength[row] * candidate_pi[row]),
                gain=float(gains[row]),
                via_edge=int(frontier.via_edge[document]),
                via_from=int(frontier.via_from[document]),
            )
        steps.append(step)
        select(document, row)
    return Walk(tuple(steps), reason)
