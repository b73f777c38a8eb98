"""The `corpus` seed's four example corpora applied from one file into one deployment and each served
over HTTP by one navigator: `PolicyDocs` (a, inline), `ClinicalGuidelines` (b, bound to the npm MCP
server), `SessionKnowledge` (c, declared graph) and `LtmGraph` (d, living graph from two stores).
Names carry a per-run suffix, since the registry is deployment-wide."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import httpx
import pytest
from mnemo_auth import DEVELOPMENT_SECRET
from mnemo_axon import AxonSource, check_sources
from mnemo_cli.axon_files import document_directory
from mnemo_cli.declared_documents import corpus_documents, store_documents
from mnemo_navigator.app import create_app
from mnemo_navigator.mcp_corpora import McpServer
from mnemo_navigator.settings import Settings
from mnemo_store import Store, StoreCorpus
from mnemo_store.applier import apply_deployment
from mnemo_store.identifiers import store_table

from tests.integration.navigator.conftest import (
    Arena,
    NewTenant,
    Service,
    audited_records,
    navigator_dsn,
)
from tests.integration.navigator.mcp_everything import PREFIX, Everything, everything

__all__ = ["everything"]  # the module's fixture, used by its tests

SEED = """
document PrivacyPolicy_{s} {{ title: "Privacy policy" content: "Personal data is kept one year." }}
document TermsOfService_{s} {{ title: "Terms of service" content: "Accounts close after notice." }}
document RefundPolicy_{s} {{ title: "Refund policy" content: "Refunds are paid within 30 days." }}

corpus PolicyDocs_{s} {{
    documents: [PrivacyPolicy_{s}, TermsOfService_{s}, RefundPolicy_{s}]
}}

corpus ClinicalGuidelines_{s} from mcp("clinical-mcp-{s}", "{prefix}")

corpus SessionKnowledge_{s} {{
    documents: [sess_a_{s}, sess_b_{s}, sess_c_{s}]
    relations: [
        cite(sess_b_{s}, sess_a_{s}, 0.9)
        contradict(sess_c_{s}, sess_a_{s}, 0.7)
        elaborate(sess_c_{s}, sess_b_{s}, 0.5)
    ]
    adaptive: true
}}

axonstore LtmSummaries_{s} {{
    schema {{ id: Text primary_key  summary: Text not_null }}
}}
axonstore LtmEdges_{s} {{
    schema {{ from_id: Text not_null  to_id: Text not_null  etype: Text not_null
             weight: Float not_null }}
}}
corpus LtmGraph_{s} from axonstore {{
    documents: LtmSummaries_{s}(id, summary)
    relations: LtmEdges_{s}(from_id, to_id, etype, weight)
    adaptive: true
}}
"""


def _write_sessions(root: Path, s: str) -> None:
    for name, text in (
        ("sess_a", "# Session A\nThe graph cache keeps warm graphs.\n"),
        ("sess_b", "# Session B\nWarm graphs cite the cache notes.\n"),
        ("sess_c", "# Session C\nThe cache is not warm at all.\n"),
    ):
        Path(root, f"{name}_{s}.md").write_text(text, encoding="utf-8")


@dataclass(frozen=True)
class Deployed:
    service: Service
    suffix: str
    ltm: Arena

    def name(self, corpus: str) -> str:
        return f"{corpus}_{self.suffix}"


@pytest.fixture(scope="module")
async def deployed(
    everything: Everything,
    app_dsn: str,
    owner_connection: asyncpg.Connection,
    owner_store: Store,
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[Deployed]:
    s = uuid.uuid4().hex[:8]
    root = tmp_path_factory.mktemp("seed")
    _write_sessions(root, s)
    source = SEED.format(s=s, prefix=PREFIX)
    result = check_sources([AxonSource("seed.axon", source)], document_directory(str(root)))
    assert result.deployment is not None, result.diagnostics
    deployment = result.deployment
    await apply_deployment(owner_connection, deployment, gateway_base_url="http://127.0.0.1:8080")
    await store_documents(owner_connection, corpus_documents(deployment, str(root)))
    names = [corpus.name for corpus in deployment.corpora]
    await owner_connection.execute(
        "UPDATE mnemo.corpora SET status = 'published' WHERE corpus_id = ANY($1)", names
    )
    ltm = Arena(deployment, StoreCorpus.from_deployment(deployment, f"LtmGraph_{s}"), owner_store)
    settings = Settings(
        database_url=navigator_dsn(app_dsn),
        consume_requests=False,
        token_secret=DEVELOPMENT_SECRET,
        mcp_servers={f"clinical-mcp-{s}": McpServer(url=everything.url)},
        mcp_timeout_seconds=20,
    )
    runtime = create_app(settings)
    assert runtime.app is not None
    await runtime.start()
    transport = httpx.ASGITransport(app=runtime.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://navigator") as client:
        yield Deployed(Service(runtime, client, {}), s, ltm)
    await runtime.stop()
    for store in deployment.stores:
        await owner_connection.execute(f"DROP TABLE IF EXISTS {store_table(store.name)}")
    await owner_connection.execute(
        "DELETE FROM mnemo.corpus_documents WHERE corpus_id = ANY($1)", names
    )
    await owner_connection.execute("DELETE FROM mnemo.corpora WHERE corpus_id = ANY($1)", names)


async def test_the_seeds_four_corpora_from_one_file_are_each_served_over_http(
    deployed: Deployed, new_tenant: NewTenant, owner_connection: asyncpg.Connection
) -> None:
    tenant = await new_tenant()
    s = deployed.suffix
    await deployed.ltm.write(
        tenant,
        [
            {"id": "m1", "summary": "the refund was approved"},
            {"id": "m2", "summary": "refund approval cites the policy"},
        ],
        [{"from_id": "m2", "to_id": "m1", "etype": "cite", "weight": 0.8}],
    )
    headers = deployed.service.token(tenant)
    post = deployed.service.client.post

    inline = await post(
        f"/v1/corpora/{deployed.name('PolicyDocs')}/retrieve",
        json={"query": "refunds paid"},
        headers=headers,
    )
    assert inline.status_code == 200, inline.text
    assert inline.json()["items"][0]["id"] == f"RefundPolicy_{s}"

    mcp = await post(
        f"/v1/corpora/{deployed.name('ClinicalGuidelines')}/search",
        json={"collection": deployed.name("ClinicalGuidelines"), "goal": {"topic": "architecture"}},
        headers=headers,
    )
    assert mcp.status_code == 200, mcp.text
    assert mcp.json()["chunks"][0]["source_uri"].startswith(PREFIX)

    declared = await post(
        f"/v1/corpora/{deployed.name('SessionKnowledge')}/navigate",
        json={"query": "warm cache", "from": f"sess_a_{s}", "budget": 3},
        headers=headers,
    )
    assert declared.status_code == 200, declared.text
    assert declared.json()["hits"][0]["id"] == f"sess_a_{s}"

    living = await post(
        f"/v1/corpora/{deployed.name('LtmGraph')}/navigate",
        json={"query": "refund approval", "budget": 2},
        headers=headers,
    )
    assert living.status_code == 200, living.text
    assert {hit["id"] for hit in living.json()["hits"]} == {"m1", "m2"}

    actions = [record["action"] for record in await audited_records(owner_connection, tenant)]
    assert actions == [
        f"corpus:{deployed.name(corpus)}:query"
        for corpus in ("PolicyDocs", "ClinicalGuidelines", "SessionKnowledge", "LtmGraph")
    ]
