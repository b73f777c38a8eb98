"""Declared corpora (forms a and c) ranked by Postgres full text over `mnemo.corpus_documents`'s
stored tsvector (migration 0018): the same texts rank in the same order with the same similarity
as in a living graph (form d), over HTTP against real Postgres."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import asyncpg
import pytest
from mnemo_axon import AxonSource, MappingDocumentDirectory, check_sources
from mnemo_cli.declared_documents import corpus_documents, store_documents
from mnemo_store.applier import apply_deployment

from tests.integration.navigator.conftest import Declare, NewTenant, Service

TEXTS = {
    "fees": (
        "Overdraft fees",
        "An overdraft fee is charged once a day while the account is short.",
    ),
    "limits": ("Overdraft limits", "The overdraft limit is set by the bank."),
    "cards": ("Card payments", "Card payments abroad carry a fee; overdraft rules still apply."),
    "moving": ("Moving house", "Tell the bank your new address."),
    "fees2": ("Fee schedule", "Every fee, overdraft fee and card fee, in one table."),
}
QUERIES = ["overdraft fee", "card", "bank address overdraft", "fee fee fee", "nothing matches"]


def _declarations(s: str) -> str:
    documents = "\n".join(
        f'document {name}_{s} {{ title: "{title}" content: "{content}" }}'
        for name, (title, content) in TEXTS.items()
    )
    names = ", ".join(f"{name}_{s}" for name in TEXTS)
    return f"{documents}\ncorpus Inline_{s} {{ documents: [{names}] }}\n"


@pytest.fixture(scope="module")
async def inline(owner_connection: asyncpg.Connection) -> AsyncIterator[str]:
    s = uuid.uuid4().hex[:8]
    result = check_sources(
        [AxonSource("inline.axon", _declarations(s))], MappingDocumentDirectory(())
    )
    assert result.deployment is not None, result.diagnostics
    await apply_deployment(owner_connection, result.deployment, gateway_base_url="http://x")
    await store_documents(owner_connection, corpus_documents(result.deployment, None))
    name = f"Inline_{s}"
    await owner_connection.execute(
        "UPDATE mnemo.corpora SET status = 'published' WHERE corpus_id = $1", name
    )
    yield name
    await owner_connection.execute("DELETE FROM mnemo.corpus_documents WHERE corpus_id = $1", name)
    await owner_connection.execute("DELETE FROM mnemo.corpora WHERE corpus_id = $1", name)


async def _ranking(
    service: Service, corpus: str, headers: dict[str, str], query: str
) -> list[tuple[str, float]]:
    response = await service.client.post(
        f"/v1/corpora/{corpus}/retrieve", json={"query": query, "k": 10}, headers=headers
    )
    assert response.status_code == 200, response.text
    return [(item["id"].rsplit("_", 1)[0], item["similarity"]) for item in response.json()["items"]]


async def test_an_inline_corpus_ranks_the_same_texts_as_a_living_graph_does(
    inline: str, declare: Declare, new_tenant: NewTenant, service: Service
) -> None:
    arena = await declare(adaptive=False)
    tenant = await new_tenant()
    await arena.write(
        tenant,
        [
            {"id": f"{name}_x", "tenant_id": "t", "title": title, "body": content}
            for name, (title, content) in TEXTS.items()
        ],
    )
    headers = service.token(tenant)
    for query in QUERIES:
        declared = await _ranking(service, inline, headers, query)
        living = await _ranking(service, arena.name, headers, query)
        assert [d for d, _ in declared] == [d for d, _ in living], query
        assert [s for _, s in declared] == pytest.approx([s for _, s in living]), query
    assert await _ranking(service, inline, headers, "nothing matches") == []
    assert await _ranking(service, inline, headers, "overdraft fee") != []


async def test_the_declared_documents_are_found_through_the_fulltext_index(
    inline: str, owner_connection: asyncpg.Connection
) -> None:
    async with owner_connection.transaction():
        await owner_connection.execute("SET LOCAL enable_seqscan = off")
        plan = "\n".join(
            r[0]
            for r in await owner_connection.fetch(
                "EXPLAIN SELECT doc_id FROM mnemo.corpus_documents"
                " WHERE fulltext @@ to_tsquery('simple', 'overdraft')"
            )
        )
    assert "corpus_documents_fulltext" in plan
