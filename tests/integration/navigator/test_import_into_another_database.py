"""A tenant exported from one database and imported into another (a database of the test's own,
migrated to head), under its own id and under a new one: the navigator pointed at the new database
answers every navigation as it does over the original, memory included (navigation outcomes, the
weights learned on a store graph and on a declared graph, a parked edge), and `mnemo audit
verify` passes there.

Both navigators run in process without the outbox relay, so nothing either of them does reaches
the shared topics (or, through the audit service, the shared database)."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import asyncpg
import httpx
import pytest
from mnemo_auth import DEVELOPMENT_SECRET, mint_token
from mnemo_axon import AxonSource, check_sources
from mnemo_axon.ir import Deployment
from mnemo_cli.axon_files import document_directory
from mnemo_cli.declared_documents import corpus_documents, store_documents
from mnemo_cli.main import main
from mnemo_cli.owner_connection import OWNER_URL_VARIABLE
from mnemo_navigator.app import create_app
from mnemo_navigator.settings import Settings
from mnemo_store import Store, StoreCorpus
from mnemo_store.applier import apply_deployment
from mnemo_store.audit_log import AuditLog, NewAuditEvent
from mnemo_store.erasure import erase_tenant
from mnemo_store.identifiers import store_table

from tests.integration.navigator.conftest import navigator_dsn
from tests.integration.scratch_database import on_database, scratch_database

DECLARATIONS = """
axonstore MoveDocs_{s} {{
    schema {{ id: Text primary_key  tenant_id: Text not_null  title: Text not_null  body: Text }}
}}
axonstore MoveEdges_{s} {{
    schema {{ from_id: Text not_null  to_id: Text not_null  etype: Text not_null
             weight: Float not_null  tenant_id: Text not_null }}
}}
corpus Move_{s} from axonstore {{
    documents: MoveDocs_{s}(id, title, body)
    relations: MoveEdges_{s}(from_id, to_id, etype, weight)
    adaptive: true
}}
corpus MoveSession_{s} {{
    documents: [move_a_{s}, move_b_{s}, move_c_{s}]
    relations: [
        cite(move_b_{s}, move_a_{s}, 0.9)
        contradict(move_c_{s}, move_a_{s}, 0.7)
        elaborate(move_c_{s}, move_b_{s}, 0.5)
    ]
    adaptive: true
}}
"""

TOPICS = ["rivers", "mountains", "deltas", "glaciers"]
STORE_QUERIES = ["rivers deltas", "glaciers mountains", "note 7 rivers", "deltas", "zzz nothing"]
DECLARED_QUERIES = ["cache", "warm graphs cite the cache notes", "zzz unknown", "cache warm"]


@dataclass(frozen=True, slots=True)
class Database:
    name: str
    owner_dsn: str
    navigator_dsn: str
    audit_dsn: str


@pytest.fixture
async def other_database(
    superuser_dsn: str, owner_dsn: str, app_dsn: str
) -> AsyncIterator[Database]:
    """A new database on the test cluster, migrated to head (`scratch_database`)."""
    async with scratch_database(superuser_dsn, owner_dsn, "mnemo_import_") as name:
        yield Database(
            name,
            on_database(owner_dsn, name),
            on_database(navigator_dsn(app_dsn), name),
            on_database(owner_dsn, name, "mnemo_audit"),
        )


def write_documents(root: Path, s: str) -> None:
    for name, text in (
        (f"move_a_{s}.md", "# Session A\nThe cache keeps warm graphs.\n"),
        (f"move_b_{s}.md", "# Session B\nWarm graphs cite the cache notes.\n"),
        (f"move_c_{s}.md", "# Session C\nThe cache is not warm at all.\n"),
    ):
        (root / name).write_text(text, encoding="utf-8")


async def declare(owner_dsn: str, root: Path, s: str) -> Deployment:
    """Apply the declarations (and store the declared graph's documents) in the database of
    `owner_dsn`, both corpora published."""
    result = check_sources(
        [AxonSource("move.axon", DECLARATIONS.format(s=s))], document_directory(str(root))
    )
    assert result.deployment is not None, result.diagnostics
    owner = await asyncpg.connect(owner_dsn)
    try:
        await apply_deployment(owner, result.deployment, gateway_base_url="http://127.0.0.1:8080")
        await store_documents(owner, corpus_documents(result.deployment, str(root)))
        for corpus in (f"Move_{s}", f"MoveSession_{s}"):
            await owner.execute(
                "UPDATE mnemo.corpora SET status = 'published' WHERE corpus_id = $1", corpus
            )
    finally:
        await owner.close()
    return result.deployment


@asynccontextmanager
async def navigator(database_url: str) -> AsyncIterator[httpx.AsyncClient]:
    """The navigator in process over `database_url`: HTTP only, no Kafka, no relay."""
    settings = Settings(
        database_url=database_url,
        consume_requests=False,
        relay_outbox=False,
        token_secret=DEVELOPMENT_SECRET,
        pool_size=4,
    )
    runtime = create_app(settings)
    assert runtime.app is not None
    await runtime.start()
    try:
        transport = httpx.ASGITransport(app=runtime.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://navigator") as client:
            yield client
    finally:
        await runtime.stop()


Navigation = tuple[str, dict[str, Any]]


def navigations(s: str) -> list[Navigation]:
    """Store-graph and declared-graph navigations, interleaved; each one reinforces what it
    traversed, so an answer depends on every earlier one and on the memory before them."""
    store = [(f"Move_{s}", {"query": query, "from": "d0", "budget": 3}) for query in STORE_QUERIES]
    declared = [
        (
            f"MoveSession_{s}",
            {"query": query, "from": f"move_b_{s}", "budget": 2, "direction": "both"},
        )
        for query in DECLARED_QUERIES
    ]
    return [item for pair in zip(store, declared, strict=False) for item in pair] + store[4:]


async def answer(
    client: httpx.AsyncClient, tenant: uuid.UUID, corpus: str, body: dict[str, Any]
) -> dict[str, Any]:
    """A navigation's answer without what names its database (revision, timings, cache)."""
    token = mint_token(tenant=tenant, secret=DEVELOPMENT_SECRET, scopes=("read",))
    response = await client.post(
        f"/v1/corpora/{corpus}/navigate", json=body, headers={"Authorization": f"Bearer {token}"}
    )
    assert response.status_code == 200, response.text
    found: dict[str, Any] = response.json()
    return {key: value for key, value in found.items() if key not in ("revision", "diagnostics")}


async def fill(store: Store, corpus: StoreCorpus, tenant: uuid.UUID) -> None:
    documents = [
        {
            "id": f"d{n}",
            "tenant_id": "c1",
            "title": f"{TOPICS[n % 4]} note {n} é😀",
            "body": f"about {TOPICS[n % 4]} and {TOPICS[(n + 1) % 4]}" if n % 3 else None,
        }
        for n in range(12)
    ]
    edges = [
        {
            "from_id": f"d{n}",
            "to_id": f"d{(n * 5 + 1) % 12}",
            "etype": "cite",
            "weight": round(0.1 + n / 17, 6),
            "tenant_id": "c1",
        }
        for n in range(12)
    ]
    async with store.tenant(tenant) as tx:
        await tx.insert_rows(corpus.documents, documents)
        await tx.insert_rows(corpus.relations, edges)


async def park_edge(owner: asyncpg.Connection, corpus: StoreCorpus, tenant: uuid.UUID) -> None:
    """An edge waiting for a document that has not arrived (ingest parks it so)."""
    values = {"from_id": "d1", "to_id": "later", "etype": "cite", "weight": 0.5, "tenant_id": "c1"}
    async with owner.transaction():
        await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
        await owner.execute(
            "INSERT INTO mnemo.pending_edges (axon_tenant, event_id, store, row_values, missing)"
            " VALUES ($1, $2, $3, $4::jsonb, ARRAY['later'])",
            tenant,
            uuid.uuid4(),
            corpus.relations.name,
            json.dumps(values),
        )


async def append_audit(audit_dsn: str, tenant: uuid.UUID, count: int) -> None:
    async with await AuditLog.connect(audit_dsn, max_size=1) as log:
        await log.append(
            tenant,
            [
                NewAuditEvent(
                    uuid.uuid4(),
                    "query",
                    datetime.now(UTC),
                    "mnemo.navigator",
                    None,
                    {"action": "corpus:x:query", "query": f"q {n}", "latency_ms": n / 3},
                )
                for n in range(count)
            ],
        )


async def memory(owner_dsn: str, tenant: uuid.UUID) -> dict[str, Any]:
    """The tenant's navigation outcomes, learned declared weights and parked edges, as
    comparable values."""
    owner = await asyncpg.connect(owner_dsn)
    try:
        async with owner.transaction():
            await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
            outcomes = await owner.fetch(
                "SELECT corpus_id, scope, score, path, traversed::text AS t FROM mnemo.nav_outcomes"
                " ORDER BY corpus_id, seq"
            )
            weights = await owner.fetch(
                "SELECT corpus_id, scope, source, target, etype, weight"
                " FROM mnemo.declared_edge_weights ORDER BY 1, 2, 3, 4, 5"
            )
            parked = await owner.fetch(
                "SELECT event_id, store, row_values::text AS v, missing, received_at"
                " FROM mnemo.pending_edges ORDER BY pending_id"
            )
    finally:
        await owner.close()
    return {
        "outcomes": [
            (r["corpus_id"], r["scope"], r["score"], list(r["path"]), json.loads(r["t"]))
            for r in outcomes
        ],
        "weights": [tuple(r) for r in weights],
        "parked": [
            (r["event_id"], r["store"], json.loads(r["v"]), list(r["missing"]), r["received_at"])
            for r in parked
        ],
    }


def cli(environment: dict[str, str], *argv: str) -> Callable[[], int]:
    """`mnemo argv` with `environment` set (the CLI runs its own event loop: call it in a thread)."""

    def run() -> int:
        with pytest.MonkeyPatch.context() as patch:
            for key, value in environment.items():
                patch.setenv(key, value)
            return main(list(argv))

    return run


async def test_a_tenant_imported_into_another_database_answers_the_same_and_its_chain_verifies(
    other_database: Database,
    owner_dsn: str,
    app_dsn: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    s = uuid.uuid4().hex[:8]
    write_documents(tmp_path, s)
    deployment = await declare(owner_dsn, tmp_path, s)
    corpus = StoreCorpus.from_deployment(deployment, f"Move_{s}")
    name = f"test-move-{s}"
    owner = await asyncpg.connect(owner_dsn)
    tenant: uuid.UUID = await owner.fetchval(
        "INSERT INTO mnemo.tenants (name) VALUES ($1) RETURNING tenant_id", name
    )
    try:
        async with await Store.connect(owner_dsn, min_size=1, max_size=2) as store:
            await fill(store, corpus, tenant)
        await park_edge(owner, corpus, tenant)
        audit_dsn = on_database(owner_dsn, urlsplit(owner_dsn).path.lstrip("/"), "mnemo_audit")
        await append_audit(audit_dsn, tenant, 4)
        steps = navigations(s)
        async with navigator(navigator_dsn(app_dsn)) as original:
            # Memory before the export: outcomes, learned store and declared weights.
            for corpus_id, body in steps[:8]:
                await answer(original, tenant, corpus_id, body)
            export = tmp_path / "export"
            main_database = {OWNER_URL_VARIABLE: owner_dsn}
            assert (
                await asyncio.to_thread(
                    cli(main_database, "tenant", "export", name, str(export), "--quiet")
                )
                == 0
            )
            before = await memory(owner_dsn, tenant)
            assert before["outcomes"]
            assert before["weights"]
            assert len(before["parked"]) == 1

            elsewhere = {OWNER_URL_VARIABLE: other_database.owner_dsn}
            # Into a database without the declarations: refused, saying what to do first.
            assert await asyncio.to_thread(cli(elsewhere, "tenant", "import", str(export))) == 1
            assert "`mnemo apply` its declarations first" in capsys.readouterr().err
            await declare(other_database.owner_dsn, tmp_path, s)
            assert (
                await asyncio.to_thread(cli(elsewhere, "tenant", "import", str(export), "--quiet"))
                == 0
            )
            copy_name = f"{name}-copy"
            assert (
                await asyncio.to_thread(
                    cli(elsewhere, "tenant", "import", str(export), "--as", copy_name, "--quiet")
                )
                == 0
            )
            output = capsys.readouterr().out
            manifest = json.loads((export / "manifest.json").read_text("utf-8"))
            assert f"imported tenant {tenant} ('{name}')" in output
            assert f"hash {manifest['audit_head']['hash']}" in output
            other = await asyncpg.connect(other_database.owner_dsn)
            try:
                copy: uuid.UUID = await other.fetchval(
                    "SELECT tenant_id FROM mnemo.tenants WHERE name = $1", copy_name
                )
            finally:
                await other.close()
            assert await memory(other_database.owner_dsn, tenant) == before
            assert await memory(other_database.owner_dsn, copy) == before

            async with navigator(other_database.navigator_dsn) as restored:
                for corpus_id, body in steps:
                    expected = await answer(original, tenant, corpus_id, body)
                    assert expected["hits"], (corpus_id, body)
                    assert await answer(restored, tenant, corpus_id, body) == expected
                    assert await answer(restored, copy, corpus_id, body) == expected
            assert await memory(other_database.owner_dsn, tenant) == await memory(owner_dsn, tenant)

        for who in (str(tenant), copy_name):
            verify = cli(
                {}, "audit", "verify", "--tenant", who, "--database-url", other_database.audit_dsn
            )
            assert await asyncio.to_thread(verify) == 0
            assert f"{manifest['audit_head']['seq']} rows verify" in capsys.readouterr().out
    finally:
        await erase_tenant(owner, tenant)
        for store_decl in deployment.stores:
            await owner.execute(f"DROP TABLE IF EXISTS {store_table(store_decl.name)}")
        for corpus_id in (f"Move_{s}", f"MoveSession_{s}"):
            await owner.execute(
                "DELETE FROM mnemo.corpus_documents WHERE corpus_id = $1", corpus_id
            )
            await owner.execute("DELETE FROM mnemo.corpora WHERE corpus_id = $1", corpus_id)
        await owner.close()
