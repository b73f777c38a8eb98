"""Erasing a tenant: every row of it in every store and system table goes, its audit payloads are
redacted (the chain keeps verifying, chain version 2), and its id is remembered as erased.

Run as the owner role:

1. the tenant's id goes into `mnemo.erased_tenants` and commits. Every write transaction of the
   unit of work starts with `mnemo.hold_tenant`, which refuses a marked tenant
   (`TenantErasedError`) and otherwise takes a key-share lock on the tenant's row;
2. in one transaction from here: the tenant's row is locked FOR UPDATE, which waits for the
   writes already in flight (new ones are refused by the mark), so no write lands between the
   deletes and the commit;
3. its rows go from every table that carries `axon_tenant` (stores in `axon_stores`, system tables
   in `mnemo`), the revision rows last, so a cached graph of any of its corpora stops proving
   itself fresh (its revision reads 0, which no cache of a written corpus holds);
4. its audit rows keep their place and links, their payloads replaced by `{}` (`redacted_at` set);
   the chain head stays, so a late audit event is still linked (and redacted on arrival);
5. its row of `mnemo.tenants` goes.

An erase stopped half-way leaves the tenant marked, its writes refused; erasing again finishes
it. Erasing again is harmless: a tenant already erased is swept once more (anything a writer outside
the unit of work left is removed) and reported with zero rows. An id or name never known is an
`UnknownTenantError`. Kafka topics are not touched: messages already on them stay until their
retention drops them (`erased_among` lets `mnemo dlt replay` refuse to publish an erased tenant's
dead letters again).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field

import asyncpg

from mnemo_store.errors import StoreError, UnknownTenantError
from mnemo_store.identifiers import TENANT_COLUMN, quote

KEPT_TABLES = frozenset({("mnemo", "audit_log"), ("mnemo", "audit_chain_heads")})
"""Tenant tables that erasing keeps: the audit chain (redacted) and its head."""

LAST_TABLES = ("graph_revisions",)
"""Emptied after the stores: deleting store rows bumps the revisions of the corpora they feed."""

_SET_TENANT = "SELECT set_config('mnemo.tenant', $1, true)"
TENANT_ERASED_SQLSTATE = "MNE01"
"""What `mnemo.hold_tenant` raises for an erased tenant."""

_TENANT_TABLES = f"""
SELECT n.nspname AS schema, c.relname AS name
FROM pg_class AS c
JOIN pg_namespace AS n ON n.oid = c.relnamespace
JOIN pg_attribute AS a ON a.attrelid = c.oid
WHERE n.nspname IN ('mnemo', 'axon_stores') AND c.relkind IN ('r', 'p')
  AND a.attname = '{TENANT_COLUMN}' AND NOT a.attisdropped
ORDER BY n.nspname DESC, c.relname
"""

_REDACT = (
    "UPDATE mnemo.audit_log SET payload = '{}'::jsonb, redacted_at = now()"
    " WHERE axon_tenant = $1 AND redacted_at IS NULL"
)


class TenantErasedError(StoreError):
    """A write for a tenant that has been erased (the database refuses it)."""

    def __init__(self, tenant: uuid.UUID) -> None:
        super().__init__(f"tenant {tenant} has been erased: nothing may be written for it")
        self.tenant = tenant


@dataclass(frozen=True, slots=True)
class Erasure:
    """What an erase removed: rows per table (`schema.table`), and audit rows redacted."""

    tenant: uuid.UUID
    name: str | None
    """The tenant's name, when this erase removed its row (None when it was erased before)."""
    deleted: dict[str, int] = field(default_factory=dict)
    redacted: int = 0

    @property
    def rows(self) -> int:
        return sum(self.deleted.values())


