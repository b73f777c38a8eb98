"""Form (b), an MCP-bound corpus, served by the navigator over the official MCP SDK's client against
a real MCP server Mnemo did not write: `@modelcontextprotocol/server-everything` (npm, pinned,
installed under .local by deploy/local/mcp-everything.sh), run by this module on loopback over
streamable HTTP. Its static documents are the corpus; its other resources are outside the prefix."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, cast

import asyncpg
import httpx
import pytest
from mnemo_auth import DEVELOPMENT_SECRET
from mnemo_axon.compiler import load_deployment
from mnemo_navigator.app import create_app
from mnemo_navigator.mcp_corpora import McpCorpora, McpServer
from mnemo_navigator.ports import CorpusEntry
from mnemo_navigator.settings import Settings
from mnemo_store.applier import apply_deployment

from tests.integration.navigator.conftest import NewTenant, Service, audited_records, navigator_dsn
from tests.integration.navigator.mcp_everything import (
    PREFIX,
    Everything,
    everything,
    running_everything,
)
from tests.waiting import eventually

__all__ = ["everything"]  # the module's fixture, used by its tests

CACHE_SECONDS = 5.0


@dataclass(frozen=True)
class McpWorld:
    service: Service
    corpus: str
    unconfigured: str
    server: str


@pytest.fixture(scope="module")
async def world(
    everything: Everything, app_dsn: str, owner_connection: asyncpg.Connection
) -> AsyncIterator[McpWorld]:
    s = uuid.uuid4().hex[:8]
    server = f"everything-{s}"
    text = (
        f'corpus Clinical_{s} from mcp("{server}", "{PREFIX}")\n'
        f'corpus Nowhere_{s} from mcp("nowhere-{s}", "kb://guidelines/2025")\n'
    )
    await apply_deployment(
        owner_connection, load_deployment(text, "mcp.axon"), gateway_base_url="http://x"
    )
    names = (f"Clinical_{s}", f"Nowhere_{s}")
    await owner_connection.execute(
        "UPDATE mnemo.corpora SET status = 'published' WHERE corpus_id = ANY($1)", list(names)
    )
    settings = Settings(
        database_url=navigator_dsn(app_dsn),
        consume_requests=False,
        token_secret=DEVELOPMENT_SECRET,
        mcp_servers={server: McpServer(url=everything.url)},
        mcp_cache_seconds=CACHE_SECONDS,
        mcp_timeout_seconds=20,
    )
    runtime = create_app(settings)
    assert runtime.app is not None
    await runtime.start()
    transport = httpx.ASGITransport(app=runtime.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://navigator") as client:
        yield McpWorld(Service(runtime, client, {}), names[0], names[1], server)
    await runtime.stop()
    await owner_connection.execute(
        "DELETE FROM mnemo.corpora WHERE corpus_id = ANY($1)", list(names)
    )


async def test_retrieve_lists_reads_and_ranks_only_the_resources_under_the_prefix(
    world: McpWorld, new_tenant: NewTenant, owner_connection: asyncpg.Connection
) -> None:
    tenant = await new_tenant()
    response = await world.service.client.post(
        f"/v1/corpora/{world.corpus}/retrieve",
        json={"query": "architecture of the server", "k": 10},
        headers=world.service.token(tenant),
    )
    assert response.status_code == 200, response.text
    items = response.json()["items"]
    assert items
    assert all(item["id"].startswith(PREFIX) for item in items)
    assert all(item["source_uri"] == item["id"] for item in items)
    assert any(item["id"] == f"{PREFIX}architecture.md" for item in items)
    assert all(0 < item["similarity"] < 1 and item["content"] for item in items)
    [record] = await audited_records(owner_connection, tenant)
    assert record["action"] == f"corpus:{world.corpus}:query"
    assert record["k_returned"] == len(items)
    assert record["top_similarity"] == pytest.approx(items[0]["similarity"])


async def test_the_gateway_serves_the_mcp_corpus_with_the_resources_mime_type_as_tag(
    world: McpWorld, new_tenant: NewTenant
) -> None:
    response = await world.service.client.post(
        f"/v1/corpora/{world.corpus}/search",
        json={"collection": "", "goal": {"query": "how it works"}},
        headers=world.service.token(await new_tenant()),
    )
    assert response.status_code == 200, response.text
    chunks = response.json()["chunks"]
    assert chunks
    assert all(chunk["tags"] == ["text/markdown"] for chunk in chunks)
    assert all(chunk["source_uri"].startswith(PREFIX) for chunk in chunks)


async def test_navigating_an_mcp_corpus_is_a_409_saying_it_has_no_relations(
    world: McpWorld, new_tenant: NewTenant
) -> None:
    response = await world.service.client.post(
        f"/v1/corpora/{world.corpus}/navigate",
        json={"query": "architecture"},
        headers=world.service.token(await new_tenant()),
    )
    assert response.status_code == 409
    assert "no relations" in response.json()["error"]["message"]


async def test_an_mcp_corpus_is_paged_over_its_listing_with_resource_uris_and_an_audit_row(
    world: McpWorld, new_tenant: NewTenant, owner_connection: asyncpg.Connection
) -> None:
    tenant = await new_tenant()
    headers = world.service.token(tenant)
    url = f"/v1/corpora/{world.corpus}/documents"
    pages: list[dict[str, Any]] = []
    after: str | None = None
    while True:
        params: dict[str, str | int] = (
            {"limit": 2} if after is None else {"limit": 2, "after": after}
        )
        response = await world.service.client.get(url, params=params, headers=headers)
        assert response.status_code == 200, response.text
        pages.append(response.json())
        after = response.json()["next_after"]
        if after is None:
            break
    ids = [d["id"] for page in pages for d in page["documents"]]
    assert len(pages) > 1
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
    assert f"{PREFIX}architecture.md" in ids
    assert all(i.startswith(PREFIX) for i in ids)
    documents = [d for page in pages for d in page["documents"]]
    assert all(d["source_uri"] == d["id"] and d["body"] for d in documents)
    assert all(page["revision"] == 0 for page in pages)
    records = await audited_records(owner_connection, tenant)
    assert [r["operation"] for r in records] == ["documents"] * len(pages)
    assert [i for r in records for i in cast(list[str], r["returned_ids"])] == ids


async def test_a_page_of_a_server_the_deployment_does_not_configure_is_a_502_naming_it(
    world: McpWorld, new_tenant: NewTenant
) -> None:
    response = await world.service.client.get(
        f"/v1/corpora/{world.unconfigured}/documents",
        headers=world.service.token(await new_tenant()),
    )
    assert response.status_code == 502
    assert "nowhere-" in response.json()["error"]["message"]


async def test_a_server_the_deployment_does_not_configure_is_a_502_naming_it(
    world: McpWorld, new_tenant: NewTenant
) -> None:
    response = await world.service.client.post(
        f"/v1/corpora/{world.unconfigured}/retrieve",
        json={"query": "guidelines"},
        headers=world.service.token(await new_tenant()),
    )
    assert response.status_code == 502
    assert "nowhere-" in response.json()["error"]["message"]
    assert "not configured" in response.json()["error"]["message"]


async def test_a_server_run_over_stdio_serves_the_prefix_and_is_listed_once_per_ttl(
    everything: Everything,
) -> None:
    corpora = McpCorpora(
        {"kb": McpServer(command=["node", everything.entry, "stdio"])},
        ttl_seconds=300,
        timeout_seconds=30,
    )
    entry = CorpusEntry(
        "Kb",
        "published",
        "mcp",
        {"corpus": {"name": "Kb", "mcp": {"server": "kb", "resource_uri": PREFIX}}},
    )
    first, server = await corpora.retrieve(entry, "architecture", 3)
    again, _ = await corpora.retrieve(entry, "how it works", 3)
    assert server == "kb"
    assert first[0].id == f"{PREFIX}architecture.md"
    assert all(found.id.startswith(PREFIX) for found in [*first, *again])
    assert corpora.reads == 1


async def test_only_resources_under_the_declared_prefix_are_visible(everything: Everything) -> None:
    corpora = McpCorpora({"kb": McpServer(url=everything.url)}, timeout_seconds=30)
    narrow = f"{PREFIX}f"
    entry = CorpusEntry(
        "Kb",
        "published",
        "mcp",
        {"corpus": {"name": "Kb", "mcp": {"server": "kb", "resource_uri": narrow}}},
    )
    # `architecture.md` matches the query best, but lies outside the prefix.
    found, _ = await corpora.retrieve(entry, "architecture features", 10)
    assert [item.id for item in found] == [f"{PREFIX}features.md"]


async def test_a_server_stopped_mid_test_is_a_502_naming_it_once_the_listing_expires(
    app_dsn: str, owner_connection: asyncpg.Connection, new_tenant: NewTenant
) -> None:
    s = uuid.uuid4().hex[:8]
    server, corpus = f"stopping-{s}", f"Stopping_{s}"
    await apply_deployment(
        owner_connection,
        load_deployment(f'corpus {corpus} from mcp("{server}", "{PREFIX}")', "stop.axon"),
        gateway_base_url="http://x",
    )
    await owner_connection.execute(
        "UPDATE mnemo.corpora SET status = 'published' WHERE corpus_id = $1", corpus
    )
    try:
        with running_everything() as everything:
            settings = Settings(
                database_url=navigator_dsn(app_dsn),
                consume_requests=False,
                token_secret=DEVELOPMENT_SECRET,
                mcp_servers={server: McpServer(url=everything.url)},
                mcp_cache_seconds=CACHE_SECONDS,
                mcp_timeout_seconds=20,
            )
            runtime = create_app(settings)
            assert runtime.app is not None
            await runtime.start()
            try:
                transport = httpx.ASGITransport(app=runtime.app)
                async with httpx.AsyncClient(transport=transport, base_url="http://n") as client:
                    service = Service(runtime, client, {})
                    response = await _stop_midway(service, everything, corpus, new_tenant)
            finally:
                await runtime.stop()
    finally:
        await owner_connection.execute("DELETE FROM mnemo.corpora WHERE corpus_id = $1", corpus)
    assert response.status_code == 502
    assert server in response.json()["error"]["message"]
    assert response.json()["error"]["code"] == "UPSTREAM_FAILED"


async def _stop_midway(
    service: Service, everything: Everything, corpus: str, new_tenant: NewTenant
) -> httpx.Response:
    """Answered while the server runs, and from the cached listing just after it stops; the
    answer once the listing has expired."""
    headers = service.token(await new_tenant())
    body = {"query": "architecture", "k": 3}
    url = f"/v1/corpora/{corpus}/retrieve"
    assert (await service.client.post(url, json=body, headers=headers)).status_code == 200
    everything.stop()
    assert (await service.client.post(url, json=body, headers=headers)).status_code == 200

    async def failed() -> httpx.Response | None:
        response = await service.client.post(url, json=body, headers=headers)
        return response if response.status_code != 200 else None

    response = await eventually(failed, within=30, what="a 502 after the server stopped")
    assert response is not None
    return response
