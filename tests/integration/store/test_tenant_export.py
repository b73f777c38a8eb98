"""A tenant exported and imported as another tenant answers navigation the same and its audit
chain verifies; an export edited after the fact is refused, naming the file and row."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest
import rfc8785
from mnemo_cli.main import main
from mnemo_cli.owner_connection import OWNER_URL_VARIABLE
from mnemo_mdn.navigation import navigate
from mnemo_store import Store, StoreError
from mnemo_store.audit_log import AuditLog, NewAuditEvent
from mnemo_store.erasure import erase_tenant
from mnemo_store.tenant_export import (
    NOT_CARRIED,
    SYSTEM_TABLES,
    ExportIntegrityError,
    check_export,
    export_tenant,
    import_tenant,
)

from tests.integration.store.conftest import Declare, Declared, NewTenant


@pytest.fixture(scope="module")
async def audit(owner_dsn: str) -> AsyncIterator[AuditLog]:
    parts = urlsplit(owner_dsn)
    host = parts.netloc.rsplit("@", 1)[-1]
    dsn = urlunsplit(parts._replace(netloc=f"mnemo_audit:mnemo_audit@{host}"))
    async with await AuditLog.connect(dsn, max_size=2) as log:
        yield log


async def fill(store: Store, declared: Declared, tenant: uuid.UUID, audit: AuditLog) -> None:
    ids = [uuid.uuid4() for _ in range(12)]
    topics = ["rivers", "mountains", "deltas", "glaciers"]
    async with store.tenant(tenant) as tx:
        await tx.insert_rows(
            declared.corpus.documents,
            [
                {
                    "id": doc,
                    "tenant_id": tenant,
                    "title": f"{topics[n % 4]} note {n} é😀",
                    "body": f"about {topics[n % 4]} and {topics[(n + 1) % 4]}" if n % 3 else None,
                }
                for n, doc in enumerate(ids)
            ],
        )
        await tx.insert_rows(
            declared.corpus.relations,
            [
                {
                    "from_id": ids[n],
                    "to_id": ids[(n * 5 + 1) % 12],
                    "etype": "cite",
                    "weight": round(0.1 + n / 17, 6),
                    "tenant_id": tenant,
                }
                for n in range(12)
            ],
        )
    await audit.append(
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
            for n in range(5)
        ],
    )


async def answers(store: Store, declared: Declared, tenant: uuid.UUID) -> list[Any]:
    async with store.tenant(tenant, read_only=True) as tx:
        graph = (await tx.load_graph(declared.corpus)).to_graph()
    return [
        [(hit.title, round(hit.score, 12)) for hit in navigate(graph, query, budget=4).hits]
        for query in ("rivers deltas", "glaciers", "mountains note 7")
    ]


async def test_an_imported_tenant_answers_navigation_the_same_and_its_chain_verifies(
    declare: Declare,
    new_tenant: NewTenant,
    store: Store,
    owner: asyncpg.Connection,
    audit: AuditLog,
    tmp_path: Path,
) -> None:
    declared = await declare()
    tenant = await new_tenant()
    await fill(store, declared, tenant, audit)
    lines: list[tuple[str, int]] = []
    exported = await export_tenant(
        owner, tenant, tmp_path / "export", lambda f, n: lines.append((f, n))
    )
    assert exported.files[f"stores/{declared.documents}.jsonl"].rows == 12
    assert exported.files[f"stores/{declared.edges}.jsonl"].rows == 12
    assert (exported.files["audit.jsonl"].rows, exported.audit_head_seq) == (5, 5)
    assert (f"stores/{declared.documents}.jsonl", 12) in lines

    copy_name = f"test-store-copy-{uuid.uuid4().hex[:12]}"
    imported = await import_tenant(owner, tmp_path / "export", as_name=copy_name)
    copy = imported.tenant
    try:
        assert copy != tenant
        assert await answers(store, declared, copy) == await answers(store, declared, tenant)
        report = await audit.verify(copy)
        assert (report.ok, report.rows) == (True, 5)
        assert [r.payload for r in await audit.page(copy)] == [
            r.payload for r in await audit.page(tenant)
        ]
        # The same export imported again under the original id is refused: it exists here.
        with pytest.raises(StoreError, match="already exists here"):
            await import_tenant(owner, tmp_path / "export")
    finally:
        async with owner.transaction():
            await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(copy))
            for store_name in (declared.documents, declared.edges):
                await owner.execute(f'DELETE FROM axon_stores."{store_name}"')
            await owner.execute("DELETE FROM mnemo.graph_revisions")
        await owner.execute("DELETE FROM mnemo.tenants WHERE tenant_id = $1", copy)


def rewrite_line(path: Path, number: int, change: Any, *, fix_digest: bool) -> None:
    lines = path.read_text("utf-8").splitlines(keepends=True)
    line = json.loads(lines[number - 1])
    change(line["row"])
    if fix_digest:
        line["sha256"] = hashlib.sha256(rfc8785.dumps(line["row"])).hexdigest()
    lines[number - 1] = json.dumps(line) + "\n"
    path.write_text("".join(lines), "utf-8")


def fix_manifest(directory: Path, relative: str) -> None:
    manifest = json.loads((directory / "manifest.json").read_text())
    data = (directory / relative).read_bytes()
    manifest["files"][relative] = {
        "rows": data.count(b"\n"),
        "sha256": hashlib.sha256(data).hexdigest(),
    }
    (directory / "manifest.json").write_text(json.dumps(manifest))


async def test_a_tampered_export_is_refused_naming_the_file_and_row(
    declare: Declare,
    new_tenant: NewTenant,
    store: Store,
    owner: asyncpg.Connection,
    audit: AuditLog,
    tmp_path: Path,
) -> None:
    declared = await declare()
    tenant = await new_tenant()
    await fill(store, declared, tenant, audit)
    clean = tmp_path / "clean"
    await export_tenant(owner, tenant, clean)
    documents = f"stores/{declared.documents}.jsonl"

    def edited(name: str) -> Path:
        target = tmp_path / name
        shutil.copytree(clean, target)
        return target

    one = edited("row-edited")
    rewrite_line(one / documents, 3, lambda row: row.update(title="forged"), fix_digest=False)
    with pytest.raises(
        ExportIntegrityError, match=re.escape(f"{documents} row 3: its content does not match")
    ):
        check_export(one)

    two = edited("row-and-digest-edited")
    rewrite_line(two / documents, 3, lambda row: row.update(title="forged"), fix_digest=True)
    with pytest.raises(ExportIntegrityError, match=re.escape(f"{documents}: its SHA-256 differs")):
        check_export(two)

    three = edited("row-removed")
    lines = (three / documents).read_text().splitlines(keepends=True)
    (three / documents).write_text("".join(lines[:-1]))
    with pytest.raises(
        ExportIntegrityError, match=re.escape(f"{documents}: 11 rows, the manifest says 12")
    ):
        check_export(three)

    four = edited("audit-rewritten")
    rewrite_line(
        four / "audit.jsonl", 2, lambda row: row["payload"].update(query="hidden"), fix_digest=True
    )
    fix_manifest(four, "audit.jsonl")
    with pytest.raises(
        ExportIntegrityError, match=re.escape("audit.jsonl row 2: the audit chain breaks at seq 2")
    ):
        check_export(four)

    # Nothing was imported from any of them.
    before = await owner.fetchval("SELECT count(*) FROM mnemo.tenants")
    for broken in (one, two, three, four):
        with pytest.raises(ExportIntegrityError):
            await import_tenant(owner, broken, as_name=f"test-store-x-{uuid.uuid4().hex[:8]}")
    assert await owner.fetchval("SELECT count(*) FROM mnemo.tenants") == before


def test_the_import_command_names_the_tampered_file_and_row(
    owner_dsn: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv(OWNER_URL_VARIABLE, owner_dsn)
    name = f"test-export-cli-{uuid.uuid4().hex[:10]}"
    assert main(["tenant", "create", name]) == 0
    tenant = capsys.readouterr().out.strip()
    try:
        assert main(["tenant", "export", name, str(tmp_path / "out")]) == 0
        assert f"exported tenant {tenant}" in capsys.readouterr().out
        manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
        assert set(manifest["files"]) >= {"declarations.jsonl", "audit.jsonl"}
        (tmp_path / "out" / "system" / "nav_outcomes.jsonl").write_text(
            '{"row": {}, "sha256": "0"}\n'
        )
        assert main(["tenant", "import", str(tmp_path / "out"), "--as", name + "-copy"]) == 1
        assert (
            "system/nav_outcomes.jsonl row 1: its content does not match" in capsys.readouterr().err
        )
        assert main(["tenant", "export", name, str(tmp_path / "out")]) == 1
        assert "is not empty" in capsys.readouterr().err
    finally:
        assert main(["tenant", "erase", tenant, "--yes"]) == 0


async def test_an_export_of_an_erased_tenant_comes_back_only_under_a_new_name(
    declare: Declare,
    new_tenant: NewTenant,
    store: Store,
    owner: asyncpg.Connection,
    audit: AuditLog,
    tmp_path: Path,
) -> None:
    declared = await declare()
    tenant = await new_tenant()
    await fill(store, declared, tenant, audit)
    await export_tenant(owner, tenant, tmp_path / "export")
    await erase_tenant(owner, tenant)
    with pytest.raises(StoreError, match="was erased here"):
        await import_tenant(owner, tmp_path / "export")
    assert not await owner.fetchval(
        "SELECT EXISTS (SELECT FROM mnemo.tenants WHERE tenant_id = $1)", tenant
    )


class RolledBackError(Exception):
    """Raised to undo a test's moves of a tenant."""


