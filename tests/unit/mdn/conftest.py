"""Graphs of the spec's reference examples, shared by the MDN engine's tests."""

from __future__ import annotations

import pytest
from mnemo_mdn import CorpusGraph, Document, Edge


@pytest.fixture
def example_a() -> CorpusGraph:
    """MDN.md §2 Example A: priors (depth, recency) per document, λ = 0.5."""
    return CorpusGraph.build(
        [
            Document("1", "one", depth=0, recency=0.1),
            Document("2", "two", depth=1, recency=0.3),
            Document("3", "three", depth=2, recency=0.9),
        ],
        [
            Edge("2", "1", "cite", 0.9),
            Edge("3", "1", "cite", 0.8),
            Edge("3", "2", "contradict", 0.7),
        ],
    )


@pytest.fixture
def session_knowledge() -> CorpusGraph:
    """MDN.md §2 Example B: the seed's `SessionKnowledge` corpus, default priors."""
    return CorpusGraph.build(
        [Document("sess_a", "sess_a"), Document("sess_b", "sess_b"), Document("sess_c", "sess_c")],
        [
            Edge("sess_b", "sess_a", "cite", 0.9),
            Edge("sess_c", "sess_a", "contradict", 0.7),
            Edge("sess_c", "sess_b", "elaborate", 0.5),
        ],
    )


@pytest.fixture
def contract_corpus() -> CorpusGraph:
    """MDN.md §4.1 parity reference: three titled documents, the first citing the others."""
    return CorpusGraph.build(
        [
            Document("0", "intro overview"),
            Document("1", "liability limitation cap"),
            Document("2", "termination notice"),
        ],
        [Edge("0", "1", "cite", 0.9), Edge("0", "2", "cite", 0.9)],
    )


@pytest.fixture
def memory_graph() -> CorpusGraph:
    """MDN.md §5 reference: `1→2`, `1→3`, `2→4`, all `cite 0.5`."""
    return CorpusGraph.build(
        [Document(k, f"document {k}") for k in ("1", "2", "3", "4")],
        [Edge("1", "2", "cite", 0.5), Edge("1", "3", "cite", 0.5), Edge("2", "4", "cite", 0.5)],
    )
