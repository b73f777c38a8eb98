"""The terminal trace viewer turns Jaeger's query API answer into an indented span tree."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from mnemo_telemetry import trace_view

# A real answer of Jaeger v1.75.0's /api/traces/{id} for a navigation traced by mnemo_telemetry.
TRACE: dict[str, Any] = json.loads(
    (Path(__file__).parent / "data" / "jaeger_trace.json").read_text()
)["data"][0]


def test_children_are_indented_under_their_parent_in_start_order() -> None:
    lines = trace_view.render(TRACE)
    assert lines[0].startswith(f"trace {TRACE['traceID']}: 4 spans")
    names = [line.split("mnemo-navigator: ")[1].split("  [")[0] for line in lines[1:]]
    assert names == [
        "POST /v1/corpora/{corpus}/navigate",
        "mnemo.navigate",
        "SELECT docs",
        "send mnemo.audit.v1",
    ]
    indent = [len(line.split("mnemo-navigator:")[0]) for line in lines[1:]]
    assert indent[1] == indent[0] + 2
    assert indent[2] == indent[1] + 2
    assert indent[3] == indent[1]


def test_mnemo_attributes_are_shown_and_sdk_noise_is_not() -> None:
    navigate = next(line for line in trace_view.render(TRACE) if ": mnemo.navigate" in line)
    assert "mnemo.corpus=notes" in navigate
    assert "mnemo.hits.returned=3" in navigate
    assert "otel.scope.name" not in navigate


def test_a_failed_span_is_marked_and_an_orphan_becomes_a_root() -> None:
    trace = copy.deepcopy(TRACE)
    sql = next(span for span in trace["spans"] if span["operationName"] == "SELECT docs")
    sql["tags"].append({"key": "error", "type": "bool", "value": True})
    sql["references"][0]["spanID"] = "ffffffffffffffff"  # its parent was never exported
    lines = trace_view.render(trace)
    failed = next(line for line in lines if "SELECT docs" in line)
    assert failed.startswith("!")
    assert failed.index("mnemo-navigator") == lines[1].index("mnemo-navigator")


def test_an_empty_trace_says_so() -> None:
    assert trace_view.render({"traceID": "abc", "spans": []}) == ["trace abc: no spans"]


def test_an_unreachable_jaeger_says_how_to_start_it(capsys: pytest.CaptureFixture[str]) -> None:
    code = trace_view.main(["0af7651916cd43dd8448eb211c80319c", "--jaeger", "http://127.0.0.1:9"])
    assert code == 1
    assert "make ops" in capsys.readouterr().err


def test_without_a_trace_id_or_a_service_it_explains_its_usage() -> None:
    with pytest.raises(SystemExit):
        trace_view.main([])
