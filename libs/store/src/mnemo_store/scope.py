"""The sub-tenant scope of a request (`where:` plus its parameters), rendered for one query.

The same scope restricts the documents read, the edges read and the reinforcement written
(ARCHITECTURE.md §2): every query of this package that touches a corpus's stores renders it here,
so a filter that fits neither store is refused before any SQL runs.

A filter whose columns both stores have applies to each store's own rows. A filter naming a column
only the documents store has (`title == 'x'`) scopes the documents, and an edge is then in scope
when both its endpoints are documents in scope (`RenderedScope.edges_sql`). A column the documents
store lacks is refused, naming it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field

from mnemo_axon.errors import UnknownColumnError
from mnemo_axon.where import UNSCOPED_DIGEST, TableColumns, compile_where

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


def render_scope(
    scope: Scope, corpus: StoreCorpus, first_param_index: int = 1, qualifier: str | None = None
) -> RenderedScope:
    """`scope` for a query over `corpus`'s stores; `TRUE` for the whole tenant.

    A pinned scope and a request filter are compiled separately (each binds only its own
    parameters) and joined as `(pinned) AND (request)`; the digest then covers both.
    """
    parts: list[tuple[str, str, tuple[object, ...], str]] = []
    index = first_param_index
    for text, values in ((scope.pinned, scope.pinned_params), (scope.where, scope.params)):
        if text is None or _blank(text):
            continue
        sql, edges_sql, params, digest, index = _render_part(text, values, corpus, index, qualifier)
        parts.append((sql, edges_sql, params, digest))
    if not parts:
        return RenderedScope("TRUE", (), UNSCOPED_DIGEST)
    if len(parts) == 1:
        sql, edges_sql, params, digest = parts[0]
        return RenderedScope(sql, params, digest, None if edges_sql == sql else edges_sql)
    (pinned_sql, pinned_edges, pinned_params, pinned_digest), (sql, edges_sql, params, digest) = (
        parts
    )
    combined = hashlib.sha256(f"pinned:{pinned_digest}\nwhere:{digest}".encode()).hexdigest()
    documents = f"({pinned_sql}) AND ({sql})"
    edges = f"({pinned_edges}) AND ({edges_sql})"
    return RenderedScope(
        documents, pinned_params + params, combined, None if edges == documents else edges
    )


def _render_part(
    text: str,
    values: Mapping[str, object],
    corpus: StoreCorpus,
    index: int,
    qualifier: str | None,
) -> tuple[str, str, tuple[object, ...], str, int]:
    """One filter as (documents SQL, relations SQL, params, digest, next parameter index)."""
    documents = TableColumns.from_store(corpus.documents)
    relations = TableColumns.from_store(corpus.relations)
    try:
        both = compile_where(text, values, [documents, relations], index, qualifier=qualifier)
    except UnknownColumnError:
        pass  # a column the relations store lacks: scope the documents, edges by their ends
    else:
        return both.sql, both.sql, both.params, both.scope_digest, both.next_param_index
    own = compile_where(text, values, [documents], index, qualifier=qualifier)
    inner = compile_where(text, values, [documents], index, qualifier="axon_scoped")
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
    edges = f"({ends[0]} AND {ends[1]})"
    return own.sql, edges, own.params, own.scope_digest, own.next_param_index
