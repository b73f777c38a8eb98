"""`mnemo mcp serve` takes its token from the environment variable `--token-env` names, never
from a flag, and says what is wrong when that variable is missing or a token was passed instead."""

from __future__ import annotations

import pytest
from mnemo_cli.commands.mcp import token_from
from mnemo_cli.errors import CliError
from mnemo_cli.main import build_parser


def test_the_token_is_read_from_the_named_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_MNEMO_TOKEN", " eyJ.token \n")
    assert token_from("AGENT_MNEMO_TOKEN") == "eyJ.token"


def test_a_missing_variable_is_refused_with_how_to_set_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOPE_TOKEN", raising=False)
    with pytest.raises(CliError, match="NOPE_TOKEN is empty or not set"):
        token_from("NOPE_TOKEN")


def test_a_token_passed_where_the_variable_name_goes_is_refused_without_echoing_it() -> None:
    with pytest.raises(CliError, match="NAME of an environment variable") as raised:
        token_from("eyJhbGciOiJIUzI1NiJ9.eyJ0ZW5hbnQiOiJ4In0.c2lnbmF0dXJl")
    assert "c2lnbmF0dXJl" not in str(raised.value)


def test_serve_has_no_token_flag() -> None:
    parser = build_parser("mcp")
    args = parser.parse_args(["mcp", "serve", "--url", "http://n", "--corpus", "A"])
    assert (args.url, args.token_env, args.corpus) == ("http://n", "MNEMO_TOKEN", ["A"])
    with pytest.raises(SystemExit):
        parser.parse_args(["mcp", "serve", "--token", "secret"])
