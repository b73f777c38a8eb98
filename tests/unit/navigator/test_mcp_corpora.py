"""MCP-bound corpora without a server: the refusals that need none (the server's own behaviour is
tested against the npm reference server in tests/integration/navigator/test_mcp_corpus.py)."""

from __future__ import annotations

import pytest
from mnemo_navigator.mcp_corpora import (
    MAX_RESOURCE_CHARS,
    McpCorpora,
    McpServer,
    McpServerError,
    checked_text,
)
from mnemo_navigator.ports import CorpusEntry


def entry(server: str) -> CorpusEntry:
    mcp = {"server": server, "resource_uri": "kb://guidelines/"}
    return CorpusEntry("Kb", "published", "mcp", {"corpus": {"name": "Kb", "mcp": mcp}})


def test_a_resource_longer_than_a_document_may_be_is_refused_naming_it() -> None:
    assert checked_text("kb://a", "x" * MAX_RESOURCE_CHARS) == "x" * MAX_RESOURCE_CHARS
    with pytest.raises(McpServerError, match="'kb://b' is 2000001 characters"):
        checked_text("kb://b", "x" * (MAX_RESOURCE_CHARS + 1))


async def test_a_server_the_deployment_does_not_name_is_a_502_saying_where_to_configure_it() -> (
    None
):
    corpora = McpCorpora({"other": McpServer(url="http://127.0.0.1:9/mcp")})
    with pytest.raises(McpServerError, match="'kb' is not configured") as raised:
        await corpora.retrieve(entry("kb"), "guidelines", 3)
    assert raised.value.status == 502
    assert "MNEMO_NAVIGATOR_MCP_SERVERS" in str(raised.value)


async def test_a_server_that_cannot_be_reached_is_a_502_naming_it() -> None:
    corpora = McpCorpora({"kb": McpServer(url="http://127.0.0.1:9/mcp")}, timeout_seconds=20)
    with pytest.raises(McpServerError, match="MCP server 'kb' failed"):
        await corpora.retrieve(entry("kb"), "guidelines", 3)
    assert corpora.reads == 0


@pytest.mark.parametrize(
    ("settings", "refusal"),
    [
        ({"url": "http://x", "password": "p"}, "extra"),
        ({}, "exactly one of url or command"),
        ({"url": "http://x", "command": ["node", "s.js"]}, "exactly one of url or command"),
        ({"command": []}, "exactly one of url or command"),
    ],
)
def test_a_server_is_reached_by_exactly_one_of_url_or_command_and_nothing_unknown(
    settings: dict[str, object], refusal: str
) -> None:
    with pytest.raises(ValueError, match=refusal):
        McpServer.model_validate(settings)
