"""The classifier's in-memory candidates follow the store: after inserts, edits, a document moving
to another end-client and a delete, `IndexedCandidates` answers what `StoreCandidates` (Postgres,
per event) answers, for every document of each end-client's scope, reading only the changed rows
(one full read, then one more after the delete)."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator

import asyncpg
import pytest
from mnemo_axon.compiler import load_deployment
from mnemo_edge_classifier.adapters import IndexedCandidates, StoreCandidates
from mnemo_mdn.edge_classification import (
    DEFAULT_OPTIONS,
    TextDocument,
    candidate_query,
    document_keys,
    keys_of,
)
from mnemo_store import Scope, Store, StoreCorpus
from mnemo_store.applier import apply_deployment
from mnemo_store.identifiers import store_table

from tests.declarations import memory_corpus
from tests.integration.edge_classifier.worlds import drop_world

TEXTS = [
    ("Hilda Hilst", "A Brazilian poet. She wrote Tu Nao Te Moves De Ti."),
    ("Tu Nao Te Moves De Ti", "A novel by Hilda Hilst, published in Sao Paulo."),
    ("Sao Paulo", "The largest city of Brazil, home of Hilda Hilst for years."),
    ("Brand (play)", "A play by Henrik Ibsen. Brand is a priest."),
    ("Henrik Ibsen", "Norwegian playwright who wrote Brand and Peer Gynt."),
    ("Peer Gynt", "A play by Henrik Ibsen, set partly in Morocco."),
]


@pytest.fixture
async def stored(
    owner_dsn: str, app_dsn: str
) -> AsyncIterator[tuple[StoreCorpus, uuid.UUID, asyncpg.Connection, Store]]:
    suffix = uuid.uuid4().hex[:10]
    owner = await asyncpg.connect(owner_dsn)
    deployment = load_deployment(
        memory_corpus("Held", "Held", suffix, id_type="Text", client_type="Text"),
        f"held_{suffix}.axon",
    )
    await apply_deployment(owner, deployment, gateway_base_url="http://127.0.0.1:8080")
    corpus = StoreCorpus.from_deployment(deployment, f"Held_{suffix}")
    tenant = await owner.fetchval(
        "INSERT INTO mnemo.tenants (name) VALUES ($1) RETURNING tenant_id", f"test-held-{suffix}"
    )
    classifier_dsn = os.environ.get("MNEMO_CLASSIFIER_DATABASE_URL") or owner_dsn.replace(
        "mnemo_owner:mnemo_owner", "mnemo_classifier:mnemo_classifier"
    )
    try:
        async with await Store.connect(classifier_dsn, max_size=2) as reader:
            yield corpus, tenant, owner, reader
    finally:
        await drop_world(owner, deployment, corpus.name, tenant)


async def test_the_in_memory_candidates_follow_inserts_edits_moves_and_deletes(
    stored: tuple[StoreCorpus, uuid.UUID, asyncpg.Connection, Store],
) -> None:
    corpus, tenant, owner, reader = stored
    table = store_table(corpus.documents.name)
    per_event = StoreCandidates(reader, 1000, DEFAULT_OPTIONS)
    indexed = IndexedCandidates(reader, per_event, 1000, DEFAULT_OPTIONS, 1 << 30)

    async def write(statement: str, *args: object) -> None:
        async with owner.transaction():
            await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
            await owner.execute(statement, *args)

    async def insert(doc_id: str, client: str, title: str, body: str) -> None:
        await write(
            f"INSERT INTO {table} (axon_tenant, id, tenant_id, title, body)"
            " VALUES ($1, $2, $3, $4, $5)",
            tenant,
            doc_id,
            client,
            title,
            body,
        )

    async def agree() -> None:
        indexed.new_batch()
        async with owner.transaction():
            await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
            rows = await owner.fetch(
                f"SELECT id, tenant_id, title, body FROM {table} WHERE axon_tenant = $1", tenant
            )
        assert rows
        for row in rows:
            keys = document_keys(TextDocument(row["id"], row["title"], row["body"]))
            scope = Scope("tenant_id == '${tenant_id}'", {"tenant_id": row["tenant_id"]})
            args = (tenant, corpus, row["id"], candidate_query(keys), keys_of(keys), scope)
            expected = await per_event.neighbourhood(*args)
            found = await indexed.neighbourhood(*args)
            assert found == expected, row["id"]

    for k, (title, body) in enumerate(TEXTS):
        await insert(f"d{k}", "client-a" if k < 4 else "client-b", title, body)
    await agree()
    assert (indexed.loads, indexed.fallbacks) == (2, 0)  # one per end-client's scope
    await insert("d9", "client-a", "Peer Gynt", "Hilda Hilst read Peer Gynt in Sao Paulo.")
    await write(f"UPDATE {table} SET body = 'Henrik Ibsen wrote it.' WHERE id = 'd3'")
    await agree()
    await write(f"UPDATE {table} SET tenant_id = 'client-b' WHERE id = 'd2'")  # moves scope
    await agree()
    assert indexed.loads == 2
    assert indexed.refreshes >= 4
    await write(f"DELETE FROM {table} WHERE id = 'd1'")
    await agree()
    assert indexed.loads == 4  # a delete leaves no marker: each scope is read in full again
    assert indexed.fallbacks == 0


@pytest.mark.parametrize("max_bytes", [1_000, 30_000])  # too many rows; rows too large
async def test_a_scope_past_the_memory_bound_is_read_from_postgres_per_event(
    stored: tuple[StoreCorpus, uuid.UUID, asyncpg.Connection, Store], max_bytes: int
) -> None:
    corpus, tenant, owner, reader = stored
    table = store_table(corpus.documents.name)
    async with owner.transaction():
        await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
        for k, (title, body) in enumerate(TEXTS * 4):
            await owner.execute(
                f"INSERT INTO {table} (axon_tenant, id, tenant_id, title, body)"
                " VALUES ($1, $2, 'client-a', $3, $4)",
                tenant,
                f"d{k}",
                title,
                body,
            )
    per_event = StoreCandidates(reader, 1000, DEFAULT_OPTIONS)
    indexed = IndexedCandidates(reader, per_event, 1000, DEFAULT_OPTIONS, max_bytes)
    keys = document_keys(TextDocument("d0", *TEXTS[0]))
    scope = Scope("tenant_id == '${tenant_id}'", {"tenant_id": "client-a"})
    args = (tenant, corpus, "d0", candidate_query(keys), keys_of(keys), scope)
    for _ in range(2):
        indexed.new_batch()
        assert await indexed.neighbourhood(*args) == await per_event.neighbourhood(*args)
    assert indexed.fallbacks == 2
    assert indexed.loads == 0
    assert indexed.nbytes == 0
