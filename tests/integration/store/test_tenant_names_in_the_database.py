"""The database holds tenant names to the rule too (migration 0005_tenant_names): a row written by
any client, not only `mnemo tenant create`, must follow the pattern and be unique ignoring case; and
the migration names the existing rows that break the rule instead of failing on them blindly.

Each test runs in a transaction it rolls back, so nothing it changes outlives it.
"""

from __future__ import annotations

import importlib.util
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest

MIGRATION = Path(__file__).resolve().parents[3] / "migrations" / "versions" / "0005_tenant_names.py"


def upgrade_sql() -> str:
    spec = importlib.util.spec_from_file_location("tenant_names_migration", MIGRATION)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return str(module.UPGRADE)


@pytest.fixture
async def owner_tx(owner_dsn: str) -> AsyncIterator[asyncpg.Connection]:
    connection = await asyncpg.connect(owner_dsn)
    transaction = connection.transaction()
    await transaction.start()
    try:
        yield connection
    finally:
        await transaction.rollback()
        await connection.close()


async def without_the_rule(connection: asyncpg.Connection) -> None:
    """The table as it was before 0005 (inside the test's transaction)."""
    await connection.execute("DROP INDEX mnemo.tenants_name_lower_key")
    await connection.execute("ALTER TABLE mnemo.tenants DROP CONSTRAINT tenants_name_pattern")


@pytest.mark.parametrize("name", ["Acme", "acme corp", "acme\n", "\x1b[31m", "аcme", "a" * 64])
async def test_the_database_refuses_a_name_that_breaks_the_rule(
    owner_tx: asyncpg.Connection, name: str
) -> None:
    with pytest.raises(asyncpg.CheckViolationError, match="tenants_name_pattern"):
        await owner_tx.execute("INSERT INTO mnemo.tenants (name) VALUES ($1)", name)


async def test_the_database_refuses_a_case_twin_of_a_name_that_predates_the_rule(
    owner_tx: asyncpg.Connection,
) -> None:
    await without_the_rule(owner_tx)
    await owner_tx.execute("INSERT INTO mnemo.tenants (name) VALUES ('Legacy-Twin-x')")
    await owner_tx.execute(upgrade_sql())
    with pytest.raises(asyncpg.UniqueViolationError, match="tenants_name_lower_key"):
        await owner_tx.execute("INSERT INTO mnemo.tenants (name) VALUES ('legacy-twin-x')")


async def test_the_migration_keeps_a_legacy_name_and_says_to_rename_it(
    owner_tx: asyncpg.Connection,
) -> None:
    await without_the_rule(owner_tx)
    tenant = await owner_tx.fetchval(
        "INSERT INTO mnemo.tenants (name) VALUES ('Old Name\nforged') RETURNING tenant_id"
    )
    notices: list[str] = []
    owner_tx.add_log_listener(lambda _connection, message: notices.append(str(message)))
    await owner_tx.execute(upgrade_sql())
    assert any(str(tenant) in notice and "rename it" in notice for notice in notices), notices
    validated = await owner_tx.fetchval(
        "SELECT convalidated FROM pg_constraint WHERE conname = 'tenants_name_pattern'"
    )
    assert validated is False  # NOT VALID: the old row stays readable until it is renamed


async def test_the_migration_stops_on_case_twins_and_names_them(
    owner_tx: asyncpg.Connection,
) -> None:
    await without_the_rule(owner_tx)
    await owner_tx.execute("INSERT INTO mnemo.tenants (name) VALUES ('TwinX-1'), ('twinx-1')")
    with pytest.raises(asyncpg.RaiseError, match=r"unique ignoring case.*'TwinX-1'.*'twinx-1'"):
        await owner_tx.execute(upgrade_sql())
