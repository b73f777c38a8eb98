"""Parity navigation (`mode="axon"`, spec §4.1): exactly what the AXON reference runtime does.

The seed is the first document titled `seed` (else the first document); each step takes the
reachable document whose title covers the most query tokens not yet covered by the selected titles.
Weights, EPR and memory play no part in the choice; an uninformative step or an empty frontier ends
the walk.
"""

from __future__ import annotations

import numpy as np

from mnemo_mdn.frontier import Frontier
from mnemo_mdn.walk import Step, Walk, WalkInputs, earliest_best

BUDGET_REACHED = "budget reached"
FRONTIER_EMPTY = "the frontier is empty"
NOTHING_INFORMATIVE = "no informative document in the frontier"


def walk(inputs: WalkInputs) -> Walk:
    graph, view = inputs.graph, inputs.view
    first = next((k for k, title in enumerate(graph.titles) if title == inputs.seed), 0)

    selected = np.zeros(graph.n_documents, dtype=bool)
    covered = np.zeros(len(view.terms), dtype=bool)
    # The frontier only says what is reachable here; its strengths are never compared.
    frontier = Frontier(graph, inputs.direction, inputs.params.negative_link_factor)
    candidates = view.candidates
    unselected = np.ones(len(candidates), dtype=bool)

    def select(document: int) -> None:
        selected[document] = True
        row = int(view.rows_of(np.array([document]))[0])
        if row >= 0:
            unselected[row] = False
            covered[:] |= view.contains[row]
        frontier.add(document)

    steps = [Step(document=first, score=0.0, gain=0.0)]
    select(first)
    reason = BUDGET_REACHED
    while len(steps) < inputs.budget:
        gains = view.gains(covered)
        reachable = unselected & (frontier.strength[candidates] > 0.0)
        row = earliest_best(gains, reachable & (gains >= inputs.params.epsilon))
        if row is None:
            anything_reachable = bool(((frontier.strength > 0.0) & ~selected).any())
            reason = NOTHING_INFORMATIVE if anything_reachable else FRONTIER_EMPTY
            break
        document = int(candidates[row])
        steps.append(
            Step(
                document=document,
                score=float(gains[row]),
                gain=float(gains[row]),
                via_edge=int(frontier.via_edge[document]),
                via_from=int(frontier.via_from[document]),
            )
        )
        select(document)
    return Walk(tuple(steps), reason)
