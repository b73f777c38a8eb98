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

Routes are data an operator authors (`mnemo route apply FILE`): `parse_routes` checks a document,
`apply_routes` lints every route in it against the registry first and writes nothing when a finding
remains (`RouteLintError`). A route is keyed by `(route_id, route_version)`; versions coexist and at
most one version of a route is active, the one `read_route` returns when no version is asked for.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Final, Literal
from urllib.parse import urlsplit

import asyncpg

from mnemo_store.errors import (
    CorpusInUseError,
    CorpusStatusError,
    DuplicateTenantError,
    InvalidRouteError,
    InvalidTenantNameError,
    InvalidValueError,
    RouteLintError,
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
    route_version: str
    mode: str  # "tool" | "deterministic_prefetch"
    scope: tuple[object, ...]
    active: bool
    updated_at: datetime | None = None

    @property
    def key(self) -> str:
        """How messages name the route: `<route_id>@<route_version>`."""
        return f"{self.route_id}@{self.route_version}"


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
                    f"{route.key}: scope entry {corpus_id!r} is not a corpus id (a string)"
                )
                continue
            status = statuses.get(corpus_id)
            if status is None:
                findings.append(f"{route.key}: unknown corpus {corpus_id}")
            elif status != "published":
                findings.append(f"{route.key}: corpus not published {corpus_id}")
    return findings


MODES: Final = ("deterministic_prefetch", "tool")
_ROUTE_ID: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,199}")
_ROUTE_KEYS: Final = frozenset({"route_id", "route_version", "mode", "scope", "active"})
_ROUTE_COLUMNS: Final = "route_id, route_version, mode, scope::text AS scope, active, updated_at"


def parse_routes(document: object) -> list[Route]:
    """The routes of a route document (YAML or JSON already parsed): one route object, a list of
    them, or `{"routes": [...]}`. Each has `route_id`, `route_version` (text: quote a number),
    `mode` (`deterministic_prefetch` or `tool`), `scope` (a list of corpus ids) and optionally
    `active` (default true). InvalidRouteError names the first problem of each bad route."""
    if isinstance(document, dict) and set(document) == {"routes"}:
        document = document["routes"]
    items = document if isinstance(document, list) else [document]
    if not items:
        raise InvalidRouteError("the document holds no route")
    problems: list[str] = []
    routes: list[Route] = []
    seen: set[tuple[str, str]] = set()
    for index, item in enumerate(items):
        where = f"route {index + 1}"
        problem, route = _route_of(item)
        if route is not None:
            where = f"route {index + 1} ({route.key})"
            if (route.route_id, route.route_version) in seen:
                problem = "appears twice in the document"
            elif route.active and any(r.route_id == route.route_id and r.active for r in routes):
                problem = "a second active version of the route (at most one may be active)"
            seen.add((route.route_id, route.route_version))
            routes.append(route)
        if problem:
            problems.append(f"{where}: {problem}")
    if problems:
        raise InvalidRouteError("; ".join(problems))
    return routes


def _text_field(item: dict[str, object], name: str, longest: int) -> str | None:
    value = item.get(name)
    if not isinstance(value, str) or not 1 <= len(value) <= longest or "\x00" in value:
        return None
    return value


def _route_of(item: object) -> tuple[str | None, Route | None]:
    if not isinstance(item, dict):
        return f"is a {type(item).__name__}, not an object", None
    unknown = sorted(str(key) for key in item if key not in _ROUTE_KEYS)
    if unknown:
        return (
            f"unknown field {', '.join(unknown)} (fields: {', '.join(sorted(_ROUTE_KEYS))})",
            None,
        )
    route_id = item.get("route_id")
    if not isinstance(route_id, str) or _ROUTE_ID.fullmatch(route_id) is None:
        return (
            "route_id must be 1 to 200 letters, digits, '_', '.' and '-', starting with a letter "
            f"or a digit (got {str(route_id)[:80]!r})",
            None,
        )
    version = _text_field(item, "route_version", 100)
    if version is None:
        return (
            f"route {route_id}: route_version must be text of 1 to 100 characters "
            f"(got {item.get('route_version')!r}; quote a number, e.g. '2026.08.1')",
            None,
        )
    mode = item.get("mode")
    if mode not in MODES:
        return f"route {route_id}: mode must be one of {', '.join(MODES)} (got {mode!r})", None
    scope = item.get("scope")
    if not isinstance(scope, list) or not all(isinstance(c, str) and c for c in scope):
        return f"route {route_id}: scope must be a list of corpus ids (text)", None
    active = item.get("active", True)
    if not isinstance(active, bool):
        return f"route {route_id}: active must be true or false (got {active!r})", None
    return None, Route(route_id, version, str(mode), tuple(scope), active)


