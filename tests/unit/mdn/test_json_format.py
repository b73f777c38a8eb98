"""The JSON graph format: reading, writing, and clear errors for malformed input."""

from __future__ import annotations

import math

import pytest
from mnemo_mdn import CorpusGraph, Document, Edge, GraphFormatError, graph_from_json, graph_to_json


def test_a_json_graph_reads_documents_in_file_order_with_optional_fields() -> None:
    graph = graph_from_json(
        {
            "documents": [
                {"id": "b", "title": "B", "body": "text", "depth": 1, "recency": 0.2},
                {"id": "a", "title": "A"},
            ],
            "edges": [{"from": "b", "to": "a", "etype": "cite", "weight": 0.9}],
        }
    )
    assert graph.documents == (
        Document("b", "B", body="text", depth=1.0, recency=0.2),
        Document("a", "A"),
    )
    assert graph.edges == (Edge("b", "a", "cite", 0.9),)


def test_edges_may_be_omitted() -> None:
    assert graph_from_json({"documents": [{"id": "a", "title": "A"}]}).n_edges == 0


def test_the_json_format_round_trips(example_a: CorpusGraph) -> None:
    again = graph_from_json(graph_to_json(example_a))
    assert again.documents == example_a.documents
    assert again.edges == example_a.edges


def test_edges_breaking_read_rules_are_skipped_and_counted_not_rejected() -> None:
    graph = graph_from_json(
        {
            "documents": [{"id": "a", "title": "A"}],
            "edges": [
                {"from": "a", "to": "zz", "etype": "cite", "weight": 0.5},
                {"from": "a", "to": "a", "etype": "hates", "weight": 0.5},
                {"from": "a", "to": "a", "etype": "cite", "weight": math.nan},
                {"from": "a", "to": "a", "etype": "cite", "weight": 7},
            ],
        }
    )
    assert graph.diagnostics.skipped_edges == 3
    assert graph.diagnostics.clamped_weight == 1
    assert graph.edges == (Edge("a", "a", "cite", 1.0),)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "a graph must be a JSON object"),
        ({}, "the graph needs a 'documents' list"),
        ({"documents": {}}, "'documents' must be a list, got an object"),
        ({"documents": [], "nodes": []}, "the graph: unknown key 'nodes'"),
        ({"documents": ["a"]}, "documents\\[0\\] must be an object"),
        ({"documents": [{"title": "A"}]}, "documents\\[0\\] needs 'id'"),
        ({"documents": [{"id": 3, "title": "A"}]}, "documents\\[0\\].id must be a string"),
        ({"documents": [{"id": "", "title": "A"}]}, "documents\\[0\\].id must not be empty"),
        ({"documents": [{"id": "a"}]}, "documents\\[0\\] needs 'title'"),
        ({"documents": [{"id": "a", "title": "A", "body": 1}]}, "body must be a string or null"),
        ({"documents": [{"id": "a", "title": "A", "depth": "deep"}]}, "depth must be a number"),
        ({"documents": [{"id": "a", "title": "A", "depht": 1}]}, "unknown key 'depht'"),
        ({"documents": [{"id": "a", "title": "A", "recency": 2}]}, "recency must be in"),
        (
            {"documents": [{"id": "a", "title": "A"}, {"id": "a", "title": "B"}]},
            "document id 'a' appears twice",
        ),
        (
            {"documents": [{"id": "a", "title": "A"}], "edges": [{"from": "a", "to": "a"}]},
            "edges\\[0\\] needs 'etype'|needs a 'weight'",
        ),
        (
            {
                "documents": [{"id": "a", "title": "A"}],
                "edges": [{"from": "a", "to": "a", "etype": "cite", "weight": "heavy"}],
            },
            "edges\\[0\\].weight must be a number in \\(0, 1\\], got a string",
        ),
        (
            {
                "documents": [{"id": "a", "title": "A"}],
                "edges": [{"from": "a", "to": "a", "etype": "cite", "weight": True}],
            },
            "weight must be a number",
        ),
    ],
)
def test_malformed_json_graphs_raise_a_format_error_naming_the_place(
    data: object, message: str
) -> None:
    with pytest.raises(GraphFormatError, match=message):
        graph_from_json(data)  # type: ignore[arg-type]  # malformed input on purpose


def test_a_weight_too_large_for_a_float_is_skipped_and_counted_like_an_infinite_one() -> None:
    graph = graph_from_json(
        {
            "documents": [{"id": "a", "title": "A"}, {"id": "b", "title": "B"}],
            "edges": [{"from": "a", "to": "b", "etype": "cite", "weight": 10**400}],
        }
    )
    assert graph.diagnostics.non_finite_weight == 1
    assert graph.n_edges == 0


def test_a_prior_too_large_for_a_float_is_named_by_its_size_not_printed() -> None:
    with pytest.raises(GraphFormatError, match="depth must be finite, got an integer of about 401"):
        graph_from_json({"documents": [{"id": "a", "title": "A", "depth": 10**400}]})
