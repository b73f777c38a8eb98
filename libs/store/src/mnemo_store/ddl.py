"""Store DDL from the IR: declarations and the current catalogue in, an SQL plan out (pure).

Each `axonstore` is one table `axon_stores."<Name>"` with a hidden `axon_tenant uuid NOT NULL`
leading its primary key, unique constraints and indexes; row-level security enabled and forced
(`mnemo.enable_tenant_rls`); SELECT, INSERT and UPDATE for the legacy application role (no DELETE:
only ingest deletes store rows, when it forgets a document; the service roles' table grants are
the owner's default privileges, migrations 0004 and 0013). A store read by a store corpus also gets the indexes that corpus
needs (document id; full text; edge endpoints) and a statement trigger that bumps the graph
revision of every corpus reading it. A relations store lets the navigator role update its weight
column and no other (reinforcement is all the navigator writes; migration 0010).

Full text is a hidden stored column, `axon_fulltext_<digest>` (`fulltext_column`: one per title and
body mapping of the corpora reading the store as documents), generated as the tsvector of title and
body, with a GIN index leading with the tenant. Under row-level security a match (`@@`) is not
leakproof, so Postgres evaluates it only after the tenant's policy, row by row, rather than as an
index condition: the stored column makes that per-row test cheap (no `to_tsvector` per row, about
7x faster at 100k documents per tenant). Where the superuser has marked `ts_match_vq` leakproof
(an operator's choice, see the navigator's README), the same queries become GIN index lookups.

The title lookup of the edge classifier reads two more hidden stored columns per title column,
its title key and alias key (`mnemo_store.title_keys`), each in a b-tree index after the tenant:
text equality is leakproof, so under row-level security these are index lookups.

Every store also has a hidden change marker, `axon_changed xid8`: the id of the transaction that
last inserted or updated the row (a default, and a row trigger for updates), indexed after the
tenant. A graph cache reads only the rows whose marker its snapshot could not see
(`mnemo_store.refresh`). What a marker cannot show (a deleted row, a row whose identity changed)
is recorded as a reset on the corpus's revision row by a second trigger, and forces a full reload.
That trigger reads the deleted rows, so every tenant a row was deleted for is reset (and bumped, when
it is not the tenant set: a role bypassing row-level security). TRUNCATE, which row-level security
does not filter, moves and resets the revision of every tenant before the table is emptied (a third
trigger, run as the owner; migration 0013).

Planning compares with what exists: additions (tables, columns, indexes, policies, triggers) are
planned; anything else (dropping or retyping a column, changing nullability, keys or uniqueness) is
refused with the statements it would take. A second apply of the same declarations plans nothing.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from mnemo_axon.ir import (
    ColumnDecl,
    CorpusKind,
    DefaultKind,
    Deployment,
    DocumentsStoreMapping,
    StoreDecl,
)
from mnemo_axon.rules import deployment_problems

from mnemo_store.errors import DeclarationRuleError
from mnemo_store.identifiers import (
    ROW_ID_COLUMN,
    STORE_SCHEMA,
    TENANT_COLUMN,
    object_name,
    quote,
    store_table,
)
from mnemo_store.title_keys import (
    ALIAS_KEY_PREFIX,
    TITLE_KEY_PREFIX,
    alias_key_column,
    key_columns_sql,
    title_key_column,
)

APP_ROLE: Final = "mnemo_app"
NAVIGATOR_ROLE: Final = "mnemo_navigator"
REVISION_TRIGGER: Final = "axon_graph_revision"
CHANGE_COLUMN: Final = "axon_changed"
CHANGE_TRIGGER: Final = "axon_row_change"
RESET_TRIGGER: Final = "axon_graph_reset"
TRUNCATE_TRIGGER: Final = "axon_graph_truncate"
IDENTITY_TRIGGER: Final = "axon_identity_reset"
FULLTEXT_CONFIG: Final = "simple"
FULLTEXT_PREFIX: Final = "axon_fulltext_"
# A number literal as the .axon lexer reads one (`1`, `-2.5`, `.5`, `1e-3`), all valid SQL too.
_NUMBER = re.compile(r"-?(?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
# format_type() spells some types differently from the names DDL is written with.
_CATALOG_TYPE_NAMES: Final = {"timestamptz": "timestamp with time zone"}


@dataclass(frozen=True, slots=True)
class ExistingColumn:
    name: str
    type: str  # as format_type() prints it
    not_null: bool


@dataclass(frozen=True, slots=True)
class ExistingStore:
    """What the catalogue says about one table of `axon_stores`."""

    name: str
    columns: tuple[ExistingColumn, ...]
    primary_key: tuple[str, ...]
    unique: frozenset[tuple[str, ...]] = frozenset()
    indexes: frozenset[str] = frozenset()
    rls_enabled: bool = True
    rls_forced: bool = True
    has_policy: bool = True
    revision_corpora: tuple[str, ...] | None = None  # trigger arguments; None: no trigger
    has_change_trigger: bool = True
    reset_corpora: tuple[str, ...] | None = None  # the reset trigger's arguments; None: none
    truncate_corpora: tuple[str, ...] | None = None  # the truncate trigger's; None: none
    navigator_updates: frozenset[str] = frozenset()  # columns the navigator role may update

    def column(self, name: str) -> ExistingColumn | None:
        return next((column for column in self.columns if column.name == name), None)


@dataclass(frozen=True, slots=True)
class Catalog:
    stores: Mapping[str, ExistingStore] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PlanStep:
    """One statement of a plan and what it is for."""

    description: str
    sql: str


@dataclass(frozen=True, slots=True)
class StorePlan:
    """Additive steps to run, and the destructive statements a change would need (refused)."""

    steps: tuple[PlanStep, ...]
    refused: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class _Index:
    name: str
    sql: str
    description: str


def corpora_by_store(
    deployment: Deployment, registered: Mapping[str, tuple[str, ...]] | None = None
) -> dict[str, tuple[str, ...]]:
    """Store name → sorted ids of the store corpora reading it: the deployment's and `registered`
    (store → corpora already in the registry, which keep bumping their revisions)."""
    readers: dict[str, set[str]] = {name: set(ids) for name, ids in (registered or {}).items()}
    for corpus in deployment.corpora:
        if corpus.kind is not CorpusKind.STORE_GRAPH:
            continue
        for mapping in (corpus.documents_store, corpus.relations_store):
            if mapping is not None:
                readers.setdefault(mapping.store, set()).add(corpus.name)
    return {name: tuple(sorted(ids)) for name, ids in readers.items()}


def plan_stores(
    deployment: Deployment,
    catalog: Catalog,
    readers: Mapping[str, tuple[str, ...]] | None = None,
) -> StorePlan:
    """The plan that makes the catalogue hold every store of `deployment` (see module doc)."""
    problems = deployment_problems(deployment)
    if problems:
        raise DeclarationRuleError(problems)
    readers = corpora_by_store(deployment) if readers is None else readers
    steps: list[PlanStep] = []
    refused: list[str] = []
    for store in deployment.stores:
        indexes = _indexes(deployment, store)
        existing = catalog.stores.get(store.name)
        corpora = readers.get(store.name, ())
        identity = identity_columns(deployment, store)
        fulltext = _fulltext_mappings(deployment, store)
        titles = _title_columns(deployment, store)
        weights = weight_columns(deployment, store)
        if existing is None:
            steps += _create(store, indexes, corpora, identity, fulltext, titles)
            steps += _weight_grant_steps(store, weights)
            continue
        steps += _extend(store, existing, indexes, corpora, refused, identity, fulltext, titles)
        new_weights = [name for name in weights if name not in existing.navigator_updates]
        steps += _weight_grant_steps(store, new_weights)
    return StorePlan(tuple(steps), tuple(refused))


def weight_columns(deployment: Deployment, store: StoreDecl) -> list[str]:
    """The weight columns of the store corpora reading `store` as their relations, sorted, each
    once: the only columns reinforcement (the navigator) updates."""
    found = {
        corpus.relations_store.weight_column
        for corpus in deployment.corpora
        if corpus.kind is CorpusKind.STORE_GRAPH
        and corpus.relations_store is not None
        and corpus.relations_store.store == store.name
    }
    return sorted(found)


def _weight_grant_steps(store: StoreDecl, weights: Sequence[str]) -> list[PlanStep]:
    if not weights:
        return []
    return [
        PlanStep(
            f"let the navigator update the edge weights of {store.name} ({', '.join(weights)})"
            " and no other column",
            f"GRANT UPDATE ({', '.join(quote(name) for name in weights)}) ON {store_table(store.name)} TO {NAVIGATOR_ROLE}",
        )
    ]


def fulltext_expression(title_column: str, body_column: str | None, alias: str = "") -> str:
    """The tsvector expression the documents full-text index is built on (queries must match it)."""
    prefix = f"{alias}." if alias else ""
    text = f"coalesce({prefix}{quote(title_column)}::text, '')"
    if body_column is not None:
        text += f" || ' ' || coalesce({prefix}{quote(body_column)}::text, '')"
    return f"to_tsvector('{FULLTEXT_CONFIG}'::regconfig, {text})"


def fulltext_column(title_column: str, body_column: str | None) -> str:
    """The hidden stored tsvector column of a documents store for one (title, body) mapping:
    `axon_fulltext_` and the first 10 hex digits of SHA-256 over `title\\nbody` (migration 0009
    computes the same name in SQL)."""
    mapping = f"{title_column}\n{body_column or ''}"
    return FULLTEXT_PREFIX + hashlib.sha256(mapping.encode("utf-8")).hexdigest()[:10]


def fulltext_column_sql(title_column: str, body_column: str | None) -> str:
    """The column's definition: generated from title and body, stored."""
    name = fulltext_column(title_column, body_column)
    expression = fulltext_expression(title_column, body_column)
    return f"{quote(name)} tsvector GENERATED ALWAYS AS ({expression}) STORED"


