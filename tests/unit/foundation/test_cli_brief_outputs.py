"""The short outputs the demo prints: navigate/retrieve `--brief` lines and the audit row's trace id."""

from __future__ import annotations

from mnemo_cli.commands.audit import trace_id
from mnemo_cli.commands.navigate import brief_navigation, brief_retrieval


def test_a_brief_navigation_names_hits_by_title_with_their_edge_and_contradictions() -> None:
    answer = {
        "hits": [
            {"id": "a", "title": "Amendment", "score": 1.5, "via": None, "contradicts": ["c"]},
            {
                "id": "c",
                "title": "Cap",
                "score": 0.25,
                "via": {"from": "a", "etype": "supersede", "weight": 1.0},
                "contradicts": ["a"],
            },
        ],
        "trail": "Amendment → Cap",
        "diagnostics": {"cache": "hit", "epr_iterations": 7},
        "revision": 3,
    }
    lines = brief_navigation("Memory", answer)
    assert lines[0] == "navigate Memory: 2 hits, revision 3, graph cache hit, 7 EPR iterations"
    assert lines[1] == "    1.500  Amendment  [contradicts: Cap]"
    assert lines[2] == "    0.250  Cap  (via supersede from Amendment)  [contradicts: Amendment]"
    assert lines[3] == "trail: Amendment → Cap"


def test_an_empty_navigation_and_a_retrieval_are_one_line_each_plus_items() -> None:
    assert brief_navigation("M", {"hits": [], "trail": ""})[-1] == "trail: (empty)"
    lines = brief_retrieval("M", {"items": [{"id": "x", "title": "", "similarity": 0.5}]})
    assert lines == ["retrieve M: 1 items", "  0.500  x"]


def test_the_trace_id_of_a_traceparent_and_nothing_for_anything_else() -> None:
    trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    assert trace_id(f"00-{trace}-00f067aa0ba902b7-01") == trace
    assert trace_id(None) is None
    assert trace_id("garbage") is None
    assert trace_id(f"00-{'0' * 32}-00f067aa0ba902b7-01") is None
