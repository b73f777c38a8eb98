"""Every corpus form on the running stack, driven by the `mnemo` command as the demo (`make run`)
drives it: the seed's example corpora of forms (a), (b) and (c) applied from
deploy/demo/forms/forms.axon with its documents folder, published, and one request to each served
by the stack's navigator; (b) reads `@modelcontextprotocol/server-everything`, which the navigator
runs over stdio (MNEMO_NAVIGATOR_MCP_SERVERS in deploy/local/settings.sh)."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
MNEMO = str(ROOT / ".venv" / "bin" / "mnemo")
NAVIGATOR = os.environ.get("MNEMO_NAVIGATOR_URL", "http://127.0.0.1:8080")
FORMS = ROOT / "deploy" / "demo" / "forms"


def mnemo(
    *args: str, token: str | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MNEMO_NAVIGATOR_URL": NAVIGATOR}
    if token is not None:
        env["MNEMO_TOKEN"] = token
    done = subprocess.run(
        [MNEMO, *args], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    if check:
        assert done.returncode == 0, f"mnemo {' '.join(args)}: {done.stderr}"
    return done


@pytest.fixture(scope="module")
def token() -> str:
    if not os.environ.get("MNEMO_OWNER_DATABASE_URL"):
        pytest.fail("e2e tests need the local stack: run them through `make test` (or `make up`)")
    try:
        httpx.get(f"{NAVIGATOR}/readyz", timeout=5).raise_for_status()
    except httpx.HTTPError as error:
        pytest.fail(f"the stack's navigator is not ready at {NAVIGATOR} ({error}): `make up`")
    installed = subprocess.run(
        ["bash", str(ROOT / "deploy" / "local" / "mcp-everything.sh")],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    mnemo("apply", "--documents", str(FORMS / "documents"), str(FORMS / "forms.axon"))
    for corpus in ("PolicyDocs", "ClinicalGuidelines", "SessionKnowledge"):
        mnemo("corpus", "publish", corpus)
    tenant = mnemo("tenant", "create", f"forms-{uuid.uuid4().hex[:12]}").stdout.strip()
    return mnemo("token", "--tenant", tenant).stdout.strip()


def test_an_inline_corpus_is_retrieved_and_refuses_navigation_on_the_stack(token: str) -> None:
    retrieved = json.loads(
        mnemo("retrieve", "PolicyDocs", "--query", "when are refunds paid", token=token).stdout
    )
    assert retrieved["items"][0]["id"] == "RefundPolicy"
    assert "within 30 days" in retrieved["items"][0]["content"]
    refused = mnemo("navigate", "PolicyDocs", "--query", "refunds", token=token, check=False)
    assert refused.returncode == 1
    assert "no relations" in refused.stderr


def test_an_mcp_bound_corpus_reads_the_npm_server_through_the_stacks_navigator(
    token: str,
) -> None:
    retrieved = mnemo(
        "retrieve", "ClinicalGuidelines", "--query", "architecture", "-k", "3", token=token
    )
    items = json.loads(retrieved.stdout)["items"]
    assert items
    assert all(item["source_uri"].startswith("demo://resource/static/document/") for item in items)


def test_a_declared_graph_is_navigated_from_its_seed_on_the_stack(token: str) -> None:
    answer = json.loads(
        mnemo(
            "navigate",
            "SessionKnowledge",
            "--query",
            "is the cache warm",
            "--from",
            "sess_a",
            "--budget",
            "3",
            token=token,
        ).stdout
    )
    assert answer["hits"][0]["id"] == "sess_a"
    assert {hit["id"] for hit in answer["hits"]} == {"sess_a", "sess_b", "sess_c"}
