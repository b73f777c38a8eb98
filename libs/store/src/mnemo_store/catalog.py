"""Reading what `axon_stores` holds today, for `ddl.plan_stores` to compare declarations with."""

from __future__ import annotations

import asyncpg

from mnemo_store.ddl import (
    CHANGE_TRIGGER,
    NAVIGATOR_ROLE,
    RESET_TRIGGER,
    REVISION_TRIGGER,
    TRUNCATE_TRIGGER,
    Catalog,
    ExistingColumn,
    ExistingStore,
)
from mnemo_store.identifiers import STORE_SCHEMA

_TABLES = """
SELECT c.oid, c.relname, c.relrowsecurity, c.relforcerowsecurity,
       EXISTS (SELECT FROM pg_policy p WHERE p.polrelid = c.oid) AS has_policy,
       (SELECT t.tgargs FROM pg_trigger t WHERE t.tgrelid = c.oid AND t.tgname = $2) AS trigger_args,
       EXISTS (SELECT FROM pg_trigger t WHERE t.tgrelid = c.oid AND t.tgname = $3) AS has_change,
       (SELECT t.tgargs FROM pg_trigger t WHERE t.tgrelid = c.oid AND t.tgname = $4) AS reset_args,
       (SELECT t.tgargs FROM pg_trigger t
        WHERE t.tgrelid = c.oid AND t.tgname = $5) AS truncate_args
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = $1 AND c.relkind IN ('r', 'p')
"""
_COLUMNS = """
SELECT attrelid, attname, format_type(atttypid, atttypmod) AS type, attnotnull
FROM pg_attribute WHERE attrelid = ANY($1::oid[]) AND attnum > 0 AND NOT attisdropped
ORDER BY attrelid, attnum
"""
_CONSTRAINTS = """
SELECT con.conrelid, con.contype::text AS kind,
       array(SELECT a.attname::text FROM unnest(con.conkey) WITH ORDINALITY AS k(num, ord)
             JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.num
             ORDER BY k.ord) AS columns
FROM pg_constraint con WHERE con.conrelid = ANY($1::oid[]) AND con.contype IN ('p', 'u')
"""
# The columns role $2 may update (none when the role does not exist).
_UPDATABLE = """
SELECT a.attrelid, a.attname FROM pg_attribute a JOIN pg_roles r ON r.rolname = $2
WHERE a.attrelid = ANY($1::oid[]) AND a.attnum > 0 AND NOT a.attisdropped
  AND has_column_privilege(r.oid, a.attrelid, a.attname, 'UPDATE')
"""
_INDEXES = """
SELECT i.indrelid, ic.relname FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
WHERE i.indrelid = ANY($1::oid[])
"""


async def read_catalog(connection: asyncpg.Connection) -> Catalog:
    """Every table of `axon_stores` with its columns, keys, indexes, RLS state, triggers and the
    columns the navigator role may update."""
    tables = await connection.fetch(
        _TABLES, STORE_SCHEMA, REVISION_TRIGGER, CHANGE_TRIGGER, RESET_TRIGGER, TRUNCATE_TRIGGER
    )
    oids = [row["oid"] for row in tables]
    columns: dict[int, list[ExistingColumn]] = {oid: [] for oid in oids}
    for row in await connection.fetch(_COLUMNS, oids):
        columns[row["attrelid"]].append(
            ExistingColumn(row["attname"], row["type"], row["attnotnull"])
        )
    keys: dict[int, tuple[str, ...]] = {}
    unique: dict[int, set[tuple[str, ...]]] = {oid: set() for oid in oids}
    for row in await connection.fetch(_CONSTRAINTS, oids):
        if row["kind"] == "p":
            keys[row["conrelid"]] = tuple(row["columns"])
        else:
            unique[row["conrelid"]].add(tuple(row["columns"]))
    indexes: dict[int, set[str]] = {oid: set() for oid in oids}
    for row in await connection.fetch(_INDEXES, oids):
        indexes[row["indrelid"]].add(row["relname"])
    updatable: dict[int, set[str]] = {oid: set() for oid in oids}
    for row in await connection.fetch(_UPDATABLE, oids, NAVIGATOR_ROLE):
        updatable[row["attrelid"]].add(row["attname"])
    stores = {}
    for row in tables:
        oid = row["oid"]
        args = row["trigger_args"]
        stores[row["relname"]] = ExistingStore(
            name=row["relname"],
            columns=tuple(columns[oid]),
            primary_key=keys.get(oid, ()),
            unique=frozenset(unique[oid]),
            indexes=frozenset(indexes[oid]),
            rls_enabled=row["relrowsecurity"],
            rls_forced=row["relforcerowsecurity"],
            has_policy=row["has_policy"],
            revision_corpora=_arguments(args),
            has_change_trigger=row["has_change"],
            reset_corpora=_arguments(row["reset_args"]),
            truncate_corpora=_arguments(row["truncate_args"]),
            navigator_updates=frozenset(updatable[oid]),
        )
    return Catalog(stores)


def _arguments(args: bytes | None) -> tuple[str, ...] | None:
    """A trigger's arguments (tgargs holds each followed by a NUL byte); None without a trigger."""
    return None if args is None else tuple(bytes(args).decode("utf-8").split("\x00")[:-1])
