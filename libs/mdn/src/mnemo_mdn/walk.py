"""What both navigation modes share: their inputs, the steps they take, and how ties break."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from mnemo_mdn.frontier import Direction
from mnemo_mdn.graph import CorpusGraph, FloatArray
from mnemo_mdn.params import MdnParams
from mnemo_mdn.relevance import QueryView
from mnemo_mdn.signed_pagerank import EprResult

# Scores equal up to floating-point rounding are ties (spec: ties go to the earlier document), so
# the choice cannot depend on the order in which the same sums happened to be added up.
TIE_RELATIVE_TOLERANCE: Final = 1e-12


@dataclass(frozen=True, slots=True, eq=False)
class WalkInputs:
    """Everything a mode needs, computed once by `navigate`."""

    graph: CorpusGraph  # weights already carry memory
    seed: str | None
    budget: int
    direction: Direction
    params: MdnParams
    epr: EprResult
    bias: FloatArray  # b(d), largest value 1 (zeros without memory)
    view: QueryView
    named: npt.NDArray[np.bool_]  # per candidate of `view`: the query names it by its title


@dataclass(frozen=True, slots=True)
class Step:
    """One selected document and why: the value it was chosen with, its gain, how it was reached."""

    document: int
    score: float
    gain: float
    via_edge: int = -1  # edge index, -1 for the seed and restarts
    via_from: int = -1  # the selected document the edge joins it to
    restart: bool = False


@dataclass(frozen=True, slots=True)
class Walk:
    steps: tuple[Step, ...]
    reason: str  # why the walk ended


def earliest_best(values: FloatArray, eligible: npt.NDArray[np.bool_]) -> int | None:
    """Position of the largest eligible value, the earliest among ties; None if none is eligible."""
    if not eligible.any():
        return None
    masked = np.where(eligible, values, -np.inf)
    best = float(masked.max())
    return int(np.flatnonzero(masked >= best - TIE_RELATIVE_TOLERANCE * abs(best))[0])
