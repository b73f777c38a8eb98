"""What the catalogue promises: row-level security everywhere tenant rows live, weak roles, safe views."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg
import pytest

SYSTEM_SCHEMAS = ("pg_catalog", "information_schema", "pg_toast")


async def test_every_table_with_tenant_rows_has_rls_enabled_forced_and_a_tenant_policy(
    owner: asyncpg.Connection, declare: Any
) -> None:
    await declare()  # at least one declared store pair exists while checking
    rows = await owner.fetch(
        """
        SELECT n.nspname, c.relname, c.relrowsecurity, c.relforcerowsecurity,
               array(SELECT pg_get_expr(p.polqual, p.polrelid) FROM pg_policy p
                     WHERE p.polrelid = c.oid AND p.polname = 'tenant_isolation') AS quals
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE c.relkind IN ('r', 'p')
          AND n.nspname <> ALL($1::text[]) AND n.nspname NOT LIKE 'test\\_%'
          AND EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = c.oid
                      AND a.attname = 'axon_tenant' AND NOT a.attisdropped)
        """,
        list(SYSTEM_SCHEMAS),
    )
    names = {f"{row['nspname']}.{row['relname']}" for row in rows}
    assert {"mnemo.outbox", "mnemo.inbox", "mnemo.audit_log", "mnemo.graph_revisions"} <= names
    assert any(name.startswith("axon_stores.") for name in names)
    for row in rows:
        table = f"{row['nspname']}.{row['relname']}"
        assert row["relrowsecurity"], f"{table}: row-level security is not enabled"
        assert row["relforcerowsecurity"], f"{table}: row-level security is not forced"
        assert len(row["quals"]) == 1, f"{table}: no tenant_isolation policy"
        assert "NULLIF(current_setting('mnemo.tenant'::text, true), ''::text)" in row["quals"][0]


@pytest.mark.parametrize("role", ["mnemo_app", "mnemo_relay"])
async def test_the_service_roles_are_neither_superuser_nor_bypassrls_and_own_nothing(
    owner: asyncpg.Connection, role: str
) -> None:
    row = await owner.fetchrow(
        "SELECT rolsuper, rolbypassrls, (SELECT count(*) FROM pg_class c"
        " WHERE c.relowner = r.oid) AS owned FROM pg_roles r WHERE rolname = $1",
        role,
    )
    assert row is not None
    assert (row["rolsuper"], row["rolbypassrls"], row["owned"]) == (False, False, 0)


async def test_every_view_is_security_invoker(owner: asyncpg.Connection) -> None:
    rows = await owner.fetch(
        """
        SELECT n.nspname || '.' || c.relname AS name, coalesce(c.reloptions, '{}') AS options
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE c.relkind IN ('v', 'm') AND n.nspname <> ALL($1::text[])
        """,
        list(SYSTEM_SCHEMAS),
    )
    for row in rows:
        assert any(
            option in ("security_invoker=true", "security_invoker=on", "security_invoker=1")
            for option in row["options"]
        ), f"view {row['name']} is not security_invoker"


async def test_the_audit_log_is_append_only(owner: asyncpg.Connection, app_dsn: str) -> None:
    tenant = uuid.uuid4()
    app = await asyncpg.connect(app_dsn)
    try:
        # Only the audit role appends (migration 0007); the owner stands in for it here, and the
        # database computes seq, prev_hash and hash itself.
        async with owner.transaction():
            await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
            await owner.execute(
                "INSERT INTO mnemo.audit_log (axon_tenant, event_id, kind, occurred_at, payload,"
                " producer) VALUES ($1, $2, 'test', now(), '{}', 'test')",
                tenant,
                uuid.uuid4(),
            )
        async with app.transaction():
            await app.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
            assert await app.fetchval("SELECT count(*) FROM mnemo.audit_log") == 1
        for statement in ("UPDATE mnemo.audit_log SET kind = 'x'", "DELETE FROM mnemo.audit_log"):
            with pytest.raises(asyncpg.InsufficientPrivilegeError):
                async with app.transaction():
                    await app.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
                    await app.execute(statement)
    finally:
        await app.close()
    # Even the owner, who holds every privilege, is refused by the trigger.
    for statement in ("UPDATE mnemo.audit_log SET kind = 'x'", "DELETE FROM mnemo.audit_log"):
        with pytest.raises(asyncpg.InsufficientPrivilegeError, match="append-only"):
            async with owner.transaction():
                await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
                await owner.execute(statement)


async def test_the_relay_role_reaches_the_outbox_and_nothing_else(relay_dsn: str) -> None:
    relay = await asyncpg.connect(relay_dsn)
    try:
        await relay.fetchval("SELECT count(*) FROM mnemo.outbox")
        for table in ("mnemo.inbox", "mnemo.corpora", "mnemo.tenants", "mnemo.graph_revisions"):
            with pytest.raises(asyncpg.InsufficientPrivilegeError):
                await relay.fetchval(f"SELECT count(*) FROM {table}")
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await relay.execute("DELETE FROM mnemo.outbox WHERE false")
    finally:
        await relay.close()


async def test_a_corpus_status_outside_the_lifecycle_is_refused(owner: asyncpg.Connection) -> None:
    with pytest.raises(asyncpg.CheckViolationError):
        await owner.execute(
            "INSERT INTO mnemo.corpora (corpus_id, display_name, url, status, kind, definition,"
            " version) VALUES ($1, 'x', 'x', 'live', 'inline', '{}', 'v')",
            f"test-{uuid.uuid4().hex}",
        )