def _fulltext_mappings(deployment: Deployment, store: StoreDecl) -> list[tuple[str, str | None]]:
    """The (title, body) mappings of the store corpora reading `store` as documents, each once."""
    found: dict[str, tuple[str, str | None]] = {}
    for documents in _documents_mappings(deployment, store):
        mapping = (documents.title_column, documents.body_column)
        found[fulltext_column(*mapping)] = mapping
    return [found[name] for name in sorted(found)]


def _title_columns(deployment: Deployment, store: StoreDecl) -> list[str]:
    """The title columns of the store corpora reading `store` as documents, sorted, each once."""
    return sorted({documents.title_column for documents in _documents_mappings(deployment, store)})


def _documents_mappings(
    deployment: Deployment, store: StoreDecl
) -> Iterator[DocumentsStoreMapping]:
    """How each store corpus reading `store` as its documents maps the store's columns."""
    for corpus in deployment.corpora:
        documents = corpus.documents_store
        if (
            corpus.kind is CorpusKind.STORE_GRAPH
            and documents is not None
            and documents.store == store.name
        ):
            yield documents


# --------------------------------------------------------------------------------- new tables


def identity_columns(deployment: Deployment, store: StoreDecl) -> tuple[str, ...]:
    """The columns that identify a row of `store` to a cached graph: its primary key (or the hidden
    row id), and the document id column of every store corpus reading it as its documents."""
    key = [column.name for column in store.columns if column.primary_key] or [ROW_ID_COLUMN]
    for documents in _documents_mappings(deployment, store):
        if documents.id_column not in key:
            key.append(documents.id_column)
    return tuple(key)


