"""The operators' side of the database: tenants and the corpus registry (as the owner role).

Deployment-wide rows (`mnemo.tenants`, `mnemo.corpora`) have no tenant; the application role may
only read them. These functions take an owner connection; the CLI opens it from
MNEMO_OWNER_DATABASE_URL.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, Literal

import asyncpg

from mnemo_store.errors import (
    CorpusStatusError,
    DuplicateTenantError,
    UnknownCorpusError,
)

STATUSES: Final = ("draft", "published", "deprecated")
Status = Literal["draft", "published", "deprecated"]
# Which statuses each operator transition may start from.
_TRANSITIONS: Final[dict[str, tuple[str, ...]]] = {
    "published": ("draft", "deprecated"),
    "deprecated": ("draft", "published"),
}


@dataclass(frozen=True, slots=True)
class Tenant:
    tenant_id: uuid.UUID
    name: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class CorpusRow:
    """A registry row (CORPUS.md part A)."""

    corpus_id: str
    display_name: str
    url: str
    collection: str
    auth: str
    owner: str
    status: str
    region: str | None
    updated_at: datetime
    kind: str
    version: str
    definition: dict[str, Any]


@dataclass(frozen=True, slots=True)
class StatusChange:
    corpus_id: str
    before: str
    after: str

    @property
    def changed(self) -> bool:
        return self.before != self.after


async def create_tenant(connection: asyncpg.Connection, name: str) -> Tenant:
    """A new tenant called `name` (names are unique, 1 to 200 characters)."""
    if not 1 <= len(name) <= 200:
        raise ValueError(f"a tenant name has 1 to 200 characters, got {len(name)}")
    try:
        row = await connection.fetchrow(
            "INSERT INTO mnemo.tenants (name) VALUES ($1) RETURNING tenant_id, name, created_at",
            name,
        )
    except asyncpg.UniqueViolationError:
        raise DuplicateTenantError(
            f"a tenant named {name!r} already exists; choose another name (`mnemo tenant list`)"
        ) from None
    assert row is not None  # INSERT … RETURNING returns the row it inserted
    return Tenant(row["tenant_id"], row["name"], row["created_at"])


async def list_tenants(connection: asyncpg.Connection) -> list[Tenant]:
    rows = await connection.fetch(
        "SELECT tenant_id, name, created_at FROM mnemo.tenants ORDER BY name"
    )
    return [Tenant(row["tenant_id"], row["name"], row["created_at"]) for row in rows]


async def list_corpora(connection: asyncpg.Connection) -> list[CorpusRow]:
    rows = await connection.fetch(
        "SELECT corpus_id, display_name, url, collection, auth, owner, status, region, updated_at,"
        " kind, version, definition::text AS definition FROM mnemo.corpora ORDER BY corpus_id"
    )
    return [
        CorpusRow(
            **{key: row[key] for key in row.keys() if key != "definition"},  # noqa: SIM118  # asyncpg Records are not dicts
            definition=json.loads(row["definition"]),
        )
        for row in rows
    ]


async def set_corpus_status(
    connection: asyncpg.Connection, corpus_id: str, status: Status
) -> StatusChange:
    """Publish or deprecate a corpus; setting the status it already has changes nothing."""
    allowed = _TRANSITIONS[status]
    async with connection.transaction():
        before = await connection.fetchval(
            "SELECT status FROM mnemo.corpora WHERE corpus_id = $1 FOR UPDATE", corpus_id
        )
        if before is None:
            raise UnknownCorpusError(
                f"no corpus {corpus_id!r} in the registry; `mnemo corpus list` shows the ids, "
                "`mnemo apply` registers declared corpora"
            )
        if before == status:
            return StatusChange(corpus_id, before, before)
        if before not in allowed:
            raise CorpusStatusError(
                f"corpus {corpus_id!r} is {before}; it can become {status} only from "
                f"{' or '.join(allowed)}"
            )
        await connection.execute(
            "UPDATE mnemo.corpora SET status = $2 WHERE corpus_id = $1", corpus_id, status
        )
    return StatusChange(corpus_id, before, status)