async def resolve_tenant(connection: asyncpg.Connection, given: str) -> uuid.UUID:
    """The id of a tenant given by id or name: one that exists, or one erased before."""
    try:
        tenant = uuid.UUID(given)
    except ValueError:
        found: uuid.UUID | None = await connection.fetchval(
            "SELECT tenant_id FROM mnemo.tenants WHERE lower(name) = lower($1)", given
        )
        if found is None:
            raise UnknownTenantError(
                f"unknown tenant {given!r}: no tenant has that name (`mnemo tenant list` shows"
                " them; an erased tenant is known by its id only)"
            ) from None
        return found
    known = await connection.fetchval(
        "SELECT EXISTS (SELECT FROM mnemo.tenants WHERE tenant_id = $1)"
        " OR EXISTS (SELECT FROM mnemo.erased_tenants WHERE tenant_id = $1)",
        tenant,
    )
    if not known:
        raise UnknownTenantError(
            f"unknown tenant {tenant}: it is neither a tenant nor one erased before"
            " (`mnemo tenant list` shows the tenants)"
        )
    return tenant


async def erase_tenant(connection: asyncpg.Connection, tenant: uuid.UUID) -> Erasure:
    """Erase `tenant` (see the module's text) over an owner connection; one transaction."""
    # The mark commits first: from then on every new write transaction of the tenant is refused
    # (`mnemo.hold_tenant`), so the row lock below waits only for the writes already in flight.
    await connection.execute(
        "INSERT INTO mnemo.erased_tenants (tenant_id) VALUES ($1) ON CONFLICT DO NOTHING", tenant
    )
    async with connection.transaction():
        await connection.execute(_SET_TENANT, str(tenant))
        name: str | None = await connection.fetchval(
            "SELECT name FROM mnemo.tenants WHERE tenant_id = $1 FOR UPDATE", tenant
        )
        tables = [(r["schema"], r["name"]) for r in await connection.fetch(_TENANT_TABLES)]
        ordered = [t for t in tables if t[1] not in LAST_TABLES or t[0] != "mnemo"] + [
            t for t in tables if t[1] in LAST_TABLES and t[0] == "mnemo"
        ]
        deleted: dict[str, int] = {}
        for schema, table in ordered:
            if (schema, table) in KEPT_TABLES:
                continue
            target = f"{quote(schema)}.{quote(table)} WHERE {quote(TENANT_COLUMN)} = $1"
            # A DELETE fires the store's revision trigger even when it removes nothing, so a
            # table holding none of the tenant's rows is left alone.
            if not await connection.fetchval(f"SELECT EXISTS (SELECT FROM {target})", tenant):
                continue
            status = await connection.execute(f"DELETE FROM {target}", tenant)
            count = int(status.rsplit(" ", 1)[-1])
            if count:
                deleted[f"{schema}.{table}"] = count
        redacted = int((await connection.execute(_REDACT, tenant)).rsplit(" ", 1)[-1])
        await connection.execute("DELETE FROM mnemo.tenants WHERE tenant_id = $1", tenant)
    return Erasure(tenant=tenant, name=name, deleted=deleted, redacted=redacted)


async def leftovers(connection: asyncpg.Connection, tenant: uuid.UUID) -> dict[str, int]:
    """Rows of `tenant` still in any table (audit rows: those not redacted); empty after an erase."""
    found: dict[str, int] = {}
    async with connection.transaction(readonly=True):
        await connection.execute(_SET_TENANT, str(tenant))
        for record in await connection.fetch(_TENANT_TABLES):
            schema, table = record["schema"], record["name"]
            if (schema, table) == ("mnemo", "audit_chain_heads"):
                continue
            condition = f"{quote(TENANT_COLUMN)} = $1"
            if (schema, table) == ("mnemo", "audit_log"):
                condition += " AND redacted_at IS NULL"
            count = await connection.fetchval(
                f"SELECT count(*) FROM {quote(schema)}.{quote(table)} WHERE {condition}", tenant
            )
            if count:
                found[f"{schema}.{table}"] = int(count)
        if await connection.fetchval(
            "SELECT EXISTS (SELECT FROM mnemo.tenants WHERE tenant_id = $1)", tenant
        ):
            found["mnemo.tenants"] = 1
    return found


async def erased_among(
    connection: asyncpg.Connection, tenants: Iterable[uuid.UUID]
) -> frozenset[uuid.UUID]:
    """Those of `tenants` that were erased here (the owner role reads `mnemo.erased_tenants`)."""
    rows = await connection.fetch(
        "SELECT tenant_id FROM mnemo.erased_tenants WHERE tenant_id = ANY($1::uuid[])",
        list(set(tenants)),
    )
    return frozenset(r["tenant_id"] for r in rows)