def _create(
    store: StoreDecl,
    indexes: Sequence[_Index],
    corpora: tuple[str, ...],
    identity: tuple[str, ...] = (),
    fulltext: Sequence[tuple[str, str | None]] = (),
    titles: Sequence[str] = (),
) -> list[PlanStep]:
    table = store_table(store.name)
    lines = [f"{quote(TENANT_COLUMN)} uuid NOT NULL"]
    key = [column.name for column in store.columns if column.primary_key]
    if not key:
        lines.append(f"{quote(ROW_ID_COLUMN)} bigint GENERATED ALWAYS AS IDENTITY")
        key = [ROW_ID_COLUMN]
    lines += [_column_sql(column) for column in store.columns]
    lines += [fulltext_column_sql(*mapping) for mapping in fulltext]
    lines += [column for title in titles for column in key_columns_sql(title)]
    lines.append(_CHANGE_COLUMN_SQL)
    lines.append(f"PRIMARY KEY ({_key_list(key)})")
    for column in store.columns:
        if column.unique and not column.primary_key:
            name = quote(object_name(store.name, f"{column.name}_key"))
            lines.append(f"CONSTRAINT {name} UNIQUE ({_key_list([column.name])})")
    body = ",\n    ".join(lines)
    steps = [
        PlanStep(f"create store {store.name}", f"CREATE TABLE {table} (\n    {body}\n)"),
        _rls_step(store),
        PlanStep(
            f"let the application role read, insert and update {store.name}",
            f"GRANT SELECT, INSERT, UPDATE ON {table} TO {APP_ROLE}",
        ),
    ]
    steps += [PlanStep(index.description, index.sql) for index in indexes]
    steps.append(_change_trigger_step(store))
    if corpora:
        steps.append(_trigger_step(store, corpora))
        steps += _reset_trigger_steps(store, corpora, identity or (ROW_ID_COLUMN,))
    return steps


