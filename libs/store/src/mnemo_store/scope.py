"""The sub-tenant scope of a request (`where:` plus its parameters), rendered for one query.

The same scope restricts the documents read, the edges read and the reinforcement written
(ARCHITECTURE.md §2): every query of this package that touches a corpus's stores renders it here,
so a filter that fits neither store is refused before any SQL runs.

A filter whose columns both stores have applies to each store's own rows. A filter naming a column
only the documents store has (`title == 'x'`) scopes the documents, and an edge is then in scope
when both its endpoints are documents in scope (`RenderedScope.edges_sql`). A column the documents
store lacks is refused, naming it.

Each filter is parsed and bound once per query (`compile_scope`) and rendered with named binds
(`$(pinned_0)`, `$(where_0)`, …): the documents condition and the relations condition, which
repeats it inside a subquery, share their values. The binds are numbered in one place,
`render_scope` (`mnemo_axon.where.number_binds`), after the binds the statement has before them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field

from mnemo_axon.errors import UnknownColumnError
from mnemo_axon.where import (
    UNSCOPED_DIGEST,
    CompiledWhere,
    TableColumns,
    bind_filter,
    number_binds,
    parse_filter,
    render_filter,
)

from mnemo_store.identifiers import quote, store_table
from mnemo_store.store_corpus import StoreCorpus


@dataclass(frozen=True, slots=True)
class Scope:
    """A `where:` filter and the request parameters its `${name}` references read.

    `Scope()` is the whole tenant (row-level security alone): right for a store with one end-client
    per tenant, a cross-client leak for a store that multiplexes end-clients in a column.
    """

    where: str | None = None
    params: Mapping[str, object] = field(default_factory=dict)
    pinned: str | None = None
    """A scope the server pins (ARCHITECTURE §2): rendered on its own, bound only from
    `pinned_params` (never from the request's `params`), and ANDed to `where` as a whole, so the
    request's filter can only narrow it."""
    pinned_params: Mapping[str, object] = field(default_factory=dict)


def _blank(text: str | None) -> bool:
    return text is None or not text.strip()


@dataclass(frozen=True, slots=True)
class CompiledScope:
    """A scope compiled once: conditions with named binds (`$(pinned_0)`, `$(where_0)`, …, see
    `mnemo_axon.where.placeholders`) on a row of the documents store and on a row of the
    relations store, the values of the binds, and the scope's digest."""

    sql: str
    relations_sql: str
    binds: Mapping[str, object]
    digest: str


@dataclass(frozen=True, slots=True)
class RenderedScope:
    """A scope as SQL: `sql` is a boolean expression with `$N` placeholders, `params` their values."""

    sql: str
    params: tuple[object, ...]
    digest: str
    relations_sql: str | None = None
    """The expression for the relations store's rows when it differs from `sql` (a filter on
    documents-only columns: both endpoints among the documents in scope)."""

    @property
    def edges_sql(self) -> str:
        """The scope as a condition on an (unqualified) row of the relations store."""
        return self.sql if self.relations_sql is None else self.relations_sql


_WHOLE_TENANT = CompiledScope("TRUE", "TRUE", {}, UNSCOPED_DIGEST)


def compile_scope(scope: Scope, corpus: StoreCorpus, qualifier: str | None = None) -> CompiledScope:
    """`scope` for a query over `corpus`'s stores, each filter parsed and bound once; `TRUE` for
    the whole tenant.

    A pinned scope and a request filter are compiled separately (each binds only its own
    parameters, under its own bind names) and joined as `(pinned) AND (request)`; the digest then
    covers both.
    """
    parts = [
        _compile_part(names, text, values, corpus, qualifier)
        for names, text, values in (
            ("pinned_", scope.pinned, scope.pinned_params),
            ("where_", scope.where, scope.params),
        )
        if text is not None and not _blank(text)
    ]
    if not parts:
        return _WHOLE_TENANT
    if len(parts) == 1:
        return parts[0]
    pinned, where = parts
    return CompiledScope(
        f"({pinned.sql}) AND ({where.sql})",
        f"({pinned.relations_sql}) AND ({where.relations_sql})",
        {**pinned.binds, **where.binds},
        hashlib.sha256(f"pinned:{pinned.digest}\nwhere:{where.digest}".encode()).hexdigest(),
    )


def render_scope(
    scope: Scope, corpus: StoreCorpus, first_param_index: int = 1, qualifier: str | None = None
) -> RenderedScope:
    """`compile_scope`, its binds numbered in one place (`number_binds`) after the
    `first_param_index - 1` binds the statement places before them."""
    compiled = compile_scope(scope, corpus, qualifier)
    numbered = number_binds(
        (compiled.sql, compiled.relations_sql), compiled.binds, first_param_index
    )
    sql, edges = numbered.texts
    return RenderedScope(sql, numbered.params, compiled.digest, None if edges == sql else edges)


def _compile_part(
    names: str,
    text: str,
    values: Mapping[str, object],
    corpus: StoreCorpus,
    qualifier: str | None,
) -> CompiledScope:
    """One filter, parsed and bound once, rendered for the rows of both stores when they both
    have its columns, else for the documents and, for an edge, its two ends among them."""
    bound = bind_filter(parse_filter(text), values, text)
    documents = TableColumns.from_store(corpus.documents)
    relations = TableColumns.from_store(corpus.relations)

    def render(tables: list[TableColumns], on: str | None) -> CompiledWhere:
        return render_filter(bound, tables, qualifier=on, source=text, named=names)

    try:
        both = render([documents, relations], qualifier)
    except UnknownColumnError:
        pass  # a column the relations store lacks: scope the documents, edges by their ends
    else:
        return CompiledScope(both.sql, both.sql, _binds(both), both.scope_digest)
    own = render([documents], qualifier)
    inner = render([documents], "axon_scoped")  # the same binds: numbered once, used twice
    members = (
        f"SELECT axon_scoped.{quote(corpus.id_column)}::text"
        f" FROM {store_table(corpus.documents.name)} AS axon_scoped WHERE {inner.sql}"
    )
    ends = [
        f"{quote(column)}::text IN ({members})"
        if qualifier is None
        else f'"{qualifier}".{quote(column)}::text IN ({members})'
        for column in (corpus.from_column, corpus.to_column)
    ]
    return CompiledScope(own.sql, f"({ends[0]} AND {ends[1]})", _binds(own), own.scope_digest)


def _binds(compiled: CompiledWhere) -> dict[str, object]:
    return dict(zip(compiled.bind_names, compiled.params, strict=True))
