"""Ingest's registry cache never refuses what the database already holds: a tenant created, or a
store applied, a moment after ingest last looked is found on the very next message."""

from __future__ import annotations

import uuid

import asyncpg
from mnemo_axon.compiler import load_deployment
from mnemo_ingest.adapters import PostgresDirectory
from mnemo_store.applier import apply_deployment
from mnemo_store.identifiers import store_table

DECLARATIONS = """
axonstore DirDocs_{s} {{
    backend: postgresql
    schema {{ id: Uuid primary_key  title: Text not_null  body: Text }}
}}
axonstore DirEdges_{s} {{
    backend: postgresql
    schema {{ from_id: Uuid not_null  to_id: Uuid not_null  etype: Text not_null  weight: Float not_null }}
}}
corpus DirMemory_{s} from axonstore {{
    documents: DirDocs_{s}(id, title, body)
    relations: DirEdges_{s}(from_id, to_id, etype, weight)
}}
"""


def _ingest_dsn(owner_dsn: str) -> str:
    return owner_dsn.replace("mnemo_owner:mnemo_owner", "mnemo_ingest:mnemo_ingest")


async def test_a_tenant_created_right_after_a_lookup_is_known_at_once(owner_dsn: str) -> None:
    pool = await asyncpg.create_pool(_ingest_dsn(owner_dsn), min_size=1, max_size=2)
    owner = await asyncpg.connect(owner_dsn)
    name = f"dir-{uuid.uuid4().hex[:12]}"
    try:
        directory = PostgresDirectory(pool)
        await directory.tenants()
        tenant = await owner.fetchval(
            "INSERT INTO mnemo.tenants (name) VALUES ($1) RETURNING tenant_id", name
        )
        assert await directory.tenant_exists(tenant)
        assert not await directory.tenant_exists(uuid.uuid4())
    finally:
        await owner.execute("DELETE FROM mnemo.tenants WHERE name = $1", name)
        await owner.close()
        await pool.close()


async def test_a_store_applied_right_after_a_lookup_is_known_at_once(owner_dsn: str) -> None:
    suffix = uuid.uuid4().hex[:10]
    pool = await asyncpg.create_pool(_ingest_dsn(owner_dsn), min_size=1, max_size=2)
    owner = await asyncpg.connect(owner_dsn)
    try:
        directory = PostgresDirectory(pool)
        assert await directory.store(f"DirDocs_{suffix}") is None
        deployment = load_deployment(DECLARATIONS.format(s=suffix))
        await apply_deployment(owner, deployment, gateway_base_url="http://127.0.0.1:8080")
        use = await directory.store(f"DirDocs_{suffix}")
        assert use is not None
        assert use.store.name == f"DirDocs_{suffix}"
        assert await directory.store(f"NoSuchStore_{suffix}") is None
    finally:
        await owner.execute("DELETE FROM mnemo.corpora WHERE corpus_id = $1", f"DirMemory_{suffix}")
        for name in (f"DirDocs_{suffix}", f"DirEdges_{suffix}"):
            await owner.execute(f"DROP TABLE IF EXISTS {store_table(name)}")
        await owner.close()
        await pool.close()