_CHANGE_COLUMN_SQL: Final = f"{quote(CHANGE_COLUMN)} xid8 NOT NULL DEFAULT pg_current_xact_id()"


def _change_trigger_step(store: StoreDecl) -> PlanStep:
    return PlanStep(
        f"mark every inserted or updated row of {store.name} with its transaction",
        f"CREATE OR REPLACE TRIGGER {CHANGE_TRIGGER} BEFORE INSERT OR UPDATE"
        f" ON {store_table(store.name)} FOR EACH ROW"
        f" WHEN (NEW.{quote(CHANGE_COLUMN)} IS DISTINCT FROM pg_current_xact_id())"
        " EXECUTE FUNCTION mnemo.mark_row_change()",
    )


def _reset_trigger_steps(
    store: StoreDecl, corpora: tuple[str, ...], identity: tuple[str, ...]
) -> list[PlanStep]:
    arguments = ", ".join("'" + corpus.replace("'", "''") + "'" for corpus in corpora)
    old = ", ".join(f"OLD.{quote(name)}" for name in identity)
    new = ", ".join(f"NEW.{quote(name)}" for name in identity)
    table = store_table(store.name)
    function = f"mnemo.reset_graph_revision({arguments})"
    return [
        PlanStep(
            f"drop the reset trigger of {store.name}, if any, to create it over the deleted rows",
            f"DROP TRIGGER IF EXISTS {RESET_TRIGGER} ON {table}",
        ),
        PlanStep(
            f"reset the cached graphs of {', '.join(corpora)} for every tenant whose rows of "
            f"{store.name} are deleted",
            f"CREATE TRIGGER {RESET_TRIGGER} AFTER DELETE ON {table}"
            " REFERENCING OLD TABLE AS axon_gone FOR EACH STATEMENT"
            f" EXECUTE FUNCTION mnemo.reset_deleted_graph_revision({arguments})",
        ),
        PlanStep(
            f"move and reset the graph revisions of {', '.join(corpora)} for every tenant before "
            f"{store.name} is truncated",
            f"CREATE OR REPLACE TRIGGER {TRUNCATE_TRIGGER} BEFORE TRUNCATE ON {table}"
            f" FOR EACH STATEMENT EXECUTE FUNCTION mnemo.truncate_graph_revision({arguments})",
        ),
        PlanStep(
            f"reset the cached graphs of {', '.join(corpora)} when a row of {store.name} changes "
            f"identity ({', '.join(identity)})",
            f"CREATE OR REPLACE TRIGGER {IDENTITY_TRIGGER} AFTER UPDATE ON {table} FOR EACH ROW"
            f" WHEN (ROW({old}) IS DISTINCT FROM ROW({new})) EXECUTE FUNCTION {function}",
        ),
    ]


def _column_sql(column: ColumnDecl) -> str:
    sql = f"{quote(column.name)} {column.type.postgres}"
    if column.not_null or column.primary_key:
        sql += " NOT NULL"
    if column.default is not None:
        sql += f" DEFAULT {_default_sql(column)}"
    return sql


