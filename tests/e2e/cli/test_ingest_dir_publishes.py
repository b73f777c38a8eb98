"""`mnemo ingest-dir` without --dry-run, against the running stack: the tenant and the corpus are
checked first (one line, exit 1), then the folder's documents and links are published and the
stack's ingest writes them."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest
from mnemo_axon.compiler import load_deployment
from mnemo_store.applier import apply_deployment
from mnemo_store.identifiers import store_table

from tests.declarations import memory_corpus
from tests.waiting import eventually

pytestmark = pytest.mark.timeout(180)

ROOT = Path(__file__).resolve().parents[3]
OWNER = os.environ.get(
    "MNEMO_OWNER_DATABASE_URL",
    f"postgresql://mnemo_owner:mnemo_owner@127.0.0.1:{os.environ.get('MNEMO_PG_PORT', '25432')}/mnemo",
)


class Handbook:
    def __init__(self, suffix: str, tenant: uuid.UUID) -> None:
        self.suffix = suffix
        self.tenant = tenant
        self.corpus = f"Handbook_{suffix}"
        self.docs = f"HandbookDocs_{suffix}"
        self.edges = f"HandbookEdges_{suffix}"

    async def count(self, store: str) -> int:
        connection = await asyncpg.connect(OWNER)
        try:
            async with connection.transaction():
                await connection.execute(
                    "SELECT set_config('mnemo.tenant', $1, true)", str(self.tenant)
                )
                return int(await connection.fetchval(f"SELECT count(*) FROM {store_table(store)}"))
        finally:
            await connection.close()


@pytest.fixture
async def handbook() -> AsyncIterator[Handbook]:
    suffix = uuid.uuid4().hex[:10]
    owner = await asyncpg.connect(OWNER)
    deployment = load_deployment(
        memory_corpus("Handbook", "Handbook", suffix, id_type="Text", end_clients=False),
        "handbook.axon",
    )
    await apply_deployment(owner, deployment, gateway_base_url="http://127.0.0.1:8080")
    tenant = await owner.fetchval(
        "INSERT INTO mnemo.tenants (name) VALUES ($1) RETURNING tenant_id", f"handbook-{suffix}"
    )
    try:
        yield Handbook(suffix, tenant)
    finally:
        async with owner.transaction():
            await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
            for table in ("outbox", "inbox", "pending_edges", "graph_revisions"):
                await owner.execute(f"DELETE FROM mnemo.{table}")
        await owner.execute("DELETE FROM mnemo.tenants WHERE tenant_id = $1", tenant)
        for store in deployment.stores:
            await owner.execute(f"DROP TABLE IF EXISTS {store_table(store.name)}")
        await owner.execute("DELETE FROM mnemo.corpora WHERE corpus_id = $1", f"Handbook_{suffix}")
        await owner.close()


def mnemo(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mnemo_cli.main", *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


async def test_ingest_dir_checks_tenant_and_corpus_then_publishes_what_ingest_writes(
    handbook: Handbook, tmp_path: Path
) -> None:
    (tmp_path / "intro.md").write_text("# Intro\nStart with [[refund rules]].\n")
    (tmp_path / "refunds.md").write_text(
        "---\naliases: [refund rules]\n---\n# Refunds\nMoney back.\n"
    )
    stores = ["--documents-store", handbook.docs, "--edges-store", handbook.edges]
    base = ["ingest-dir", str(tmp_path), "--corpus", handbook.corpus]

    nobody = mnemo(*base, "--tenant", str(uuid.uuid4()), *stores)
    assert (nobody.returncode, nobody.stderr.count("\n")) == (1, 1), nobody.stderr
    assert "no tenant" in nobody.stderr
    nowhere = mnemo(
        "ingest-dir", str(tmp_path), "--corpus", "Nowhere", "--tenant", str(handbook.tenant)
    )
    assert nowhere.returncode == 1
    assert "no corpus 'Nowhere'" in nowhere.stderr
    wrong = mnemo(*base, "--tenant", str(handbook.tenant))  # default store names
    assert wrong.returncode == 1
    assert f"pass --documents-store {handbook.docs}" in wrong.stderr

    sent = mnemo(*base, "--tenant", str(handbook.tenant), *stores)
    assert sent.returncode == 0, sent.stderr
    assert "sent 3, failed 0" in sent.stderr  # two documents and one wiki-link edge

    async def written() -> bool:
        return (await handbook.count(handbook.docs), await handbook.count(handbook.edges)) == (2, 1)

    await eventually(written, within=60, every=0.3, what="the stack's ingest never wrote the rows")
