"""Forms (a) inline and (c) declared graph served over the HTTP API against real Postgres: documents
stored by apply with the corpus version, retrieve and the gateway (collection, tags), navigate (a
clear 409 without relations), per-tenant memory as an overlay under row-level security, and the
query audit row of every request."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mnemo_auth import Principal
from mnemo_axon import AxonSource, check_sources
from mnemo_cli.axon_files import document_directory
from mnemo_cli.declared_documents import corpus_documents, store_documents
from mnemo_navigator.adapters import PostgresCatalogue, PostgresTransactions
from mnemo_navigator.app import build_navigator
from mnemo_navigator.corpus_forms import FormsNavigator, PostgresDeclaredCorpora
from mnemo_navigator.settings import Settings
from mnemo_navigator.subscribers import CONSUMER
from mnemo_navigator.use_cases import Caller, Claim, NavigateRequest
from mnemo_store import Store
from mnemo_store.applier import apply_deployment

from tests.integration.navigator.conftest import (
    NewTenant,
    Service,
    audited_records,
    navigator_dsn,
)

DECLARATIONS = """
document Terms_{s} {{ title: "Terms of service" content: "Accounts may be closed after notice." }}
corpus Policy_{s} {{
    documents: [privacy_{s}, refunds_{s}, Terms_{s}]
}}
corpus Session_{s} {{
    documents: [sess_a_{s}, sess_b_{s}, sess_c_{s}]
    relations: [
        cite(sess_b_{s}, sess_a_{s}, 0.9)
        contradict(sess_c_{s}, sess_a_{s}, 0.7)
        elaborate(sess_c_{s}, sess_b_{s}, 0.5)
    ]
    adaptive: true
}}
"""


@dataclass(frozen=True)
class Forms:
    policy: str
    session: str
    suffix: str


def _write(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


async def _apply(owner: asyncpg.Connection, root: Path, suffix: str) -> None:
    text = DECLARATIONS.format(s=suffix)
    result = check_sources([AxonSource("forms.axon", text)], document_directory(str(root)))
    assert result.deployment is not None, result.diagnostics
    await apply_deployment(owner, result.deployment, gateway_base_url="http://127.0.0.1:8080")
    await store_documents(owner, corpus_documents(result.deployment, str(root)))


@pytest.fixture(scope="module")
async def forms(
    owner_connection: asyncpg.Connection, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Forms]:
    s = uuid.uuid4().hex[:8]
    root = tmp_path_factory.mktemp("forms")
    _write(
        root,
        f"policies/privacy_{s}.md",
        "---\nname: Privacy policy\ntags: [gdpr, data]\n---\nWe keep personal data for a year.\n",
    )
    _write(root, f"policies/refunds_{s}.md", "# Refund policy\nRefunds are paid within 30 days.\n")
    _write(root, f"sess_a_{s}.md", "# Session A\nThe cache keeps warm graphs.\n")
    _write(root, f"sess_b_{s}.md", "# Session B\nWarm graphs cite the cache notes.\n")
    _write(root, f"sess_c_{s}.md", "# Session C\nThe cache is not warm at all.\n")
    await _apply(owner_connection, root, s)
    names = Forms(f"Policy_{s}", f"Session_{s}", s)
    for name in (names.policy, names.session):
        await owner_connection.execute(
            "UPDATE mnemo.corpora SET status = 'published' WHERE corpus_id = $1", name
        )
    yield names
    for name in (names.policy, names.session):
        await owner_connection.execute(
            "DELETE FROM mnemo.corpus_documents WHERE corpus_id = $1", name
        )
        await owner_connection.execute("DELETE FROM mnemo.corpora WHERE corpus_id = $1", name)


async def _weights(
    owner: asyncpg.Connection, tenant: uuid.UUID, corpus: str
) -> dict[tuple[str, str], float]:
    async with owner.transaction():
        await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
        rows = await owner.fetch(
            "SELECT source, target, weight FROM mnemo.declared_edge_weights WHERE corpus_id = $1",
            corpus,
        )
    return {(r["source"], r["target"]): float(r["weight"]) for r in rows}


async def test_apply_stores_the_declared_documents_with_the_corpus_version(
    forms: Forms, owner_connection: asyncpg.Connection
) -> None:
    rows = await owner_connection.fetch(
        "SELECT d.doc_id, d.title, d.category, d.tags, d.version = c.version AS current"
        " FROM mnemo.corpus_documents d JOIN mnemo.corpora c USING (corpus_id)"
        " WHERE corpus_id = $1 ORDER BY doc_id",
        forms.policy,
    )
    s = forms.suffix
    assert [(r["doc_id"], r["title"], r["category"], list(r["tags"])) for r in rows] == [
        (f"Terms_{s}", "Terms of service", "", []),
        (f"privacy_{s}", "Privacy policy", "policies", ["policies", "gdpr", "data"]),
        (f"refunds_{s}", "Refund policy", "policies", ["policies"]),
    ]
    assert all(r["current"] for r in rows)


async def test_an_inline_corpus_is_retrieved_with_content_similarity_and_source_uri(
    forms: Forms, service: Service, new_tenant: NewTenant, owner_connection: asyncpg.Connection
) -> None:
    tenant = await new_tenant()
    response = await service.client.post(
        f"/v1/corpora/{forms.policy}/retrieve",
        json={"query": "when are refunds paid", "k": 2},
        headers=service.token(tenant),
    )
    assert response.status_code == 200, response.text
    [first, *_] = response.json()["items"]
    assert first["id"] == f"refunds_{forms.suffix}"
    assert "Refunds are paid within 30 days." in first["content"]
    assert 0 < first["similarity"] < 1
    assert first["source_uri"] == f"mnemo://corpora/{forms.policy}/documents/{first['id']}"
    [record] = list(await audited_records(owner_connection, tenant))
    assert record["action"] == f"corpus:{forms.policy}:query"
    assert record["query"] == "when are refunds paid"
    assert record["k_returned"] == len(response.json()["items"])
    assert record["top_similarity"] == pytest.approx(first["similarity"])
    assert isinstance(record["latency_ms"], float)
    assert record["latency_ms"] >= 0


async def test_the_gateway_honours_the_collection_and_returns_the_documents_tags(
    forms: Forms, service: Service, new_tenant: NewTenant
) -> None:
    headers = service.token(await new_tenant())
    for collection in ("", forms.policy):
        response = await service.client.post(
            f"/v1/corpora/{forms.policy}/search",
            json={"collection": collection, "goal": {"utterance": "personal data"}},
            headers=headers,
        )
        assert response.status_code == 200, response.text
        [chunk, *_] = response.json()["chunks"]
        assert chunk["id"] == f"privacy_{forms.suffix}"
        assert chunk["tags"] == ["policies", "gdpr", "data"]
        assert chunk["corpus_id"] == forms.policy
    other = await service.client.post(
        f"/v1/corpora/{forms.policy}/search",
        json={"collection": "someone-elses", "goal": {"utterance": "personal data"}},
        headers=headers,
    )
    assert other.status_code == 404
    assert "'someone-elses'" in other.json()["error"]["message"]
    assert repr(forms.policy) in other.json()["error"]["message"]


async def test_navigating_an_inline_corpus_is_a_409_saying_it_has_no_relations(
    forms: Forms, service: Service, new_tenant: NewTenant
) -> None:
    response = await service.client.post(
        f"/v1/corpora/{forms.policy}/navigate",
        json={"query": "refunds"},
        headers=service.token(await new_tenant()),
    )
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "NO_RELATIONS"
    assert "no relations" in response.json()["error"]["message"]


async def test_a_declared_graph_is_navigated_from_a_seed_with_an_empty_query(
    forms: Forms, service: Service, new_tenant: NewTenant
) -> None:
    s = forms.suffix
    response = await service.client.post(
        f"/v1/corpora/{forms.session}/navigate",
        json={"query": "", "from": f"sess_b_{s}", "budget": 3},
        headers=service.token(await new_tenant()),
    )
    assert response.status_code == 200, response.text
    hits = response.json()["hits"]
    assert hits[0]["id"] == f"sess_b_{s}"
    assert {hit["id"] for hit in hits} <= {f"sess_a_{s}", f"sess_b_{s}", f"sess_c_{s}"}
    assert hits[0]["source_uri"].endswith(f"/documents/sess_b_{s}")


async def test_one_tenants_learning_on_a_declared_graph_never_changes_anothers(
    forms: Forms,
    service: Service,
    new_tenant: NewTenant,
    owner_connection: asyncpg.Connection,
) -> None:
    s = forms.suffix
    learner, bystander = await new_tenant(), await new_tenant()
    # Scores that differ, so the baseline moves and the traversed edges are reinforced.
    for query in ("cache", "warm graphs cite the cache notes", "zzz unknown", "cache warm"):
        response = await service.client.post(
            f"/v1/corpora/{forms.session}/navigate",
            json={"query": query, "from": f"sess_b_{s}", "budget": 2, "direction": "both"},
            headers=service.token(learner),
        )
        assert response.status_code == 200, response.text
    learned = await _weights(owner_connection, learner, forms.session)
    assert learned, "the learner's navigations reinforced no edge"
    assert all(weight != 0.9 for weight in learned.values())
    assert await _weights(owner_connection, bystander, forms.session) == {}
    answer = await service.client.post(
        f"/v1/corpora/{forms.session}/navigate",
        json={"query": "cache warm", "from": f"sess_b_{s}", "budget": 2, "direction": "both"},
        headers=service.token(bystander),
    )
    vias = [hit["via"] for hit in answer.json()["hits"] if hit["via"]]
    assert vias
    assert all(via["weight"] in (0.9, 0.5, 0.7) for via in vias)
    records = await audited_records(owner_connection, learner)
    assert [r["action"] for r in records] == [f"corpus:{forms.session}:query"] * 4


async def test_a_where_filter_on_a_declared_corpus_is_refused_naming_why(
    forms: Forms, service: Service, new_tenant: NewTenant
) -> None:
    response = await service.client.post(
        f"/v1/corpora/{forms.session}/retrieve",
        json={"query": "cache", "where": "x == 1"},
        headers=service.token(await new_tenant()),
    )
    assert response.status_code == 422
    assert "no columns to filter" in response.json()["error"]["message"]


async def test_two_end_clients_of_one_tenant_keep_their_own_memory_of_a_declared_graph(
    forms: Forms,
    service: Service,
    new_tenant: NewTenant,
    owner_connection: asyncpg.Connection,
) -> None:
    s = forms.suffix
    tenant = await new_tenant()
    for query in ("cache", "warm graphs cite the cache notes", "zzz unknown", "cache warm"):
        response = await service.client.post(
            f"/v1/corpora/{forms.session}/navigate",
            json={"query": query, "from": f"sess_b_{s}", "budget": 2, "direction": "both"},
            headers=service.token(tenant, client={"tenant_id": "c1"}),
        )
        assert response.status_code == 200, response.text
    other = await service.client.post(
        f"/v1/corpora/{forms.session}/navigate",
        json={"query": "cache warm", "from": f"sess_b_{s}", "budget": 2, "direction": "both"},
        headers=service.token(tenant, client={"tenant_id": "c2"}),
    )
    vias = [hit["via"] for hit in other.json()["hits"] if hit["via"]]
    assert vias
    assert all(via["weight"] in (0.9, 0.5, 0.7) for via in vias)
    async with owner_connection.transaction():
        await owner_connection.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
        scopes = await owner_connection.fetch(
            "SELECT DISTINCT scope FROM mnemo.declared_edge_weights WHERE corpus_id = $1",
            forms.session,
        )
    assert len(scopes) == 1
    assert scopes[0]["scope"].startswith("client:")
    # The tenant-wide scope and the other end-client have learned nothing.
    assert scopes[0]["scope"] != "tenant"


async def test_concurrent_navigations_of_one_scope_each_leave_one_outcome_in_sequence(
    forms: Forms,
    service: Service,
    new_tenant: NewTenant,
    owner_connection: asyncpg.Connection,
) -> None:
    s = forms.suffix
    tenant = await new_tenant()
    headers = service.token(tenant)
    queries = ["cache", "warm", "zzz", "cache warm", "notes", "graphs cite"]

    async def one(query: str) -> int:
        response = await service.client.post(
            f"/v1/corpora/{forms.session}/navigate",
            json={"query": query, "from": f"sess_b_{s}", "budget": 2, "direction": "both"},
            headers=headers,
        )
        return response.status_code

    assert await asyncio.gather(*(one(query) for query in queries)) == [200] * len(queries)
    async with owner_connection.transaction():
        await owner_connection.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
        sequences = await owner_connection.fetch(
            "SELECT seq FROM mnemo.nav_outcomes WHERE corpus_id = $1 ORDER BY seq", forms.session
        )
    assert [row["seq"] for row in sequences] == list(range(1, len(queries) + 1))


async def test_a_declared_corpus_that_is_not_published_is_refused_naming_its_status(
    forms: Forms,
    service: Service,
    new_tenant: NewTenant,
    owner_connection: asyncpg.Connection,
) -> None:
    headers = service.token(await new_tenant())
    await owner_connection.execute(
        "UPDATE mnemo.corpora SET status = 'deprecated' WHERE corpus_id = $1", forms.policy
    )
    try:
        response = await service.client.post(
            f"/v1/corpora/{forms.policy}/retrieve", json={"query": "refunds"}, headers=headers
        )
    finally:
        await owner_connection.execute(
            "UPDATE mnemo.corpora SET status = 'published' WHERE corpus_id = $1", forms.policy
        )
    assert response.status_code == 409
    assert "is deprecated" in response.json()["error"]["message"]


async def test_a_token_of_a_tenant_that_does_not_exist_reads_no_declared_corpus(
    forms: Forms, service: Service
) -> None:
    response = await service.client.post(
        f"/v1/corpora/{forms.policy}/retrieve",
        json={"query": "refunds"},
        headers=service.token(uuid.uuid4()),
    )
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "UNKNOWN_TENANT"


async def test_a_declared_corpus_whose_documents_were_never_stored_says_to_apply_them(
    forms: Forms,
    service: Service,
    new_tenant: NewTenant,
    owner_connection: asyncpg.Connection,
) -> None:
    headers = service.token(await new_tenant())
    version = await owner_connection.fetchval(
        "SELECT version FROM mnemo.corpora WHERE corpus_id = $1", forms.policy
    )
    await owner_connection.execute(
        "UPDATE mnemo.corpora SET version = 'never-stored' WHERE corpus_id = $1", forms.policy
    )
    try:
        response = await service.client.post(
            f"/v1/corpora/{forms.policy}/retrieve", json={"query": "refunds"}, headers=headers
        )
    finally:
        await owner_connection.execute(
            "UPDATE mnemo.corpora SET version = $2 WHERE corpus_id = $1", forms.policy, version
        )
    assert response.status_code == 409
    assert "mnemo apply --documents" in response.json()["error"]["message"]


async def test_a_redelivered_kafka_request_on_a_declared_graph_is_remembered_and_audited_once(
    forms: Forms, app_dsn: str, new_tenant: NewTenant, owner_connection: asyncpg.Connection
) -> None:
    s = forms.suffix
    tenant = await new_tenant()
    settings = Settings(database_url=navigator_dsn(app_dsn), consume_requests=False)
    pool = await asyncpg.create_pool(
        settings.database_url.get_secret_value(), min_size=1, max_size=4
    )
    try:
        catalogue = PostgresCatalogue(pool)
        navigator = FormsNavigator(
            build_navigator(settings, PostgresTransactions(Store(pool)), catalogue, {}),
            catalogue,
            PostgresDeclaredCorpora(pool),
        )
        caller = Caller(Principal(tenant=tenant, subject="kafka:test", scopes=frozenset({"read"})))
        request = NavigateRequest(query="cache warm", seed=f"sess_b_{s}", budget=2)
        claim = Claim(CONSUMER, uuid.uuid4())
        first = await navigator.navigate(caller, forms.session, request, claim=claim)
        again = await navigator.navigate(caller, forms.session, request, claim=claim)
    finally:
        await pool.close()
    assert first.remembered
    assert not again.remembered
    assert again.navigation.path == first.navigation.path
    async with owner_connection.transaction():
        await owner_connection.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
        outcomes = await owner_connection.fetchval(
            "SELECT count(*) FROM mnemo.nav_outcomes WHERE corpus_id = $1", forms.session
        )
    assert outcomes == 1
    assert len(await audited_records(owner_connection, tenant)) == 1


async def test_an_inline_corpus_is_paged_in_id_order_with_content_and_an_audit_row(
    forms: Forms, service: Service, new_tenant: NewTenant, owner_connection: asyncpg.Connection
) -> None:
    s = forms.suffix
    tenant = await new_tenant()
    headers = service.token(tenant)
    first = await service.client.get(
        f"/v1/corpora/{forms.policy}/documents", params={"limit": 2}, headers=headers
    )
    assert first.status_code == 200, first.text
    page = first.json()
    assert [d["id"] for d in page["documents"]] == [f"Terms_{s}", f"privacy_{s}"]
    assert page["next_after"] == f"privacy_{s}"
    assert page["revision"] == 0
    terms = page["documents"][0]
    assert terms["title"] == "Terms of service"
    assert terms["body"] == "Accounts may be closed after notice."
    assert terms["source_uri"] == f"mnemo://corpora/{forms.policy}/documents/Terms_{s}"
    rest = await service.client.get(
        f"/v1/corpora/{forms.policy}/documents",
        params={"limit": 2, "after": page["next_after"]},
        headers=headers,
    )
    assert rest.status_code == 200, rest.text
    assert [d["id"] for d in rest.json()["documents"]] == [f"refunds_{s}"]
    assert rest.json()["next_after"] is None
    records = await audited_records(owner_connection, tenant)
    assert [(r["action"], r["operation"], r["query"], r["returned_ids"]) for r in records] == [
        (
            f"corpus:{forms.policy}:query",
            "documents",
            "documents limit=2",
            [f"Terms_{s}", f"privacy_{s}"],
        ),
        (
            f"corpus:{forms.policy}:query",
            "documents",
            f"documents limit=2 after=privacy_{s}",
            [f"refunds_{s}"],
        ),
    ]
    assert all(r["top_similarity"] is None and r["k_returned"] for r in records)


async def test_a_declared_graph_is_paged_and_the_page_is_audited_only_for_the_caller(
    forms: Forms, service: Service, new_tenant: NewTenant, owner_connection: asyncpg.Connection
) -> None:
    s = forms.suffix
    reader, bystander = await new_tenant(), await new_tenant()
    response = await service.client.get(
        f"/v1/corpora/{forms.session}/documents",
        headers=service.token(reader, client={"id": "c1"}),
    )
    assert response.status_code == 200, response.text
    assert [d["id"] for d in response.json()["documents"]] == [
        f"sess_a_{s}",
        f"sess_b_{s}",
        f"sess_c_{s}",
    ]
    assert "The cache keeps warm graphs." in response.json()["documents"][0]["body"]
    [record] = await audited_records(owner_connection, reader)
    assert record["client"] == {"id": "c1"}
    assert await audited_records(owner_connection, bystander) == []


async def test_a_declared_corpus_page_refuses_unknown_tenants_and_unpublished_corpora(
    forms: Forms, service: Service, new_tenant: NewTenant, owner_connection: asyncpg.Connection
) -> None:
    stranger = await service.client.get(
        f"/v1/corpora/{forms.policy}/documents", headers=service.token(uuid.uuid4())
    )
    assert stranger.status_code == 403
    assert stranger.json()["error"]["code"] == "UNKNOWN_TENANT"
    headers = service.token(await new_tenant())
    await owner_connection.execute(
        "UPDATE mnemo.corpora SET status = 'deprecated' WHERE corpus_id = $1", forms.session
    )
    try:
        response = await service.client.get(
            f"/v1/corpora/{forms.session}/documents", headers=headers
        )
    finally:
        await owner_connection.execute(
            "UPDATE mnemo.corpora SET status = 'published' WHERE corpus_id = $1", forms.session
        )
    assert response.status_code == 409
    assert "is deprecated" in response.json()["error"]["message"]


async def test_one_declared_document_is_read_as_a_resource_over_the_navigators_mcp(
    forms: Forms, service: Service, new_tenant: NewTenant, owner_connection: asyncpg.Connection
) -> None:
    tenant = await new_tenant()
    assert service.runtime.app is not None
    http = httpx2.AsyncClient(
        transport=httpx2.ASGITransport(app=service.runtime.app),
        base_url="http://navigator",
        headers=service.token(tenant),
    )
    uri = f"mnemo://corpora/{forms.policy}/documents/Terms_{forms.suffix}"
    async with http:
        transport = streamable_http_client("http://navigator/mcp", http_client=http)
        async with Client(transport, read_timeout_seconds=30) as client:
            result = await client.read_resource(uri)
    text = " ".join(getattr(block, "text", "") for block in result.contents)
    assert "Accounts may be closed after notice." in text
    assert [r["operation"] for r in await audited_records(owner_connection, tenant)] == [
        "documents"
    ]
