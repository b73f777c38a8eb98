"""The search gateway's `tags` for form (d), the living graph, over HTTP against real Postgres: read
from the `category`, `tags` and `metadata` columns its documents store declares, and only ever from
the caller's own rows (another tenant's, another end-client's document of the same id never lends
its tags)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass

import asyncpg
import pytest
from mnemo_axon.compiler import load_deployment
from mnemo_store import Store, StoreCorpus
from mnemo_store.applier import apply_deployment
from mnemo_store.identifiers import store_table

from tests.integration.navigator.conftest import NewTenant, Service

DECLARATIONS = """
axonstore TagDocs_{s} {{
    schema {{ id: Text not_null  client: Text not_null  title: Text not_null  body: Text
             category: Text  tags: Json  metadata: Json }}
}}
axonstore TagEdges_{s} {{
    schema {{ from_id: Text not_null  to_id: Text not_null  etype: Text not_null
             weight: Float not_null  client: Text not_null }}
}}
corpus Tagged_{s} from axonstore {{
    documents: TagDocs_{s}(id, title, body)
    relations: TagEdges_{s}(from_id, to_id, etype, weight)
}}
axonstore PlainDocs_{s} {{
    schema {{ id: Text primary_key  title: Text not_null  label: Text }}
}}
axonstore PlainEdges_{s} {{
    schema {{ from_id: Text not_null  to_id: Text not_null  etype: Text not_null
             weight: Float not_null }}
}}
corpus Plain_{s} from axonstore {{
    documents: PlainDocs_{s}(id, title)
    relations: PlainEdges_{s}(from_id, to_id, etype, weight)
}}
"""
PINNED = "client == '${client.id}'"


@dataclass(frozen=True)
class Tagged:
    corpus: StoreCorpus
    plain: StoreCorpus
    owner: Store

    async def write(
        self, tenant: uuid.UUID, rows: Sequence[Mapping[str, object]], *, plain: bool = False
    ) -> None:
        corpus = self.plain if plain else self.corpus
        async with self.owner.tenant(tenant) as tx:
            await tx.insert_rows(corpus.documents, rows)


@pytest.fixture(scope="module")
async def tagged(
    owner_connection: asyncpg.Connection, owner_store: Store, service: Service
) -> AsyncIterator[Tagged]:
    s = uuid.uuid4().hex[:10]
    deployment = load_deployment(DECLARATIONS.format(s=s), f"tags_{s}.axon")
    await apply_deployment(owner_connection, deployment, gateway_base_url="http://127.0.0.1:8080")
    names = [f"Tagged_{s}", f"Plain_{s}"]
    await owner_connection.execute(
        "UPDATE mnemo.corpora SET status = 'published' WHERE corpus_id = ANY($1)", names
    )
    service.pinned[names[0]] = PINNED
    yield Tagged(
        StoreCorpus.from_deployment(deployment, names[0]),
        StoreCorpus.from_deployment(deployment, names[1]),
        owner_store,
    )
    for store in deployment.stores:
        await owner_connection.execute(f"DROP TABLE IF EXISTS {store_table(store.name)}")
    await owner_connection.execute("DELETE FROM mnemo.corpora WHERE corpus_id = ANY($1)", names)


def _row(doc_id: str, client: str, title: str, **tag_columns: object) -> dict[str, object]:
    return {
        "id": doc_id,
        "client": client,
        "title": title,
        "body": None,
        "category": None,
        "tags": None,
        "metadata": None,
        **tag_columns,
    }


async def _chunks(
    service: Service, corpus: str, headers: Mapping[str, str], utterance: str
) -> dict[str, list[str]]:
    response = await service.client.post(
        f"/v1/corpora/{corpus}/search",
        json={"collection": "", "goal": {"utterance": utterance}},
        headers=dict(headers),
    )
    assert response.status_code == 200, response.text
    return {chunk["id"]: chunk["tags"] for chunk in response.json()["chunks"]}


async def test_the_gateway_reads_tags_from_the_category_tags_and_metadata_columns(
    tagged: Tagged, service: Service, new_tenant: NewTenant
) -> None:
    tenant = await new_tenant()
    await tagged.write(
        tenant,
        [
            _row(
                "fees",
                "c1",
                "overdraft fees explained",
                category="billing",
                tags=["fees", "overdraft", 7],
                metadata={"category": "faq", "tags": ["fees", "help"], "owner": "ops"},
            ),
            _row("bare", "c1", "overdraft limits", tags='"limits"'),
            _row("none", "c1", "overdraft history"),
        ],
    )
    chunks = await _chunks(service, tagged.corpus.name, service.token(tenant), "overdraft")
    assert chunks == {
        "fees": ["billing", "faq", "fees", "overdraft", "help"],
        "bare": ["limits"],
        "none": [],
    }


async def test_a_store_declaring_no_tag_column_answers_empty_tags(
    tagged: Tagged, service: Service, new_tenant: NewTenant
) -> None:
    tenant = await new_tenant()
    await tagged.write(
        tenant, [{"id": "p1", "title": "overdraft notes", "label": "billing"}], plain=True
    )
    chunks = await _chunks(service, tagged.plain.name, service.token(tenant), "overdraft")
    assert chunks == {"p1": []}


async def test_another_tenants_document_of_the_same_id_never_lends_its_tags(
    tagged: Tagged, service: Service, new_tenant: NewTenant
) -> None:
    mine, theirs = await new_tenant(), await new_tenant()
    await tagged.write(mine, [_row("same", "c1", "overdraft rules", category="mine")])
    await tagged.write(
        theirs,
        [
            _row("same", "c1", "overdraft rules", category="secret", tags=["theirs"]),
            _row("other", "c1", "overdraft secrets", category="secret"),
        ],
    )
    assert await _chunks(service, tagged.corpus.name, service.token(mine), "overdraft") == {
        "same": ["mine"]
    }
    assert await _chunks(service, tagged.corpus.name, service.token(theirs), "overdraft") == {
        "same": ["secret", "theirs"],
        "other": ["secret"],
    }


async def test_an_end_clients_search_reads_only_its_own_documents_tags(
    tagged: Tagged, service: Service, new_tenant: NewTenant
) -> None:
    tenant = await new_tenant()
    await tagged.write(
        tenant,
        [
            _row("shared-id", "c1", "overdraft plan", category="c1-only", tags=["one"]),
            _row("shared-id", "c2", "overdraft plan", category="c2-only", tags=["two"]),
        ],
    )
    first = service.token(tenant, client={"id": "c1"})
    second = service.token(tenant, client={"id": "c2"})
    assert await _chunks(service, tagged.corpus.name, first, "overdraft") == {
        "shared-id": ["c1-only", "one"]
    }
    assert await _chunks(service, tagged.corpus.name, second, "overdraft") == {
        "shared-id": ["c2-only", "two"]
    }
