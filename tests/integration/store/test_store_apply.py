"""`apply`: creates stores and registers corpora, idempotently, additively, never destructively."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import asyncpg
import pytest
from mnemo_axon.compiler import load_deployment
from mnemo_axon.ir import Deployment
from mnemo_store import DestructiveChangeError
from mnemo_store.applier import apply_deployment
from mnemo_store.ddl import fulltext_column
from mnemo_store.identifiers import object_name, store_table
from mnemo_store.registry import list_corpora, read_corpus, set_corpus_status

BASE = """
axonstore Notes_{s} {{ backend: postgresql  schema {{ id: Text primary_key  title: Text  {extra} }} }}
axonstore Links_{s} {{ backend: postgresql  schema {{ a: Text  b: Text  kind: Text  w: Double }} }}
corpus Read_{s} from axonstore {{
    documents: Notes_{s}(id, title)
    relations: Links_{s}(a, b, kind, w)
}}
"""
URL = "http://navigator.example"


@pytest.fixture
async def suffix(owner: asyncpg.Connection) -> AsyncIterator[str]:
    value = uuid.uuid4().hex[:10]
    yield value
    for name in (f"Notes_{value}", f"Links_{value}"):
        await owner.execute(f"DROP TABLE IF EXISTS {store_table(name)}")
    await owner.execute("DELETE FROM mnemo.corpora WHERE corpus_id = $1", f"Read_{value}")


def declarations(suffix: str, extra: str = "") -> Deployment:
    return load_deployment(BASE.format(s=suffix, extra=extra), "notes.axon")


async def test_apply_creates_registers_as_draft_and_a_second_apply_changes_nothing(
    owner: asyncpg.Connection, suffix: str
) -> None:
    deployment = declarations(suffix)
    dry = await apply_deployment(owner, deployment, gateway_base_url=URL, dry_run=True)
    assert "CREATE TABLE" in dry.sql()
    assert not dry.applied
    assert await owner.fetchval("SELECT to_regclass($1)", f'axon_stores."Notes_{suffix}"') is None

    first = await apply_deployment(owner, deployment, gateway_base_url=URL)
    assert any("create store" in line for line in first.changes)
    row = await owner.fetchrow(
        "SELECT status, kind, url, collection, auth FROM mnemo.corpora WHERE corpus_id = $1",
        f"Read_{suffix}",
    )
    assert row is not None
    assert dict(row) == {
        "status": "draft",
        "kind": "store_graph",
        "collection": "",
        "auth": "workload-oauth",
        "url": f"{URL}/v1/corpora/Read_{suffix}/search",
    }
    second = await apply_deployment(owner, deployment, gateway_base_url=URL)
    assert second.changes == ()
    indexes = await owner.fetch(
        "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'axon_stores'"
        " AND tablename = ANY($1::text[])",
        [f"Notes_{suffix}", f"Links_{suffix}"],
    )
    assert {r["indexname"] for r in indexes} >= {
        object_name(f"Notes_{suffix}", fulltext_column("title", None)),
        f"Links_{suffix}__edge_from_idx",
        f"Links_{suffix}__edge_to_idx",
    }
    assert all("(axon_tenant" in r["indexdef"] for r in indexes), (
        "an index not leading with the tenant"
    )


async def test_an_additive_change_keeps_the_status_and_a_destructive_one_is_refused_with_the_diff(
    owner: asyncpg.Connection, suffix: str
) -> None:
    await apply_deployment(owner, declarations(suffix), gateway_base_url=URL)
    await set_corpus_status(owner, f"Read_{suffix}", "published")
    extended = await apply_deployment(
        owner, declarations(suffix, "created: Timestamptz default(now())"), gateway_base_url=URL
    )
    assert any("add column created" in line for line in extended.changes)
    assert any("status stays published" in line for line in extended.changes)
    assert (
        await owner.fetchval(
            "SELECT status FROM mnemo.corpora WHERE corpus_id = $1", f"Read_{suffix}"
        )
        == "published"
    )

    with pytest.raises(DestructiveChangeError) as refused:
        await apply_deployment(owner, declarations(suffix, "created: Date"), gateway_base_url=URL)
    assert any('ALTER COLUMN "created" TYPE date' in change for change in refused.value.changes)
    with pytest.raises(DestructiveChangeError, match='DROP COLUMN "created"'):
        await apply_deployment(owner, declarations(suffix), gateway_base_url=URL)
    columns = await owner.fetch(
        "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema ="
        " 'axon_stores' AND table_name = $1",
        f"Notes_{suffix}",
    )
    assert {r["column_name"]: r["data_type"] for r in columns}[
        "created"
    ] == "timestamp with time zone"


async def test_the_registry_reads_one_corpus_or_the_corpora_of_a_kind(
    owner: asyncpg.Connection, suffix: str
) -> None:
    assert await read_corpus(owner, f"Read_{suffix}") is None
    await apply_deployment(owner, declarations(suffix), gateway_base_url=URL)
    row = await read_corpus(owner, f"Read_{suffix}")
    assert row is not None
    assert (row.kind, row.status) == ("store_graph", "draft")
    assert row.definition["corpus"]["documents_store"]["store"] == f"Notes_{suffix}"
    stores = {r.corpus_id for r in await list_corpora(owner, kind="store_graph")}
    assert f"Read_{suffix}" in stores
    assert f"Read_{suffix}" not in {r.corpus_id for r in await list_corpora(owner, kind="mcp")}
    assert row in await list_corpora(owner)