async def test_restored_under_its_own_id_a_tenant_gets_the_very_same_audit_chain_back(
    declare: Declare,
    new_tenant: NewTenant,
    store: Store,
    owner: asyncpg.Connection,
    audit: AuditLog,
    tmp_path: Path,
) -> None:
    """As if into another database: the tenant is removed here (inside a transaction rolled back
    at the end, the log's triggers off for it), then the export comes back under its own id."""
    declared = await declare()
    tenant = await new_tenant()
    await fill(store, declared, tenant, audit)
    before = [(row.seq, row.hash) for row in await audit.page(tenant)]
    await export_tenant(owner, tenant, tmp_path / "export")
    with pytest.raises(RolledBackError):
        async with owner.transaction():
            await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
            await owner.execute("ALTER TABLE mnemo.audit_log DISABLE TRIGGER audit_log_append_only")
            await owner.execute("DELETE FROM mnemo.audit_log")
            await owner.execute("ALTER TABLE mnemo.audit_log ENABLE TRIGGER audit_log_append_only")
            for name in (declared.documents, declared.edges):
                await owner.execute(f'DELETE FROM axon_stores."{name}"')
            await owner.execute("DELETE FROM mnemo.graph_revisions")
            await owner.execute("DELETE FROM mnemo.tenants WHERE tenant_id = $1", tenant)
            restored = await import_tenant(owner, tmp_path / "export")
            assert restored.tenant == tenant
            await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
            after = [
                (r["seq"], bytes(r["hash"]))
                for r in await owner.fetch("SELECT seq, hash FROM mnemo.audit_log ORDER BY seq")
            ]
            assert after == before
            assert (
                await owner.fetchval(f'SELECT count(*) FROM axon_stores."{declared.documents}"')
                == 12
            )
            raise RolledBackError
    assert [(row.seq, row.hash) for row in await audit.page(tenant)] == before


async def test_every_system_table_with_tenant_rows_is_either_exported_or_left_for_a_reason(
    owner: asyncpg.Connection,
) -> None:
    tables = {
        r["relname"]
        for r in await owner.fetch(
            "SELECT c.relname FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace"
            " JOIN pg_attribute AS a ON a.attrelid = c.oid WHERE n.nspname = 'mnemo'"
            " AND c.relkind IN ('r', 'p') AND a.attname = 'axon_tenant' AND NOT a.attisdropped"
        )
    }
    assert not set(SYSTEM_TABLES) & set(NOT_CARRIED)
    assert tables == set(SYSTEM_TABLES) | set(NOT_CARRIED)
