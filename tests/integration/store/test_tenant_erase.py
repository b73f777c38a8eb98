"""Erasing a tenant: nothing of it is left in any store or system table, its audit chain keeps
verifying with every payload redacted, its cached graphs stop proving themselves fresh, and writes
that arrive during or after the erase are refused rather than left behind."""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest
from mnemo_cli.main import main
from mnemo_cli.owner_connection import OWNER_URL_VARIABLE
from mnemo_store import OutboxEvent, Store, UnknownTenantError
from mnemo_store.audit_log import AuditLog, NewAuditEvent
from mnemo_store.erasure import TenantErasedError, erase_tenant, leftovers, resolve_tenant

from tests.integration.store.conftest import Declare, Declared, NewTenant
from tests.waiting import eventually


def audit_dsn(owner_dsn: str) -> str:
    parts = urlsplit(owner_dsn)
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit(parts._replace(netloc=f"mnemo_audit:mnemo_audit@{host}"))


def audit_event(n: int) -> NewAuditEvent:
    return NewAuditEvent(
        event_id=uuid.uuid4(),
        kind="persist",
        occurred_at=datetime.now(UTC),
        producer="ingest",
        trace=None,
        payload={"action": "store:Docs:persist", "title": f"private title {n}"},
    )


async def write_some(store: Store, declared: Declared, tenant: uuid.UUID, n: int) -> None:
    """One write transaction like ingest's: revisions, a document, an edge, an outbox row, an inbox
    claim, a navigation outcome."""
    first, second = uuid.uuid4(), uuid.uuid4()
    async with store.tenant(tenant) as tx:
        await tx.take_revisions([declared.corpus.name])
        await tx.insert_rows(
            declared.corpus.documents,
            [
                {"id": doc, "tenant_id": tenant, "title": f"secret {n}", "body": "words"}
                for doc in (first, second)
            ],
        )
        await tx.insert_rows(
            declared.corpus.relations,
            [
                {
                    "from_id": first,
                    "to_id": second,
                    "etype": "cite",
                    "weight": 0.5,
                    "tenant_id": tenant,
                }
            ],
        )
        await tx.append_outbox(OutboxEvent(uuid.uuid4(), "mnemo.test.v1", b"k", {"n": n}))
        await tx.claim_event("erase-test", uuid.uuid4())


@pytest.fixture(scope="module")
async def audit(owner_dsn: str) -> AsyncIterator[AuditLog]:
    async with await AuditLog.connect(audit_dsn(owner_dsn), max_size=4) as log:
        yield log


async def test_an_erased_tenant_leaves_no_row_anywhere_and_its_chain_still_verifies(
    declare: Declare,
    new_tenant: NewTenant,
    store: Store,
    owner: asyncpg.Connection,
    audit: AuditLog,
) -> None:
    declared = await declare()
    tenant, neighbour = await new_tenant(), await new_tenant()
    for n in range(3):
        await write_some(store, declared, tenant, n)
    await write_some(store, declared, neighbour, 99)
    await audit.append(tenant, [audit_event(n) for n in range(5)])
    await audit.append(neighbour, [audit_event(7)])
    async with store.tenant(tenant, read_only=True) as tx:
        revision_before = await tx.graph_revision(declared.corpus.name)
        cached_mark = await tx.change_mark(declared.corpus)
    assert revision_before > 0
    head_before = await audit.verify(tenant)

    erasure = await erase_tenant(owner, tenant)

    assert erasure.redacted == 5
    assert erasure.deleted[f"axon_stores.{declared.documents}"] == 6
    assert await leftovers(owner, tenant) == {}
    async with store.tenant(tenant, read_only=True) as tx:
        assert await tx.graph_revision(declared.corpus.name) != revision_before
        # A cache read before the erase cannot be refreshed past it: it must load in full (empty).
        assert await tx.changed_documents(declared.corpus, cached_mark) is None
        assert (await tx.load_graph(declared.corpus)).n_documents == 0
    report = await audit.verify(tenant)
    assert (report.ok, report.rows, report.redacted) == (True, 5, 5)
    assert report.head_hash == head_before.head_hash
    assert all(row.payload == {} for row in await audit.page(tenant))
    # The neighbour keeps everything.
    assert (await leftovers(owner, neighbour)).get(f"axon_stores.{declared.documents}") == 2
    assert (await audit.page(neighbour))[0].payload["title"] == "private title 7"