def _default_sql(column: ColumnDecl) -> str:
    default = column.default
    assert default is not None  # callers check; keeps mypy's narrowing local
    literal = default.literal or ""
    if default.kind is DefaultKind.NOW:
        return "now()"
    if default.kind is DefaultKind.NULL:
        return "NULL"
    if default.kind is DefaultKind.BOOLEAN:
        return "true" if literal == "true" else "false"
    if default.kind is DefaultKind.NUMBER:
        if _NUMBER.fullmatch(literal) is None:
            raise ValueError(f"column {column.name!r}: default {literal!r} is not a number")
        return f"{literal}::{column.type.postgres}"
    escaped = literal.replace("'", "''")
    return f"'{escaped}'::{column.type.postgres}"


def _key_list(columns: Sequence[str]) -> str:
    return ", ".join(quote(name) for name in (TENANT_COLUMN, *columns))


def _rls_step(store: StoreDecl) -> PlanStep:
    regclass = f"{STORE_SCHEMA}.{quote(store.name)}".replace("'", "''")
    return PlanStep(
        f"enable and force tenant row-level security on {store.name}",
        f"SELECT mnemo.enable_tenant_rls('{regclass}'::regclass)",
    )


def _trigger_step(store: StoreDecl, corpora: tuple[str, ...]) -> PlanStep:
    arguments = ", ".join("'" + corpus.replace("'", "''") + "'" for corpus in corpora)
    return PlanStep(
        f"bump the graph revision of {', '.join(corpora)} on every write to {store.name}",
        f"CREATE OR REPLACE TRIGGER {REVISION_TRIGGER} BEFORE INSERT OR UPDATE OR DELETE"
        f" ON {store_table(store.name)} FOR EACH STATEMENT"
        f" EXECUTE FUNCTION mnemo.bump_graph_revision({arguments})",
    )


def _fixed_index_names(store: str) -> set[str]:
    """The names of the indexes every store, or every relations store, gets whatever its columns."""
    return {
        object_name(store, suffix) for suffix in ("changed_idx", "edge_from_idx", "edge_to_idx")
    }


def _indexes(deployment: Deployment, store: StoreDecl) -> list[_Index]:
    """The indexes the store corpora reading `store` need, each once, in a stable order."""
    table = store_table(store.name)
    found: dict[str, _Index] = {}
    key = tuple(column.name for column in store.columns if column.primary_key)
    for corpus in deployment.corpora:
        documents, relations = corpus.documents_store, corpus.relations_store
        if corpus.kind is not CorpusKind.STORE_GRAPH:
            continue
        if documents is not None and documents.store == store.name:
            if key[:1] != (documents.id_column,):
                name = object_name(store.name, f"{documents.id_column}_idx")
                if name in _fixed_index_names(store.name):  # an id column named `changed`, say
                    name = object_name(store.name, f"{documents.id_column}_id_idx")
                found[name] = _Index(
                    name,
                    f"CREATE INDEX {quote(name)} ON {table} ({_key_list([documents.id_column])})",
                    f"index {store.name} by document id",
                )
            column = fulltext_column(documents.title_column, documents.body_column)
            name = object_name(store.name, column)
            found[name] = _Index(
                name,
                f"CREATE INDEX {quote(name)} ON {table}"
                f" USING gin ({quote(TENANT_COLUMN)}, {quote(column)})",
                f"full-text index of {store.name} ({documents.title_column}"
                + (f", {documents.body_column})" if documents.body_column else ")"),
            )
            for column, kind in (
                (title_key_column(documents.title_column), "title"),
                (alias_key_column(documents.title_column), "alias"),
            ):
                name = object_name(store.name, column)
                found[name] = _Index(
                    name,
                    f"CREATE INDEX {quote(name)} ON {table}"
                    f" ({quote(TENANT_COLUMN)}, {quote(column)})",
                    f"{kind}-key index of {store.name} ({documents.title_column})",
                )
        if relations is not None and relations.store == store.name:
            name = object_name(store.name, "edge_from_idx")
            columns = [relations.from_column, relations.to_column, relations.etype_column]
            found[name] = _Index(
                name,
                f"CREATE INDEX {quote(name)} ON {table} ({_key_list(columns)})",
                f"index {store.name} by edge source (and target, type: the reinforcement key)",
            )
            name = object_name(store.name, "edge_to_idx")
            found[name] = _Index(
                name,
                f"CREATE INDEX {quote(name)} ON {table} ({_key_list([relations.to_column])})",
                f"index {store.name} by edge target",
            )
    name = object_name(store.name, "changed_idx")
    found[name] = _Index(
        name,
        f"CREATE INDEX {quote(name)} ON {table} ({quote(TENANT_COLUMN)}, {quote(CHANGE_COLUMN)})",
        f"index {store.name} by change marker (incremental graph refresh)",
    )
    return list(found.values())


