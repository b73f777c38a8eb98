"""The closed relation catalog (spec §1): every edge type and the polarity it carries.

Types are coded by their position in `RELATION_TYPES` (in the order the compiler's G3 message
lists them), which is the code `CorpusGraph` stores and `CorpusGraph.from_arrays` accepts.
"""

from __future__ import annotations

from enum import IntEnum
from types import MappingProxyType
from typing import Final

import numpy as np
import numpy.typing as npt


class Polarity(IntEnum):
    """What an edge type propagates: endorsement (EPR⁺), challenge (EPR⁻) or reachability only."""

    NEGATIVE = -1
    NEUTRAL = 0
    POSITIVE = 1


RELATION_TYPES: Final[tuple[str, ...]] = (
    "cite",
    "corroborate",
    "contradict",
    "depend",
    "elaborate",
    "exemplify",
    "implement",
    "supersede",
)

POLARITY: Final = MappingProxyType(
    {
        "cite": Polarity.POSITIVE,
        "elaborate": Polarity.POSITIVE,
        "corroborate": Polarity.POSITIVE,
        "contradict": Polarity.NEGATIVE,
        "supersede": Polarity.NEGATIVE,
        "depend": Polarity.NEUTRAL,
        "implement": Polarity.NEUTRAL,
        "exemplify": Polarity.NEUTRAL,
    }
)

TYPE_CODE: Final = MappingProxyType({etype: code for code, etype in enumerate(RELATION_TYPES)})

#: Polarity of each type code, for vectorised selection of a channel's edges.
POLARITY_BY_CODE: Final[npt.NDArray[np.int8]] = np.array(
    [POLARITY[etype] for etype in RELATION_TYPES], dtype=np.int8
)
POLARITY_BY_CODE.setflags(write=False)


def polarity_of(etype: str) -> Polarity:
    """The polarity of a catalog type; `KeyError` for a type outside the catalog."""
    return POLARITY[etype]
