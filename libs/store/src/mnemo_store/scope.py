"""The sub-tenant scope of a request (`where:` plus its parameters), rendered for one query.

The same scope restricts the documents read, the edges read and the reinforcement written
(ARCHITECTURE.md §2): every query of this package that touches a corpus's stores renders it here,
against both stores, so a filter that does not fit both is refused before any SQL runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from mnemo_axon.where import UNSCOPED_DIGEST, TableColumns, compile_where

from mnemo_store.store_corpus import StoreCorpus


@dataclass(frozen=True, slots=True)
class Scope:
    """A `where:` filter and the request parameters its `${name}` references read.

    `Scope()` is the whole tenant (row-level security alone): right for a store with one end-client
    per tenant, a cross-client leak for a store that multiplexes end-clients in a column.
    """

    where: str | None = None
    params: Mapping[str, object] = field(default_factory=dict)

    @property
    def is_whole_tenant(self) -> bool:
        return self.where is None or not self.where.strip()


@dataclass(frozen=True, slots=True)
class RenderedScope:
    """A scope as SQL: `sql` is a boolean expression with `$N` placeholders, `params` their values."""

    sql: str
    params: tuple[object, ...]
    digest: str


def render_scope(
    scope: Scope, corpus: StoreCorpus, first_param_index: int = 1, qualifier: str | None = None
) -> RenderedScope:
    """`scope` for a query over `corpus`'s stores; `TRUE` for the whole tenant."""
    if scope.is_whole_tenant or scope.where is None:
        return RenderedScope("TRUE", (), UNSCOPED_DIGEST)
    compiled = compile_where(
        scope.where,
        scope.params,
        [TableColumns.from_store(corpus.documents), TableColumns.from_store(corpus.relations)],
        first_param_index,
        qualifier=qualifier,
    )
    return RenderedScope(compiled.sql, compiled.params, compiled.scope_digest)