@dataclass(frozen=True, slots=True)
class RouteChange:
    route: Route
    created: bool
    deactivated: tuple[str, ...]
    """Other versions of the route this apply made inactive (their keys)."""


async def apply_routes(
    connection: asyncpg.Connection, routes: Iterable[Route]
) -> list[RouteChange]:
    """Write `routes` (from `parse_routes`) in one transaction, after the lint: every corpus id in
    their scopes (active or not, whatever the mode) must exist and be published, else
    RouteLintError naming route, version and corpus, and nothing is written. The scoped corpus rows
    are locked while the routes are written, so a concurrent deprecate waits and then sees them.
    An active route makes the other versions of its route inactive."""
    routes = list(routes)
    async with connection.transaction():
        scoped = sorted({str(c) for route in routes for c in route.scope})
        rows = await connection.fetch(
            "SELECT corpus_id, status FROM mnemo.corpora WHERE corpus_id = ANY($1::text[])"
            " ORDER BY corpus_id FOR SHARE",
            scoped,
        )
        statuses = {row["corpus_id"]: row["status"] for row in rows}
        findings = lint_routes([replace(route, active=True) for route in routes], statuses)
        if findings:
            raise RouteLintError(findings)
        changes: list[RouteChange] = []
        for route in routes:
            deactivated: tuple[str, ...] = ()
            if route.active:
                off = await connection.fetch(
                    "UPDATE mnemo.routes SET active = false WHERE route_id = $1"
                    " AND route_version <> $2 AND active RETURNING route_version",
                    route.route_id,
                    route.route_version,
                )
                deactivated = tuple(f"{route.route_id}@{row['route_version']}" for row in off)
            created = await connection.fetchval(
                "INSERT INTO mnemo.routes (route_id, route_version, mode, scope, active)"
                " VALUES ($1, $2, $3, $4::jsonb, $5)"
                " ON CONFLICT (route_id, route_version) DO UPDATE"
                " SET mode = EXCLUDED.mode, scope = EXCLUDED.scope, active = EXCLUDED.active"
                " RETURNING (xmax = 0)",
                route.route_id,
                route.route_version,
                route.mode,
                json.dumps(list(route.scope)),
                route.active,
            )
            changes.append(RouteChange(route, bool(created), deactivated))
    return changes


def _route(row: asyncpg.Record) -> Route:
    return Route(
        row["route_id"],
        row["route_version"],
        row["mode"],
        tuple(json.loads(row["scope"])),
        row["active"],
        row["updated_at"],
    )


async def list_routes(connection: asyncpg.Connection | asyncpg.Pool) -> list[Route]:
    """Every version of every route, by id then version."""
    rows = await connection.fetch(
        f"SELECT {_ROUTE_COLUMNS} FROM mnemo.routes ORDER BY route_id, route_version"
    )
    return [_route(row) for row in rows]


async def read_route(
    connection: asyncpg.Connection | asyncpg.Pool, route_id: str, version: str | None = None
) -> Route | None:
    """Version `version` of the route, or its active version when `version` is None; None when
    there is no such row."""
    if version is None:
        row = await connection.fetchrow(
            f"SELECT {_ROUTE_COLUMNS} FROM mnemo.routes WHERE route_id = $1 AND active", route_id
        )
    else:
        row = await connection.fetchrow(
            f"SELECT {_ROUTE_COLUMNS} FROM mnemo.routes WHERE route_id = $1 AND route_version = $2",
            route_id,
            version,
        )
    return None if row is None else _route(row)


