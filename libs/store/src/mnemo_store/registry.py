"""The operators' side of the database: tenants, the corpus registry and route lint (owner role).

Deployment-wide rows (`mnemo.tenants`, `mnemo.corpora`, `mnemo.routes`) have no tenant; the
application role may only read them. These functions take an owner connection; the CLI opens it
from MNEMO_OWNER_DATABASE_URL.

Tenant names follow one rule, stated here and nowhere else: `TENANT_NAME_PATTERN`, 1 to 63
characters of lower-case ASCII letters, digits, `-` and `_`, starting with a letter or digit, unique
ignoring case. So a name never holds a control character, an ANSI escape, a space or a homoglyph,
and `Acme` and `acme` cannot both exist. The database enforces the same rule (migration
0005_tenant_names); `mnemo tenant create` checks it first to say what would be right.

Route lint (CORPUS.md part A) is the pure `lint_routes`: every id in an active route's scope must
name a registered corpus that is published, whatever the route's mode. `mnemo apply` reports its
findings; deprecating a corpus an active route scopes is refused unless forced.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, Literal

import asyncpg

from mnemo_store.errors import (
    CorpusInUseError,
    CorpusStatusError,
    DuplicateTenantError,
    InvalidTenantNameError,
    StoreError,
    UnknownCorpusError,
)
from mnemo_store.shown_text import shown_text
from mnemo_store.store_corpus import StoreCorpus

TENANT_NAME_PATTERN: Final = "[a-z0-9][a-z0-9_-]{0,62}"
TENANT_NAME_RULE: Final = (
    "1 to 63 characters: lower-case letters a-z, digits, '-' and '_', starting with a letter or "
    "a digit (e.g. 'acme-corp')"
)
_TENANT_NAME: Final = re.compile(TENANT_NAME_PATTERN)

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
class Route:
    """A row of `mnemo.routes`: `scope` is what the row holds (a JSON array of corpus ids)."""

    route_id: str
    route_version: int
    mode: str  # "tool" | "deterministic_prefetch"
    scope: tuple[object, ...]
    active: bool


@dataclass(frozen=True, slots=True)
class StatusChange:
    corpus_id: str
    before: str
    after: str

    @property
    def changed(self) -> bool:
        return self.before != self.after


def is_tenant_name(name: str) -> bool:
    """True when `name` follows the tenant-name rule."""
    return _TENANT_NAME.fullmatch(name) is not None


def check_tenant_name(name: str) -> str:
    """`name` if it is a valid tenant name, else InvalidTenantNameError saying what would be."""
    if not is_tenant_name(name):
        raise InvalidTenantNameError(
            f"tenant name {shown_name(name)} is not allowed: a tenant name has {TENANT_NAME_RULE}"
        )
    return name


def shown_name(name: str, limit: int = 80) -> str:
    """`name` quoted for a message or a listing: control characters and escapes made visible, cut
    at `limit` characters, so a stored name can never forge a line of output."""
    if is_tenant_name(name):
        return f"'{name}'"
    shown = shown_text(name[:limit], ascii_only=True).replace("'", "\\'")
    return f"'{shown}'" + ("..." if len(name) > limit else "")


async def create_tenant(connection: asyncpg.Connection, name: str) -> Tenant:
    """A new tenant called `name` (see `TENANT_NAME_PATTERN`; unique ignoring case)."""
    check_tenant_name(name)
    try:
        row = await connection.fetchrow(
            "INSERT INTO mnemo.tenants (name) VALUES ($1) RETURNING tenant_id, name, created_at",
            name,
        )
    except asyncpg.UniqueViolationError:
        raise DuplicateTenantError(
            f"a tenant named '{name}' already exists (names are unique ignoring case); choose "
            "another name (`mnemo tenant list` shows them)"
        ) from None
    assert row is not None  # INSERT … RETURNING returns the row it inserted
    return Tenant(row["tenant_id"], row["name"], row["created_at"])


async def list_tenants(connection: asyncpg.Connection) -> list[Tenant]:
    rows = await connection.fetch(
        "SELECT tenant_id, name, created_at FROM mnemo.tenants ORDER BY name"
    )
    return [Tenant(row["tenant_id"], row["name"], row["created_at"]) for row in rows]


_CORPUS_COLUMNS = (
    "corpus_id, display_name, url, collection, auth, owner, status, region, updated_at, kind,"
    " version, definition::text AS definition"
)


async def list_corpora(
    connection: asyncpg.Connection | asyncpg.Pool, *, kind: str | None = None
) -> list[CorpusRow]:
    """The registry's rows by corpus id; only those of `kind` (e.g. `store_graph`) when given."""
    if kind is None:
        rows = await connection.fetch(
            f"SELECT {_CORPUS_COLUMNS} FROM mnemo.corpora ORDER BY corpus_id"
        )
    else:
        rows = await connection.fetch(
            f"SELECT {_CORPUS_COLUMNS} FROM mnemo.corpora WHERE kind = $1 ORDER BY corpus_id", kind
        )
    return [_corpus_row(row) for row in rows]


