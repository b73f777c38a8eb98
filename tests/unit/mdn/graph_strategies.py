"""Hypothesis strategies for small random corpus graphs (documents, edges, queries)."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st
from mnemo_mdn import RELATION_TYPES, CorpusGraph, Document, Edge

VOCABULARY = ("alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "theta")


@dataclass(frozen=True)
class GraphSpec:
    """Documents and edges before they are built, so a test can rebuild them in another order."""

    documents: tuple[Document, ...]
    edges: tuple[Edge, ...]

    def build(self) -> CorpusGraph:
        return CorpusGraph.build(self.documents, self.edges)


titles = st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=3).map(" ".join)
queries = st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=4).map(" ".join)
weights = st.floats(min_value=0.01, max_value=1.0, allow_nan=False)


@st.composite
def graph_specs(draw: st.DrawFn, max_documents: int = 8, max_edges: int = 20) -> GraphSpec:
    n = draw(st.integers(min_value=1, max_value=max_documents))
    ids = [f"doc{k:02d}" for k in range(n)]
    documents = tuple(
        Document(
            id=doc_id,
            title=draw(titles),
            body=draw(st.none() | titles),
            depth=draw(st.floats(min_value=0.0, max_value=5.0)),
            recency=draw(st.floats(min_value=0.0, max_value=1.0)),
        )
        for doc_id in ids
    )
    edges = tuple(
        draw(
            st.lists(
                st.builds(
                    Edge,
                    source=st.sampled_from(ids),
                    target=st.sampled_from(ids),
                    etype=st.sampled_from(RELATION_TYPES),
                    weight=weights,
                ),
                max_size=max_edges,
            )
        )
    )
    return GraphSpec(documents, edges)
