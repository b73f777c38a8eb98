"""`mnemo graph epr|navigate`: the embedded engine on a JSON graph file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from mnemo_cli.main import main

EXAMPLE_A = {
    "documents": [
        {"id": "1", "title": "one", "depth": 0, "recency": 0.1},
        {"id": "2", "title": "two", "depth": 1, "recency": 0.3},
        {"id": "3", "title": "three", "depth": 2, "recency": 0.9},
    ],
    "edges": [
        {"from": "2", "to": "1", "etype": "cite", "weight": 0.9},
        {"from": "3", "to": "1", "etype": "cite", "weight": 0.8},
        {"from": "3", "to": "2", "etype": "contradict", "weight": 0.7},
    ],
}

CONTRACTS = {
    "documents": [
        {"id": "0", "title": "intro overview"},
        {"id": "1", "title": "liability limitation cap"},
        {"id": "2", "title": "termination notice"},
    ],
    "edges": [
        {"from": "0", "to": "1", "etype": "cite", "weight": 0.9},
        {"from": "0", "to": "2", "etype": "cite", "weight": 0.9},
    ],
}


QUERY_FROM_SEED = ("--query", "liability", "--from", "0", "--budget", "2")


def write_graph(tmp_path: Path, data: object, name: str = "graph.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_graph_epr_prints_the_three_vectors_and_the_iteration_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(["graph", "epr", write_graph(tmp_path, EXAMPLE_A)], capsys)
    assert (code, err) == (0, "")
    payload = json.loads(out)
    assert list(payload) == ["epr", "epr_plus", "epr_minus", "iterations", "diagnostics"]
    assert payload["iterations"] == 42
    assert payload["epr"] == pytest.approx(
        {"1": 0.4900822581, "2": -0.0350261440, "3": 0.0449438860}, abs=1e-9
    )


def test_graph_epr_takes_damping_and_lambda(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_graph(tmp_path, EXAMPLE_A)
    _, out, _ = run(["graph", "epr", path, "--lambda", "0"], capsys)
    payload = json.loads(out)
    assert payload["epr"] == pytest.approx(payload["epr_plus"])
    _, damped, _ = run(["graph", "epr", path, "--damping", "0.5"], capsys)
    assert json.loads(damped)["iterations"] < 42


def test_graph_epr_warns_on_stderr_about_skipped_edges(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = {**EXAMPLE_A, "edges": [{"from": "1", "to": "9", "etype": "cite", "weight": 0.5}]}
    code, out, err = run(["graph", "epr", write_graph(tmp_path, data)], capsys)
    assert code == 0
    assert json.loads(out)["iterations"] >= 1
    assert err.startswith("mnemo: warning: 1 edge(s) skipped (1 unknown endpoint")


def test_graph_navigate_in_parity_mode_reproduces_the_reference_walk(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["graph", "navigate", write_graph(tmp_path, CONTRACTS), "--query", "liability cap"]
    argv += ["--from", "intro overview", "--budget", "3", "--mode", "axon"]
    code, out, _ = run(argv, capsys)
    assert code == 0
    payload = json.loads(out)
    assert list(payload) == ["hits", "trail", "coverage", "diagnostics"]
    assert [hit["id"] for hit in payload["hits"]] == ["0", "1"]
    assert payload["trail"] == "intro overview (Δ=0.00) → liability limitation cap (Δ=2.00)"
    assert payload["coverage"] == 1.0
    assert payload["hits"][1]["via"] == {"from": "0", "etype": "cite", "weight": 0.9}


def test_graph_navigate_defaults_to_mdn_mode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_graph(tmp_path, CONTRACTS)
    code, out, _ = run(
        ["graph", "navigate", path, "-q", "termination", "--direction", "both"], capsys
    )
    assert code == 0
    payload = json.loads(out)
    assert payload["hits"][0]["id"] == "2"
    assert payload["diagnostics"]["mode"] == "mdn"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["graph", "navigate", "--query", "x"], "no graph given: pass GRAPH.json"),
        (["graph", "epr", "{missing}"], "cannot read {missing}: No such file or directory"),
        (["graph", "epr", "{broken}"], "{broken} is not valid JSON: Expecting"),
        (["graph", "epr", "{shapeless}"], "{shapeless}: the graph needs a 'documents' list"),
        (["graph", "navigate", "{good}", "-q", "x", "--from", "nope"], "unknown seed 'nope'"),
        (["graph", "navigate", "{good}", "-q", "x", "--budget", "0"], "budget must be an integer"),
        (["graph", "epr", "{good}", "--damping", "1"], "damping must be in (0, 1), got 1.0"),
    ],
)
def test_bad_input_is_one_line_on_stderr_and_exit_status_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    files = {
        "missing": str(tmp_path / "missing.json"),
        "broken": str(tmp_path / "broken.json"),
        "shapeless": write_graph(tmp_path, {"edges": []}, "shapeless.json"),
        "good": write_graph(tmp_path, CONTRACTS, "good.json"),
    }
    (tmp_path / "broken.json").write_text('{"documents": [', encoding="utf-8")
    argv = [arg.format(**files) for arg in argv]
    code, out, err = run(argv, capsys)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith("mnemo: error: ")
    assert message.format(**files) in err


def test_the_command_runs_graph_navigate_in_a_subprocess(tmp_path: Path) -> None:
    graph = write_graph(tmp_path, CONTRACTS)
    completed = subprocess.run(
        [sys.executable, "-m", "mnemo_cli.main", "graph", "navigate", graph, *QUERY_FROM_SEED],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert completed.returncode == 0, completed.stderr
    payload = json.loads(completed.stdout)
    assert [hit["id"] for hit in payload["hits"]] == ["0", "1"]
