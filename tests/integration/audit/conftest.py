"""Login roles for the audit tests: each service's own role, as `make up` provisions them."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest
from mnemo_store.audit_log import AuditLog

RoleDsn = Callable[[str], str]


@pytest.fixture(scope="session")
def role_dsn(owner_dsn: str) -> RoleDsn:
    """DSN of a login role: `MNEMO_<NAME>_DATABASE_URL` when set, else the owner's with user and
    password replaced by the role name (how the local stack creates them)."""

    def dsn(role: str) -> str:
        name = role.removeprefix("mnemo_").upper()
        variable = "MNEMO_DATABASE_URL" if name == "APP" else f"MNEMO_{name}_DATABASE_URL"
        if os.environ.get(variable):
            return os.environ[variable]
        parts = urlsplit(owner_dsn)
        host = parts.netloc.rsplit("@", 1)[-1]
        return urlunsplit(parts._replace(netloc=f"{role}:{role}@{host}"))

    return dsn


@pytest.fixture(scope="session")
def audit_dsn(role_dsn: RoleDsn) -> str:
    return role_dsn("mnemo_audit")


@pytest.fixture(scope="module")
async def audit_log(audit_dsn: str) -> AsyncIterator[AuditLog]:
    async with await AuditLog.connect(audit_dsn, max_size=8) as log:
        yield log


@pytest.fixture(scope="module")
async def owner(owner_dsn: str) -> AsyncIterator[asyncpg.Connection]:
    connection = await asyncpg.connect(owner_dsn)
    yield connection
    await connection.close()
