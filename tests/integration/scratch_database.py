"""A database of a test's own on the test cluster, migrated as the owner role (the service roles
are the cluster's), dropped afterwards whatever the test did."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import urlsplit, urlunsplit

import asyncpg
from mnemo_cli.owner_connection import OWNER_URL_VARIABLE

from tests.infrastructure import ROOT


def on_database(dsn: str, database: str, role: str | None = None) -> str:
    """`dsn` pointed at another database of the same cluster (as `role`, password its name)."""
    parts = urlsplit(dsn)
    netloc = parts.netloc
    if role is not None:
        netloc = f"{role}:{role}@{netloc.rsplit('@', 1)[-1]}"
    return urlunsplit(parts._replace(netloc=netloc, path=f"/{database}"))


async def migrate(owner_dsn: str, target: str = "heads") -> None:
    """`alembic upgrade target` on the database of `owner_dsn`, as its owner."""
    migrated = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "alembic", "-c", "migrations/alembic.ini", "upgrade", target],
        cwd=ROOT,
        env={**os.environ, OWNER_URL_VARIABLE: owner_dsn},
        capture_output=True,
        text=True,
        check=False,
    )
    assert migrated.returncode == 0, migrated.stderr


@asynccontextmanager
async def scratch_database(
    superuser_dsn: str, owner_dsn: str, prefix: str, target: str = "heads"
) -> AsyncIterator[str]:
    """A new database named `prefix` + a random suffix, owned by the owner role and migrated to
    `target`; yields its name."""
    name = f"{prefix}{uuid.uuid4().hex[:12]}"
    superuser = await asyncpg.connect(superuser_dsn)
    try:
        await superuser.execute(f'CREATE DATABASE "{name}" OWNER mnemo_owner')
        try:
            inside = await asyncpg.connect(on_database(superuser_dsn, name))
            try:
                await inside.execute("REVOKE ALL ON SCHEMA public FROM PUBLIC")
            finally:
                await inside.close()
            await migrate(on_database(owner_dsn, name), target)
            yield name
        finally:
            await superuser.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await superuser.close()
