"""`mnemo check` and `mnemo explain-where`, run through the CLI entry point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mnemo_axon import Deployment
from mnemo_cli import main as cli_main

from .declarations import SEED_EXAMPLES, seed_documents_source

TENANT = "4b1c0b8e-35d5-4a5f-9c69-0d3f7fd0a5b8"


@pytest.fixture(autouse=True)
def only_these_commands(monkeypatch: pytest.MonkeyPatch) -> None:
    # These tests are about two commands; other command modules must not be able to break them.
    monkeypatch.setattr(cli_main, "COMMAND_MODULES", ("check", "explain_where"))


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli_main.main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def seed_files(tmp_path: Path) -> list[str]:
    documents = tmp_path / "documents.axon"
    documents.write_text(seed_documents_source().text, encoding="utf-8")
    return [*(str(path) for path in sorted(SEED_EXAMPLES.glob("*.axon"))), str(documents)]


def test_check_summarises_what_the_seed_declares_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(["check", *seed_files(tmp_path)], capsys)
    assert code == 0
    assert err == ""
    assert out == (
        "ok: 2 axonstores (LtmSummaries, LtmEdges), 4 corpora (PolicyDocs: inline, "
        "ClinicalGuidelines: mcp, SessionKnowledge: graph, LtmGraph: store_graph), 6 documents "
        "declared in 7 files; 6 flow blocks skipped (flows are not compiled)\n"
    )


def test_check_json_prints_the_ir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["check", "--json", *seed_files(tmp_path)], capsys)
    assert code == 0
    deployment = Deployment.from_json(out)
    assert [corpus.name for corpus in deployment.corpora] == [
        "PolicyDocs",
        "ClinicalGuidelines",
        "SessionKnowledge",
        "LtmGraph",
    ]


def test_check_prints_every_error_compiler_style_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken.axon"
    broken.write_text(
        "corpus Empty { documents: [] }\ncorpus C { documents: [ghost] adaptive: true }\n",
        encoding="utf-8",
    )
    code, out, err = run(["check", str(broken)], capsys)
    assert code == 1
    assert out == ""
    assert err.splitlines() == [
        f"{broken}:1:8: error: Corpus 'Empty' requires at least one document or an mcp_server "
        "(G1: D ≠ ∅)",
        f"{broken}:2:24: error: Corpus 'C': unknown document 'ghost'",
        f"{broken}:2:41: error: Corpus 'C': `adaptive: true` requires `relations:` — memory "
        "deforms the graph, an edgeless corpus has nothing to learn",
        "3 errors",
    ]


def test_check_refuses_an_unreadable_file_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(["check", str(tmp_path / "absent.axon")], capsys)
    assert code == 2
    assert err.startswith(f"mnemo: error: cannot read {tmp_path / 'absent.axon'}")
    assert err.count("\n") == 1


def test_explain_where_prints_the_sql_and_the_bound_parameters(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(
        [
            "explain-where",
            "tenant_id == '${tenant_id}' AND weight > 0.5",
            "--columns",
            "tenant_id:Uuid, weight:Float",
            "--params",
            json.dumps({"tenant_id": TENANT}),
        ],
        capsys,
    )
    assert code == 0
    lines = out.splitlines()
    assert lines[:3] == [
        '("tenant_id" = $1::uuid AND "weight" > $2::double precision)',
        f'  $1 (uuid) = "{TENANT}"',
        "  $2 (double precision) = 0.5",
    ]
    assert lines[3].startswith("scope digest: ")


def test_explain_where_json_prints_sql_and_params(capsys: pytest.CaptureFixture[str]) -> None:
    payload = "x' OR '1'='1"
    code, out, _ = run(
        [
            "explain-where",
            "name = '${who}' OR name = NULL",
            "--columns",
            "name:Text",
            "--params",
            json.dumps({"who": payload}),
            "--json",
            "--first-param",
            "3",
            "--qualifier",
            "d",
        ],
        capsys,
    )
    assert code == 0
    assert json.loads(out) == {
        "sql": '("d"."name" = $3::text OR "d"."name" IS NULL)',
        "params": [payload],
    }


def test_explain_where_names_a_filter_error_and_its_position_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(
        ["explain-where", "tenant_id == '${tenant}'", "--columns", "tenant_id:Uuid"], capsys
    )
    assert code == 1
    assert out == ""
    assert (
        err == "mnemo: error: where: unbound_parameter at position 14: unbound parameter 'tenant'\n"
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--columns", "a"], "--columns: expected col:Type, got 'a'"),
        (["--columns", "a:Varchar"], "--columns: store 'store': column 'a' has unknown type"),
        (["--columns", "a:Text", "--params", "[1]"], "--params must be a JSON object, got list"),
        (["--columns", "a:Text", "--params", "{"], "--params is not valid JSON"),
        (["--columns", "a:Text", "--qualifier", "x y"], "qualifier 'x y' is not a plain"),
    ],
)
def test_explain_where_refuses_bad_arguments_with_a_usage_error(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(["explain-where", "a = 'x'", *argv], capsys)
    assert code == 2
    assert err.startswith(f"mnemo: error: {message}")


def documents_folder(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    (root / "policies").mkdir(parents=True)
    (root / "sessions").mkdir()
    for name in ("PrivacyPolicy", "TermsOfService"):
        (root / "policies" / f"{name}.md").write_text(f"# {name}\n", encoding="utf-8")
    (root / "policies" / "refunds.md").write_text(
        "---\naliases: [RefundPolicy]\n---\n# Refunds\n", encoding="utf-8"
    )
    for name in ("sess_a", "sess_b", "sess_c"):
        (root / "sessions" / f"{name}.md").write_text(f"# {name}\n", encoding="utf-8")
    return root


def test_check_documents_dir_resolves_the_seeds_forms_a_and_c_as_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    forms = [
        str(SEED_EXAMPLES / "form_a_policy_docs.axon"),
        str(SEED_EXAMPLES / "form_c_session_knowledge.axon"),
    ]
    code, _, err = run(["check", *forms], capsys)
    assert code == 1
    assert "unknown document 'PrivacyPolicy'" in err

    folder = str(documents_folder(tmp_path))
    code, out, err = run(["check", "--json", *forms, "--documents", folder], capsys)
    assert (code, err) == (0, "")
    deployment = Deployment.from_json(out)
    policy = {ref.name: ref.path for ref in deployment.corpora[0].documents}
    assert policy == {
        "PrivacyPolicy": "policies/PrivacyPolicy.md",
        "TermsOfService": "policies/TermsOfService.md",
        "RefundPolicy": "policies/refunds.md",
    }


def test_check_documents_that_is_not_a_folder_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    form = str(SEED_EXAMPLES / "form_a_policy_docs.axon")
    code, out, err = run(["check", form, "--documents", str(tmp_path / "missing")], capsys)
    assert (code, out) == (2, "")
    assert err == f"mnemo: error: --documents {tmp_path / 'missing'}: not a directory\n"
