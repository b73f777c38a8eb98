"""`mnemo mcp serve` against the running stack's navigator, spoken to over stdio by two clients:
the MCP SDK's own, and one Mnemo did not write, the MCP Inspector's CLI (npm
`@modelcontextprotocol/inspector-cli`, installed under .local/mcp-inspector by this module's setup).
The server reads its token from an environment variable; the tenant and the end-client are the
token's, enforced by the navigator as for any HTTP caller."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp_types import TextResourceContents

from tests.e2e.test_client import World, stack_world

ROOT = Path(__file__).resolve().parents[2]
MNEMO = str(Path(sys.executable).with_name("mnemo"))
INSPECTOR_PACKAGE = "@modelcontextprotocol/inspector-cli@1.0.3"
INSPECTOR_HOME = ROOT / ".local" / "mcp-inspector"
TOKEN_VARIABLE = "AGENT_MNEMO_TOKEN"


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    with stack_world() as made:
        yield made


def _server(world: World, token: str) -> StdioServerParameters:
    """The server an agent host starts: the token in the environment, never in its arguments."""
    return StdioServerParameters(
        command=MNEMO,
        args=[
            *("mcp", "serve", "--url", world.url),
            *("--token-env", TOKEN_VARIABLE, "--corpus", world.corpus),
        ],
        env={"PATH": os.environ.get("PATH", ""), TOKEN_VARIABLE: token},
        cwd=str(ROOT),
    )


def _text(result: Any) -> str:
    return " ".join(getattr(block, "text", "") for block in result.content)


async def test_the_sdk_client_over_stdio_navigates_retrieves_and_reads_resources_as_its_tenant(
    world: World,
) -> None:
    async with Client(_server(world, world.token(world.tenant_a)), read_timeout_seconds=60) as mcp:
        tools = {tool.name for tool in (await mcp.list_tools()).tools}
        assert tools == {"navigate", "retrieve", "remember", "list_corpora"}

        walked = await mcp.call_tool(
            "navigate", {"corpus": world.corpus, "query": "remember recall", "budget": 20}
        )
        assert not walked.is_error, _text(walked)
        assert walked.structured_content is not None
        hits = {hit["id"] for hit in walked.structured_content["hits"]}
        assert hits
        assert all(hit.startswith("a") for hit in hits), hits

        listed = await mcp.call_tool("list_corpora", {})
        assert listed.structured_content is not None
        (corpus,) = listed.structured_content["corpora"]
        assert corpus["id"] == world.corpus
        assert isinstance(corpus["revision"], int)
        assert corpus["error"] is None

        read = await mcp.read_resource(corpus["uri"])
        (content,) = read.contents
        assert isinstance(content, TextResourceContents)
        page = json.loads(content.text)
        assert len(page["documents"]) == 6
        document = await mcp.read_resource(page["documents"][0]["uri"])
        (body,) = document.contents
        assert isinstance(body, TextResourceContents)
        assert json.loads(body.text)["id"] == page["documents"][0]["id"]

    async with Client(_server(world, world.token(world.tenant_b)), read_timeout_seconds=60) as mcp:
        found = await mcp.call_tool(
            "retrieve", {"corpus": world.corpus, "query": "remember recall", "k": 20}
        )
        assert found.structured_content is not None
        ids = {item["id"] for item in found.structured_content["items"]}
        assert ids
        assert all(i.startswith("bc1-") for i in ids), ids


async def test_a_confined_token_gets_the_navigators_refusal_as_a_tool_error(world: World) -> None:
    token = world.token(world.tenant_a, {"tenant_id": "c1"})
    async with Client(_server(world, token), read_timeout_seconds=60) as mcp:
        refused = await mcp.call_tool("navigate", {"corpus": world.corpus, "query": "remember"})
        listed = await mcp.call_tool("list_corpora", {})
    assert refused.is_error
    assert "403 SCOPE_FORBIDDEN" in _text(refused)
    assert listed.structured_content is not None
    (corpus,) = listed.structured_content["corpora"]
    assert corpus["revision"] is None
    assert "SCOPE_FORBIDDEN" in corpus["error"]


@pytest.fixture(scope="module")
def inspector() -> Path:
    """The Inspector's CLI, installed once from npm under .local (pinned)."""
    binary = INSPECTOR_HOME / "node_modules" / ".bin" / "mcp-inspector-cli"
    if not binary.exists():
        npm = shutil.which("npm")
        if npm is None:
            pytest.fail("npm is not installed: the MCP Inspector test needs node and npm")
        INSPECTOR_HOME.mkdir(parents=True, exist_ok=True)
        installed = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--loglevel=error", INSPECTOR_PACKAGE],
            cwd=INSPECTOR_HOME,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert installed.returncode == 0, f"npm install failed:\n{installed.stderr[-3000:]}"
    return binary


def _inspect(inspector: Path, config: Path, *method: str) -> Any:
    # The CLI reads its own package.json at "../package.json" relative to the working directory
    # (else "../../"): node_modules is the directory from which that finds it.
    result = subprocess.run(
        [str(inspector), "--cli", "--config", str(config), "--server", "mnemo", *method],
        cwd=INSPECTOR_HOME / "node_modules",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, f"{result.stdout[-2000:]}\n{result.stderr[-3000:]}"
    return json.loads(result.stdout[result.stdout.index("{") :])


def test_the_mcp_inspector_lists_the_tools_and_navigates_the_stack(
    world: World, inspector: Path, tmp_path: Path
) -> None:
    # The configuration an agent host needs (README, "Agents: the MCP server").
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "mnemo": {
                        "command": MNEMO,
                        "args": ["mcp", "serve", "--url", world.url, "--corpus", world.corpus],
                        "env": {"MNEMO_TOKEN": world.token(world.tenant_a)},
                    }
                }
            }
        )
    )
    listed = _inspect(inspector, config, "--method", "tools/list")
    assert {tool["name"] for tool in listed["tools"]} == {
        "navigate",
        "retrieve",
        "remember",
        "list_corpora",
    }

    called = _inspect(
        inspector,
        config,
        "--method",
        "tools/call",
        "--tool-name",
        "navigate",
        "--tool-arg",
        f"corpus={world.corpus}",
        "--tool-arg",
        "query=remember recall",
        "--tool-arg",
        "budget=5",
    )
    assert not called.get("isError"), called
    hits = called["structuredContent"]["hits"]
    assert hits
    assert all(hit["id"].startswith("a") for hit in hits), hits
