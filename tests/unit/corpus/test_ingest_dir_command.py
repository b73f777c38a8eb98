"""`mnemo ingest-dir`: the dry-run output, the reports, and the checks before publishing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mnemo_cli.main import main

from .conftest import TreeWriter

TENANT = "4b1c0b8e-35d5-4a5f-9c69-0d3f7fd0a5b8"


@pytest.fixture
def handbook(write_tree: TreeWriter) -> Path:
    return write_tree(
        {
            "intro.md": "# Intro\nStart with [[refund rules]] and [[nobody has this]].",
            "billing/refunds.md": "---\naliases: [refund rules]\n---\n# Refunds\n",
            "links.json": json.dumps({"intro.md": ["billing/refunds.md", "billing/later.md"]}),
            "list.json": "[]",
        }
    )


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str], list[str]]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out.splitlines(), captured.err.splitlines()


def test_a_dry_run_prints_one_json_line_per_command_and_a_summary_on_stderr(
    handbook: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(
        [
            "ingest-dir",
            str(handbook),
            "--corpus",
            "Handbook",
            "--tenant",
            TENANT,
            "--cross-links-file",
            "links.json",
            "--dry-run",
        ],
        capsys,
    )
    assert code == 0
    lines = [json.loads(line) for line in out]
    assert {(line["type"], line["tenant"], line["corpus"]) for line in lines} == {
        ("mnemo.persist.v1", TENANT, "Handbook")
    }
    assert [(line["data"]["store"], line["data"]["values"].get("id")) for line in lines[:2]] == [
        ("Documents", "billing/refunds.md"),
        ("Documents", "intro.md"),
    ]
    assert [line["data"]["values"] for line in lines[2:]] == [
        {"from_id": "intro.md", "to_id": "billing/refunds.md", "etype": "depend", "weight": 0.5},
        {"from_id": "intro.md", "to_id": "billing/refunds.md", "etype": "cite", "weight": 0.5},
        {"from_id": "intro.md", "to_id": "billing/later.md", "etype": "depend", "weight": 0.5},
    ]
    assert err[0] == (
        f"ingest-dir {handbook} (corpus Handbook, tenant {TENANT}): 2 documents, 3 edges (1 pending), "
        "2 unresolved links; dry run, nothing published"
    )
    assert err[1:] == [
        "unresolved link: intro.md -> billing/later.md "
        "(related: no such entry; kept as a pending edge)",
        "unresolved link: intro.md -> nobody has this (wiki-link: no entry has this alias)",
    ]


def test_stores_columns_and_link_edges_follow_the_options(
    handbook: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(
        [
            "ingest-dir",
            str(handbook),
            "--corpus",
            "H",
            "--tenant",
            TENANT,
            "--dry-run",
            "--cross-links-file",
            "links.json",
            "--documents-store",
            "Memories",
            "--document-columns",
            "mid,label",
            "--edges-store",
            "Links",
            "--edge-columns",
            "a,b,kind,w",
            "--link-etype",
            "elaborate",
            "--link-weight",
            "0.7",
            "--wiki-link-weight",
            "1",
        ],
        capsys,
    )
    assert code == 0
    data = [json.loads(line)["data"] for line in out]
    assert data[0] == {
        "store": "Memories",
        "values": {"mid": "billing/refunds.md", "label": "Refunds"},
    }
    assert data[2] == {
        "store": "Links",
        "values": {"a": "intro.md", "b": "billing/refunds.md", "kind": "elaborate", "w": 0.7},
    }
    assert data[3]["values"]["w"] == 1.0


def test_without_dry_run_it_checks_the_database_first_and_says_how_to_reach_it(
    handbook: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MNEMO_OWNER_DATABASE_URL", raising=False)
    code, out, err = run(["ingest-dir", str(handbook), "--corpus", "H", "--tenant", TENANT], capsys)
    assert code == 2
    assert out == []
    assert len(err) == 1
    assert err[0].startswith("mnemo: error: MNEMO_OWNER_DATABASE_URL is not set")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--link-weight", "1.5"], "related_weight must be in (0, 1], got 1.5"),
        (["--edge-columns", "a,b,c"], "--edge-columns takes FROM,TO,ETYPE,WEIGHT"),
        (["--document-columns", "id,id"], "each column must be different"),
        (["--extra-aliases-file", "missing.json"], "--extra-aliases-file missing.json: no such"),
        (["--tenant", " "], "--tenant ' ' is not a tenant id"),
        (["--tenant", "acme"], "--tenant 'acme' is not a tenant id: give the uuid"),
        (["--corpus", ""], "--corpus '' is not a corpus name"),
        (["--corpus", "a b"], "--corpus 'a b' is not a corpus name"),
        (["--summaries-file", "nope.json"], "--summaries-file nope.json: no such file"),
        (["--summaries-file", "intro.md"], "--summaries-file intro.md is not valid JSON"),
        (
            ["--cross-links-file", "list.json"],
            "--cross-links-file list.json must hold a JSON object",
        ),
    ],
)
def test_bad_options_are_one_line_errors(
    handbook: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    code, _, err = run(
        ["ingest-dir", str(handbook), "--corpus", "H", "--tenant", TENANT, "--dry-run", *extra],
        capsys,
    )
    assert code == 2
    assert len(err) == 1
    assert message in err[0]


def test_a_root_that_is_not_a_folder_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(
        ["ingest-dir", str(tmp_path / "nope"), "--corpus", "H", "--tenant", TENANT, "--dry-run"],
        capsys,
    )
    assert code == 2
    assert err == [f"mnemo: error: corpus root {str(tmp_path / 'nope')!r} is not a directory"]


def test_a_duplicate_alias_is_a_one_line_error_naming_both_files(
    write_tree: TreeWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    root = write_tree({"a.md": "---\naliases: [x y]\n---\n", "b.md": "---\naliases: [x y]\n---\n"})
    code, _, err = run(
        ["ingest-dir", str(root), "--corpus", "H", "--tenant", TENANT, "--dry-run"], capsys
    )
    assert code == 2
    assert "'a.md' and 'b.md'" in err[0]