# ---------------------------------------------------------------------------- existing tables


def _extend(
    store: StoreDecl,
    existing: ExistingStore,
    indexes: Sequence[_Index],
    corpora: tuple[str, ...],
    refused: list[str],
    identity: tuple[str, ...] = (),
    fulltext: Sequence[tuple[str, str | None]] = (),
    titles: Sequence[str] = (),
) -> list[PlanStep]:
    """The additive steps that bring `existing` up to `store`; what only a destructive change could
    do is appended to `refused` as the statement an operator would run. A missing full-text or
    title-key column is added (Postgres rewrites the table to fill it, under the apply's lock
    timeout)."""
    table = store_table(store.name)
    for difference in _TABLE_DIFFERENCES:
        refused += difference(table, store, existing)
    key = identity or (ROW_ID_COLUMN,)
    steps = [
        PlanStep(f"add column {column.name} to {store.name}", _add_column_sql(table, column))
        for column in store.columns
        if existing.column(column.name) is None and _new_column_refusal(column) is None
    ]
    steps += _missing(_BEFORE_INDEXES, store, existing, corpora, key)
    steps += [
        PlanStep(
            f"add the full-text column of {store.name} ({', '.join(filter(None, mapping))})",
            f"ALTER TABLE {table} ADD COLUMN {fulltext_column_sql(*mapping)}",
        )
        for mapping in fulltext
        if existing.column(fulltext_column(*mapping)) is None
    ]
    steps += [
        PlanStep(
            f"add the {kind}-key column of {store.name} ({title})",
            f"ALTER TABLE {table} ADD COLUMN {sql}",
        )
        for title in titles
        for kind, name, sql in zip(
            ("title", "alias"),
            (title_key_column(title), alias_key_column(title)),
            key_columns_sql(title),
            strict=True,
        )
        if existing.column(name) is None
    ]
    steps += [
        PlanStep(index.description, index.sql)
        for index in indexes
        if index.name not in existing.indexes
    ]
    steps += _missing(_AFTER_INDEXES, store, existing, corpora, key)
    return steps


def _missing(
    parts: tuple[MissingPart, ...],
    store: StoreDecl,
    existing: ExistingStore,
    corpora: tuple[str, ...],
    identity: tuple[str, ...],
) -> list[PlanStep]:
    return [
        step
        for missing, make in parts
        if missing(existing, corpora)
        for step in make(store, corpora, identity)
    ]


def _add_column_sql(table: str, column: ColumnDecl) -> str:
    return f"ALTER TABLE {table} ADD COLUMN {_column_sql(column)}"


def _new_column_refusal(column: ColumnDecl) -> str | None:
    """Why a new column cannot be added to a table that has rows, or None when it can."""
    if (column.not_null or column.primary_key) and column.default is None:
        return "NOT NULL without a default cannot be added to existing rows"
    if column.primary_key or column.unique:
        return "plus a new key"
    return None


# Each difference between a declared column and the one that exists: the statement it would need.
ColumnDifference = Callable[[str, ColumnDecl, ExistingColumn], str | None]


def _retyped(table: str, column: ColumnDecl, have: ExistingColumn) -> str | None:
    want = _CATALOG_TYPE_NAMES.get(column.type.postgres, column.type.postgres)
    if have.type == want:
        return None
    return (
        f"ALTER TABLE {table} ALTER COLUMN {quote(column.name)} TYPE {column.type.postgres};"
        f"  -- was {have.type}"
    )


def _nullability_changed(table: str, column: ColumnDecl, have: ExistingColumn) -> str | None:
    want_not_null = column.not_null or column.primary_key
    if have.not_null == want_not_null:
        return None
    change = "SET NOT NULL" if want_not_null else "DROP NOT NULL"
    return f"ALTER TABLE {table} ALTER COLUMN {quote(column.name)} {change};"


_COLUMN_DIFFERENCES: tuple[ColumnDifference, ...] = (_retyped, _nullability_changed)

