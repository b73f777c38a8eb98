"""The empty-query rule, the same in every command that navigates or retrieves: a blank query is a
request only with a seed document (`--from`); without one it is exit status 2 saying so."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mnemo_cli.commands import navigate as navigate_command
from mnemo_cli.main import main

GRAPH = {
    "documents": [{"id": "0", "title": "intro"}, {"id": "1", "title": "liability cap"}],
    "edges": [{"from": "0", "to": "1", "etype": "cite", "weight": 0.9}],
}


class RecordingClient:
    """Stands in for the HTTP client: records the body `mnemo navigate` would send."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def navigate(self, corpus: str, body: dict[str, Any]) -> dict[str, Any]:
        self.sent.append(body)
        return {"hits": [], "trail": "", "coverage": 0.0, "diagnostics": {}, "revision": 0}


@pytest.mark.parametrize(
    "argv",
    [
        ["navigate", "Notes", "--query", "", "--token", "t"],
        ["navigate", "Notes", "--query", "  ", "--token", "t"],
        ["retrieve", "Notes", "--query", "", "--token", "t"],
        ["graph", "navigate", "{graph}", "--query", ""],
    ],
)
def test_an_empty_query_without_a_seed_exits_2_saying_to_give_a_query_or_from(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    graph = tmp_path / "graph.json"
    graph.write_text(json.dumps(GRAPH), encoding="utf-8")
    code = main([arg.format(graph=graph) for arg in argv])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    assert captured.err.startswith("mnemo: error: --query is empty")
    assert "--from" in captured.err


def test_an_empty_query_with_a_seed_navigates_from_it_in_the_graph_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    graph = tmp_path / "graph.json"
    graph.write_text(json.dumps(GRAPH), encoding="utf-8")
    code = main(["graph", "navigate", str(graph), "--query", "", "--from", "0", "--budget", "2"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert json.loads(captured.out)["hits"][0]["id"] == "0"


def test_an_empty_query_with_a_seed_is_sent_by_the_navigate_command(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    client = RecordingClient()
    monkeypatch.setattr(navigate_command, "_client", lambda args: client)
    code = main(["navigate", "Notes", "--query", "", "--from", "a"])
    assert code == 0, capsys.readouterr().err
    assert client.sent == [{"query": "", "from": "a", "mode": "mdn", "direction": "both"}]