async def routes_naming(
    connection: asyncpg.Connection | asyncpg.Pool, corpus_id: str
) -> list[Route]:
    """Every route version whose scope names `corpus_id`, active or not, whatever its mode (the
    seed's Uses panel), by id then version."""
    rows = await connection.fetch(
        f"SELECT {_ROUTE_COLUMNS} FROM mnemo.routes"
        " WHERE scope @> jsonb_build_array($1::text) ORDER BY route_id, route_version",
        corpus_id,
    )
    return [_route(row) for row in rows]


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
    """The active routes whose scope names `corpus_id`, as `<route_id>@<route_version>`."""
    rows = await connection.fetch(
        "SELECT route_id, route_version FROM mnemo.routes"
        " WHERE active AND scope @> jsonb_build_array($1::text) ORDER BY route_id, route_version",
        corpus_id,
    )
    return tuple(f"{row['route_id']}@{row['route_version']}" for row in rows)


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


_CORPUS_ID: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,199}")


@dataclass(frozen=True, slots=True)
class ExternalCorpus:
    """A registry row for someone else's search gateway (`kind = 'external'`): prefetch POSTs
    `{collection, goal}` to `url` like to any gateway."""

    corpus_id: str
    url: str
    display_name: str = ""
    collection: str = ""
    owner: str = ""
    auth: str = "none"
    region: str | None = None


def check_external_corpus(corpus: ExternalCorpus) -> None:
    """InvalidValueError saying what is wrong with `corpus`, if anything."""
    if _CORPUS_ID.fullmatch(corpus.corpus_id) is None:
        raise InvalidValueError(
            f"corpus id {corpus.corpus_id[:80]!r} is not allowed: 1 to 200 letters, digits, '_', "
            "'.' and '-', starting with a letter or a digit (e.g. 'product-disclosure')"
        )
    parts = urlsplit(corpus.url)
    if parts.scheme not in ("http", "https") or not parts.hostname or len(corpus.url) > 2000:
        raise InvalidValueError(
            f"url {corpus.url[:80]!r} is not a gateway url: write http(s)://HOST[:PORT]/PATH"
        )
    for name in ("display_name", "collection", "owner", "auth", "region"):
        value = getattr(corpus, name)
        if value is not None and (len(value) > 200 or "\x00" in value):
            raise InvalidValueError(f"{name} must be text of at most 200 characters")


async def register_external_corpus(connection: asyncpg.Connection, corpus: ExternalCorpus) -> bool:
    """Register (True) or update (False) an external corpus; a new row is a draft, an existing
    one keeps its status. A registered corpus of another kind is refused (`mnemo apply` owns it)."""
    check_external_corpus(corpus)
    definition = {"kind": "external", "url": corpus.url, "collection": corpus.collection}
    text = json.dumps(definition, sort_keys=True)
    version = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    async with connection.transaction():
        kind = await connection.fetchval(
            "SELECT kind FROM mnemo.corpora WHERE corpus_id = $1 FOR UPDATE", corpus.corpus_id
        )
        if kind is not None and kind != "external":
            raise CorpusStatusError(
                f"corpus {corpus.corpus_id!r} is a {kind} corpus declared in an .axon file; "
                "`mnemo apply` registers it, not this command"
            )
        await connection.execute(
            "INSERT INTO mnemo.corpora (corpus_id, display_name, url, collection, auth, owner,"
            " region, kind, definition, version)"
            " VALUES ($1, $2, $3, $4, $5, $6, $7, 'external', $8::jsonb, $9)"
            " ON CONFLICT (corpus_id) DO UPDATE SET display_name = EXCLUDED.display_name,"
            " url = EXCLUDED.url, collection = EXCLUDED.collection, auth = EXCLUDED.auth,"
            " owner = EXCLUDED.owner, region = EXCLUDED.region,"
            " definition = EXCLUDED.definition, version = EXCLUDED.version",
            corpus.corpus_id,
            corpus.display_name or corpus.corpus_id,
            corpus.url,
            corpus.collection,
            corpus.auth,
            corpus.owner,
            corpus.region,
            text,
            version,
        )
    return kind is None