async def read_corpus(
    connection: asyncpg.Connection | asyncpg.Pool, corpus_id: str
) -> CorpusRow | None:
    """The registry row of `corpus_id`, or None when it is not registered."""
    row = await connection.fetchrow(
        f"SELECT {_CORPUS_COLUMNS} FROM mnemo.corpora WHERE corpus_id = $1", corpus_id
    )
    return None if row is None else _corpus_row(row)


@dataclass(frozen=True, slots=True)
class StoreCorpora:
    """The registry's store corpora as a service reads them: each one this version can read, by
    id, and the status of every registered store corpus (readable or not)."""

    corpora: Mapping[str, StoreCorpus]
    statuses: Mapping[str, str]


async def read_store_corpora(connection: asyncpg.Connection | asyncpg.Pool) -> StoreCorpora:
    """The store corpora of the registry (`kind = 'store_graph'`). A definition this version
    cannot read is not a corpus it serves: it is left out of `corpora`, its status kept."""
    rows = await list_corpora(connection, kind="store_graph")
    corpora: dict[str, StoreCorpus] = {}
    for row in rows:
        try:
            corpora[row.corpus_id] = StoreCorpus.from_definition(row.definition)
        except (StoreError, ValueError, KeyError, TypeError):
            continue
    return StoreCorpora(corpora, {row.corpus_id: row.status for row in rows})


def _corpus_row(row: asyncpg.Record) -> CorpusRow:
    return CorpusRow(
        **{key: row[key] for key in row.keys() if key != "definition"},  # noqa: SIM118  # asyncpg Records are not dicts
        definition=json.loads(row["definition"]),
    )


def lint_routes(routes: Iterable[Route], statuses: Mapping[str, str]) -> list[str]:
    """Route lint (pure): one finding per scoped id of an active route that is not a published
    corpus, in route order, then scope order. `statuses` maps every registered corpus id to its
    status. Inactive routes are not linted; `mode = tool` routes are, like every other mode.
    """
    findings: list[str] = []
    for route in routes:
        if not route.active:
            continue
        for corpus_id in route.scope:
            if not isinstance(corpus_id, str):
                findings.append(
                    f"{route.route_id}: scope entry {corpus_id!r} is not a corpus id (a string)"
                )
                continue
            status = statuses.get(corpus_id)
            if status is None:
                findings.append(f"{route.route_id}: unknown corpus {corpus_id}")
            elif status != "published":
                findings.append(f"{route.route_id}: corpus not published {corpus_id}")
    return findings


async def list_routes(connection: asyncpg.Connection) -> list[Route]:
    rows = await connection.fetch(
        "SELECT route_id, route_version, mode, scope::text AS scope, active FROM mnemo.routes"
        " ORDER BY route_id"
    )
    return [
        Route(
            row["route_id"],
            row["route_version"],
            row["mode"],
            tuple(json.loads(row["scope"])),
            row["active"],
        )
        for row in rows
    ]


async def store_corpora_fingerprint(
    connection: asyncpg.Connection | asyncpg.Pool,
) -> tuple[object, ...]:
    """What changes whenever a store corpus is registered, redefined or removed: a cache of store
    corpora compares it on a miss and re-reads the registry only when it differs."""
    row = await connection.fetchrow(
        "SELECT count(*) AS n, max(updated_at) AS changed FROM mnemo.corpora"
        " WHERE kind = 'store_graph'"
    )
    return (row["n"], row["changed"]) if row is not None else ()


async def read_statuses(connection: asyncpg.Connection) -> dict[str, str]:
    """Every registered corpus id and its status."""
    rows = await connection.fetch("SELECT corpus_id, status FROM mnemo.corpora")
    return {row["corpus_id"]: row["status"] for row in rows}


async def routes_using(connection: asyncpg.Connection, corpus_id: str) -> tuple[str, ...]:
    """The active routes whose scope names `corpus_id`, by id (the seed's "Uses" lookup)."""
    rows = await connection.fetch(
        "SELECT route_id FROM mnemo.routes WHERE active AND scope @> jsonb_build_array($1::text)"
        " ORDER BY route_id",
        corpus_id,
    )
    return tuple(row["route_id"] for row in rows)


async def set_corpus_status(
    connection: asyncpg.Connection, corpus_id: str, status: Status, *, force: bool = False
) -> StatusChange:
    """Publish or deprecate a corpus; setting the status it already has changes nothing.

    Deprecating a corpus that an active route scopes raises CorpusInUseError naming the routes,
    unless `force` (the routes then fail lint until they change).
    """
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
        if status == "deprecated" and not force:
            routes = await routes_using(connection, corpus_id)
            if routes:
                raise CorpusInUseError(corpus_id, routes)
        await connection.execute(
            "UPDATE mnemo.corpora SET status = $2 WHERE corpus_id = $1", corpus_id, status
        )
    return StatusChange(corpus_id, before, status)