async def test_writes_and_audit_events_after_an_erase_leave_nothing_behind(
    declare: Declare,
    new_tenant: NewTenant,
    store: Store,
    owner: asyncpg.Connection,
    audit: AuditLog,
) -> None:
    declared = await declare()
    tenant = await new_tenant()
    await write_some(store, declared, tenant, 1)
    await erase_tenant(owner, tenant)
    with pytest.raises(TenantErasedError, match="has been erased"):
        await write_some(store, declared, tenant, 2)
    # An audit event that was still on its way is linked with its payload already redacted.
    await audit.append(tenant, [audit_event(3)])
    report = await audit.verify(tenant)
    assert (report.ok, report.rows, report.redacted) == (True, 1, 1)
    assert await leftovers(owner, tenant) == {}


async def test_a_tenant_erased_twice_ends_the_same_and_the_second_erase_finds_nothing(
    declare: Declare, new_tenant: NewTenant, store: Store, owner: asyncpg.Connection
) -> None:
    declared = await declare()
    tenant = await new_tenant()
    await write_some(store, declared, tenant, 1)
    first = await erase_tenant(owner, tenant)
    assert first.name is not None
    assert first.rows > 0
    assert await resolve_tenant(owner, str(tenant)) == tenant
    second = await erase_tenant(owner, await resolve_tenant(owner, str(tenant)))
    assert (second.name, second.rows, second.redacted) == (None, 0, 0)
    assert await leftovers(owner, tenant) == {}


@pytest.mark.parametrize("given", [str(uuid.uuid4()), "no-such-tenant-anywhere"])
async def test_an_unknown_tenant_is_refused_by_id_or_name(
    owner: asyncpg.Connection, given: str
) -> None:
    with pytest.raises(UnknownTenantError, match="unknown tenant"):
        await resolve_tenant(owner, given)


async def test_erasing_while_writers_keep_writing_leaves_nothing_of_the_tenant(
    declare: Declare,
    new_tenant: NewTenant,
    store: Store,
    owner: asyncpg.Connection,
    owner_dsn: str,
) -> None:
    declared = await declare()
    tenant = await new_tenant()
    written = [0]
    refused = [0]
    stop = asyncio.Event()

    async def writer(k: int) -> None:
        n = 0
        while not stop.is_set():
            n += 1
            try:
                await write_some(store, declared, tenant, k * 10_000 + n)
                written[0] += 1
            except TenantErasedError:
                refused[0] += 1
                return

    writers = [asyncio.create_task(writer(k)) for k in range(6)]

    async def progressed() -> bool:
        return written[0] >= 30

    await eventually(
        progressed, within=30, what=lambda: f"the writers wrote {written[0]} times, not 30"
    )
    eraser = await asyncpg.connect(owner_dsn)
    try:
        erasure = await erase_tenant(eraser, tenant)
    finally:
        await eraser.close()
    try:
        await asyncio.wait_for(asyncio.gather(*writers), 30)
    finally:
        stop.set()
        for task in writers:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, TenantErasedError):
                await task
    assert refused[0] == len(writers), "every writer meets the erase and is refused"
    assert erasure.rows > 0
    assert await leftovers(owner, tenant) == {}


def mnemo(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_the_erase_command_asks_for_confirmation_then_erases_and_says_what_went(
    owner_dsn: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(OWNER_URL_VARIABLE, owner_dsn)
    name = f"erase-cli-{uuid.uuid4().hex[:10]}"
    code, out, _ = mnemo(capsys, "tenant", "create", name)
    assert code == 0
    tenant = out.strip()
    code, _, err = mnemo(capsys, "tenant", "erase", name)
    assert code == 2
    assert "--yes" in err
    code, out, _ = mnemo(capsys, "tenant", "erase", name, "--yes", "--json")
    assert code == 0
    report = json.loads(out)
    assert (report["tenant_id"], report["name"], report["left"]) == (tenant, name, {})
    # By name it is gone; by id it is known as erased, and nothing is left.
    code, _, err = mnemo(capsys, "tenant", "erase", name, "--yes")
    assert code == 1
    assert f"unknown tenant {name!r}" in err
    code, out, _ = mnemo(capsys, "tenant", "erase", tenant, "--yes")
    assert code == 0
    assert "erased before: nothing of it is left" in out
    code, _, err = mnemo(capsys, "tenant", "erase", str(uuid.uuid4()), "--yes")
    assert code == 1
    assert "unknown tenant" in err
