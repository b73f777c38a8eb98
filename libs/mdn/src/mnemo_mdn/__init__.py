"""Pure graph engine: corpus graph model, signed Epistemic PageRank, navigation, memory.

The behavioural contract is `spec/MDN.md`. Everything here is computation on plain data: no I/O,
no services. Start with `CorpusGraph.build` (or `graph_from_json`), then `epr` and `navigate`.
"""

from mnemo_mdn.errors import GraphFormatError, MdnError, ParameterError, UnknownSeedError
from mnemo_mdn.frontier import Direction
from mnemo_mdn.graph import CorpusGraph, Document, DocumentOrder, Edge, GraphDiagnostics
from mnemo_mdn.json_format import graph_from_json, graph_to_json
from mnemo_mdn.memory import (
    EdgeReinforcement,
    Memory,
    Outcome,
    apply_memory,
    apply_reinforcements,
    baseline,
    bias_vector,
    procedural_bias,
    reinforcement_plan,
)
from mnemo_mdn.navigation import Hit, Mode, Navigation, Via, navigate
from mnemo_mdn.params import DEFAULT_PARAMS, MdnParams
from mnemo_mdn.relations import POLARITY, RELATION_TYPES, Polarity, polarity_of
from mnemo_mdn.signed_pagerank import EprResult, epr, teleport_vector
from mnemo_mdn.tokenization import tokens

__all__ = [
    "DEFAULT_PARAMS",
    "POLARITY",
    "RELATION_TYPES",
    "CorpusGraph",
    "Direction",
    "Document",
    "DocumentOrder",
    "Edge",
    "EdgeReinforcement",
    "EprResult",
    "GraphDiagnostics",
    "GraphFormatError",
    "Hit",
    "MdnError",
    "MdnParams",
    "Memory",
    "Mode",
    "Navigation",
    "Outcome",
    "ParameterError",
    "Polarity",
    "UnknownSeedError",
    "Via",
    "apply_memory",
    "apply_reinforcements",
    "baseline",
    "bias_vector",
    "epr",
    "graph_from_json",
    "graph_to_json",
    "navigate",
    "polarity_of",
    "procedural_bias",
    "reinforcement_plan",
    "teleport_vector",
    "tokens",
]
