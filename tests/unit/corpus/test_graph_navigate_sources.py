"""`mnemo graph navigate --dir ROOT | --bundled-docs`: folders of markdown navigated in-process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mnemo_cli.main import main

from .conftest import TreeWriter


def test_the_bundled_docs_answer_the_scoping_question_on_a_fresh_install(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(
        [
            "graph", "navigate", "--bundled-docs",
            "--query", "how do I scope a navigation to one client",
        ]
    )  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0
    result = json.loads(captured.out)
    assert result["hits"][0]["id"] == "concepts/tenants-and-scopes.md"
    assert result["diagnostics"]["skipped_edges"] == 0
    assert captured.err == ""


def test_a_folder_is_navigated_and_its_unresolved_links_are_reported(
    write_tree: TreeWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    root = write_tree(
        {
            "a.md": "# Parcel refunds\nSee [[photo evidence]] and [[nobody]].",
            "b.md": "---\naliases: [photo evidence]\n---\n# Damage photos\nParcel damage.",
        }
    )
    code = main(
        ["graph", "navigate", "--dir", str(root), "--query", "parcel damage", "--from", "a.md"]
    )
    captured = capsys.readouterr()
    assert code == 0
    hits = json.loads(captured.out)["hits"]
    assert [hit["id"] for hit in hits] == ["a.md", "b.md"]
    # The strongest link wins: the classifier's `elaborate` (the name "Parcel", held by these two
    # documents only) outweighs the wiki-link's `cite` of weight 0.5.
    assert hits[1]["via"] == {"from": "a.md", "etype": "elaborate", "weight": 1.0}
    assert captured.err.splitlines() == [
        "mnemo: warning: unresolved link: a.md -> nobody (wiki-link: no entry has this alias)"
    ]


def test_only_one_graph_source_may_be_given(
    write_tree: TreeWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    root = write_tree({"a.md": "A"})
    code = main(["graph", "navigate", "--dir", str(root), "--bundled-docs", "--query", "x"])
    assert code == 2
    assert capsys.readouterr().err == (
        "mnemo: error: give one graph source: GRAPH.json, --dir ROOT or --bundled-docs\n"
    )


def test_a_folders_sidecars_are_read_by_default(
    write_tree: TreeWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    root = write_tree(
        {
            "a.md": "# Parcel refunds\nMoney back.",
            "b.md": "# Courier schedule\nPickup times.",
            "links.json": json.dumps({"a.md": ["b.md", "gone.md"]}),
            "summaries.json": json.dumps({"b.md": "When the courier collects parcels"}),
        }
    )
    argv = ["graph", "navigate", "--dir", str(root), "--query", "courier pickup", "--from", "a.md"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    hits = json.loads(captured.out)["hits"]
    assert [hit["id"] for hit in hits] == ["a.md", "b.md"]
    assert hits[1]["via"]["from"] == "a.md"
    assert hits[1]["via"]["etype"] == "depend"
    assert "a.md -> gone.md" in captured.err


def test_graph_epr_and_navigate_report_skipped_and_clamped_weights(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    graph = {
        "documents": [{"id": "a", "title": "alpha"}, {"id": "b", "title": "beta"}],
        "edges": [
            {"from": "a", "to": "b", "etype": "cite", "weight": 2.5},
            {"from": "b", "to": "a", "etype": "cite", "weight": 0},
            {"from": "a", "to": "zz", "etype": "cite", "weight": 0.5},
        ],
    }
    path = tmp_path / "graph.json"
    path.write_text(json.dumps(graph), encoding="utf-8")
    expected = {
        "skipped_edges": 1,
        "skipped": {"unknown_endpoint": 1, "unknown_type": 0, "non_finite_weight": 0},
        "clamped_weights": 2,
    }
    for argv in (["graph", "epr", str(path)], ["graph", "navigate", str(path), "--query", "beta"]):
        assert main(argv) == 0
        captured = capsys.readouterr()
        diagnostics = json.loads(captured.out)["diagnostics"]
        assert {key: diagnostics[key] for key in expected} == expected
        assert captured.err.splitlines() == [
            "mnemo: warning: 1 edge(s) skipped (1 unknown endpoint, 0 unknown type, 0 non-finite "
            "weight)",
            "mnemo: warning: 2 edge weight(s) outside [1e-09, 1] clamped into it",
        ]