# Each difference between a declared store and its table as a whole.
TableDifference = Callable[[str, StoreDecl, ExistingStore], list[str]]


def _key_changed(table: str, store: StoreDecl, existing: ExistingStore) -> list[str]:
    key = tuple(column.name for column in store.columns if column.primary_key) or (ROW_ID_COLUMN,)
    if existing.primary_key == (TENANT_COLUMN, *key):
        return []
    return [
        f"ALTER TABLE {table} DROP CONSTRAINT <primary key>, ADD PRIMARY KEY ({_key_list(key)});"
        f"  -- was ({', '.join(existing.primary_key)})"
    ]


def _unique_changed(table: str, store: StoreDecl, existing: ExistingStore) -> list[str]:
    unique = {
        (TENANT_COLUMN, column.name)
        for column in store.columns
        if column.unique and not column.primary_key
    }
    changes = [
        f"ALTER TABLE {table} ADD UNIQUE ({', '.join(map(quote, columns))});"
        for columns in sorted(unique - existing.unique)
    ]
    changes += [
        f"ALTER TABLE {table} DROP CONSTRAINT <unique ({', '.join(columns)})>;"
        for columns in sorted(existing.unique - unique)
    ]
    return changes


def _dropped_columns(table: str, store: StoreDecl, existing: ExistingStore) -> list[str]:
    declared = {column.name for column in store.columns}
    hidden = (TENANT_COLUMN, ROW_ID_COLUMN, CHANGE_COLUMN)
    return [
        f"ALTER TABLE {table} DROP COLUMN {quote(have.name)};"
        for have in existing.columns
        if have.name not in declared
        and have.name not in hidden
        and not have.name.startswith((FULLTEXT_PREFIX, TITLE_KEY_PREFIX, ALIAS_KEY_PREFIX))
    ]


def _changed_columns(table: str, store: StoreDecl, existing: ExistingStore) -> list[str]:
    """Per declared column, in order: a new one that cannot be added, or how an existing one
    differs (`_COLUMN_DIFFERENCES`)."""
    changes: list[str] = []
    for column in store.columns:
        have = existing.column(column.name)
        if have is None:
            why = _new_column_refusal(column)
            if why is not None:
                changes.append(f"{_add_column_sql(table, column)};  -- {why}")
            continue
        for difference in _COLUMN_DIFFERENCES:
            change = difference(table, column, have)
            if change is not None:
                changes.append(change)
    return changes


_TABLE_DIFFERENCES: tuple[TableDifference, ...] = (
    _dropped_columns,
    _changed_columns,
    _key_changed,
    _unique_changed,
)

# The parts Mnemo adds to every store table, each with how to tell it is missing and its steps, in
# the order they are planned: the change marker and row-level security, then (after the indexes)
# the triggers.
MissingPart = tuple[
    Callable[[ExistingStore, tuple[str, ...]], bool],
    Callable[[StoreDecl, tuple[str, ...], tuple[str, ...]], list[PlanStep]],
]
_BEFORE_INDEXES: tuple[MissingPart, ...] = (
    (
        lambda existing, _corpora: existing.column(CHANGE_COLUMN) is None,
        lambda store, _corpora, _identity: [
            PlanStep(
                f"add the change marker to {store.name}",
                f"ALTER TABLE {store_table(store.name)} ADD COLUMN {_CHANGE_COLUMN_SQL}",
            )
        ],
    ),
    (
        lambda existing, _corpora: (
            not (existing.rls_enabled and existing.rls_forced and existing.has_policy)
        ),
        lambda store, _corpora, _identity: [_rls_step(store)],
    ),
)
_AFTER_INDEXES: tuple[MissingPart, ...] = (
    (
        lambda existing, _corpora: not existing.has_change_trigger,
        lambda store, _corpora, _identity: [_change_trigger_step(store)],
    ),
    (
        lambda existing, corpora: bool(corpora) and existing.revision_corpora != corpora,
        lambda store, corpora, _identity: [_trigger_step(store, corpora)],
    ),
    (
        lambda existing, corpora: (
            bool(corpora)
            and (existing.reset_corpora != corpora or existing.truncate_corpora != corpora)
        ),
        _reset_trigger_steps,
    ),
)
