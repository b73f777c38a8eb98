"""The frontier of a walk: documents one edge away from the selected set, and how strongly linked.

`c(d | S)` is the largest `weight · ρ(polarity)` over the edges joining a selected document to `d`
(`s → d`; with `direction="both"` also `d → s`, followed against its direction at
`BACKWARD_WEIGHT` of its weight), and the edge achieving it is `via(d)`. Ties between edges go to
the selected document earliest in document order, then to the forward edge, then to the type
earliest in the catalog, so the result never depends on the order edges were given in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from mnemo_mdn.graph import STRUCTURAL_MEMO_PREFIX, CorpusGraph, FloatArray, IndexArray
from mnemo_mdn.relations import Polarity

Direction = Literal["out", "both"]

BACKWARD_WEIGHT: Final = 0.25
"""An edge followed against its direction (`direction="both"`: from the document it points to, to
the one it points from) counts this share of its weight (trial 1 of bench/README.md's ledger). A
document cites what it builds on: from a film to its director is the way the citation reads; from
the director back to every film that names them is a crowd, and on 2WikiMultiHopQA at full weight
it led the walk away from the second film's director."""


@dataclass(frozen=True, slots=True)
class Adjacency:
    """Edge indexes grouped by one endpoint: `edges[starts[k]:starts[k + 1]]` touch document k."""

    starts: IndexArray
    edges: IndexArray

    def of(self, document: int) -> IndexArray:
        return self.edges[self.starts[document] : self.starts[document + 1]]


SCANNED_LOOKUPS: Final = 8
"""Lookups an `EdgeLookup` answers by scanning its endpoint column before it groups every edge.
Grouping costs thirty to forty-five scans (a counting sort of every edge), and a graph refreshed
under writes is mostly navigated once, which asks for one document's edges per step (five at the
default budget); a graph navigated on groups at its ninth lookup, and pays 10-50% more than
grouping at once would have (bench/README.md, "Edge lists looked up by scanning first")."""


class EdgeLookup:
    """`of(k)`: the `values` whose `keys` entry is k, in the order given; as `Adjacency` would
    answer for the same keys and values. The first `SCANNED_LOOKUPS` are answered by a scan of
    `keys`, later ones from the groups, built once (threads sharing a graph may each build them:
    equal results, the last one kept)."""

    __slots__ = ("_grouped", "_keys", "_lookups", "_n", "_values")

    def __init__(self, keys: npt.NDArray[np.integer], values: IndexArray | None, n: int) -> None:
        self._keys = keys
        self._values = values  # None: the edge indexes themselves, 0..len(keys) - 1
        self._n = n
        self._lookups = 0
        self._grouped: Adjacency | None = None

    def of(self, document: int) -> IndexArray:
        grouped = self._grouped
        if grouped is None and self._lookups < SCANNED_LOOKUPS:
            self._lookups += 1
            found = np.flatnonzero(self._keys == document)
            return found if self._values is None else self._values.take(found)
        if grouped is None:
            values = self._values
            if values is None:
                values = np.arange(len(self._keys), dtype=np.int64)
            grouped = self._grouped = _grouped(self._keys, values, self._n)
        return grouped.of(document)


def adjacency(graph: CorpusGraph, endpoint: Literal["source", "target"]) -> EdgeLookup:
    """Edges by their source (outgoing lists) or target (incoming lists), in edge order."""

    def build() -> EdgeLookup:
        keys = graph.edge_source if endpoint == "source" else graph.edge_target
        return EdgeLookup(keys, None, graph.n_documents)

    return graph.memo(f"{STRUCTURAL_MEMO_PREFIX}adjacency:{endpoint}", build)


def negative_incidence(graph: CorpusGraph) -> EdgeLookup:
    """Distrust edges by either endpoint: `of(k)` are the negative edges touching k (those k is the
    source of, then those k is the target of).

    What a hit's `contradicts` needs, over the negative edges only (a tenth of them, say) rather
    than every edge's incoming list (bench/README.md).
    """

    def build() -> EdgeLookup:
        negative = np.flatnonzero(graph.edge_polarity == Polarity.NEGATIVE)
        keys = np.concatenate([graph.edge_source.take(negative), graph.edge_target.take(negative)])
        return EdgeLookup(keys, np.concatenate([negative, negative]), graph.n_documents)

    return graph.memo(f"{STRUCTURAL_MEMO_PREFIX}negative-incidence", build)


def _grouped(keys: npt.NDArray[np.integer], values: IndexArray, n: int) -> Adjacency:
    """`values` grouped by `keys` in `[0, n)`, each group in the order given."""
    # A CSR conversion is a stable counting sort: linear, where argsort would be n log n.
    grouping = sp.coo_matrix((values, (keys, np.zeros_like(keys))), shape=(n, 1))
    grouping.has_canonical_format = True  # keep every entry: each is one edge
    grouped = grouping.tocsr()
    return Adjacency(grouped.indptr.astype(np.int64), grouped.data)


def incident_edges(graph: CorpusGraph, document: int, direction: Direction) -> IndexArray:
    """Edges a walk may follow from `document`: outgoing, plus incoming for `both`."""
    outgoing = adjacency(graph, "source").of(document)
    if direction == "out":
        return outgoing
    return np.concatenate([outgoing, adjacency(graph, "target").of(document)])


class Frontier:
    """Mutable state of one walk: the best link from the selected set to every document."""

    def __init__(self, graph: CorpusGraph, direction: Direction, negative_factor: float) -> None:
        n = graph.n_documents
        self._graph = graph
        self._direction: Direction = direction
        self._negative_factor = negative_factor
        self.strength: FloatArray = np.zeros(n)  # c(d | S); 0 means not reachable
        self.via_edge: IndexArray = np.full(n, -1, dtype=np.int64)
        self.via_from: IndexArray = np.full(n, -1, dtype=np.int64)

    def add(self, document: int) -> None:
        """`document` joined the selected set: offer its edges to its neighbours."""
        graph = self._graph
        outgoing = adjacency(graph, "source").of(document)
        edges, neighbours = outgoing, graph.edge_target[outgoing]
        backward = np.zeros(len(outgoing), dtype=bool)
        if self._direction == "both":
            incoming = adjacency(graph, "target").of(document)
            edges = np.concatenate([outgoing, incoming])
            neighbours = np.concatenate([neighbours, graph.edge_source[incoming]])
            backward = np.concatenate([backward, np.ones(len(incoming), dtype=bool)])
        if not len(edges):
            return
        rho = np.where(graph.edge_polarity[edges] == Polarity.NEGATIVE, self._negative_factor, 1.0)
        strength = graph.edge_weight[edges] * rho * np.where(backward, BACKWARD_WEIGHT, 1.0)
        etype = graph.edge_type[edges]
        # Best edge per neighbour: strongest, then forward, then earliest type (lexsort: last key
        # is primary).
        order = np.lexsort((etype, backward, -strength, neighbours))
        neighbours, strength, edges = neighbours[order], strength[order], edges[order]
        first = np.ones(len(neighbours), dtype=bool)
        first[1:] = neighbours[1:] != neighbours[:-1]
        neighbours, strength, edges = neighbours[first], strength[first], edges[first]

        current = self.strength[neighbours]
        better = (strength > current) | (
            (strength == current) & (document < self.via_from[neighbours])
        )
        chosen = neighbours[better]
        self.strength[chosen] = strength[better]
        self.via_edge[chosen] = edges[better]
        self.via_from[chosen] = document
