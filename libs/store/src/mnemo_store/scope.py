"""The sub-tenant scope of a request (`where:` plus its parameters), rendered for one query.

The same scope restricts the documents read, the edges read and the reinforcement written
(ARCHITECTURE.md §2): every query of this package that touches a corpus's stores renders it here,
against both stores, so a filter that does not fit both is refused before any SQL runs.
"""

from __future__ import annotations

import hashlib
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
    pinned: str | None = None
    """A scope the server pins (ARCHITECTURE §2): rendered on its own, bound only from
    `pinned_params` (never from the request's `params`), and ANDed to `where` as a whole, so the
    request's filter can only narrow it."""
    pinned_params: Mapping[str, object] = field(default_factory=dict)

    @property
    def is_whole_tenant(self) -> bool:
        return _blank(self.where) and _blank(self.pinned)


def _blank(text: str | None) -> bool:
    return text is None or not text.strip()


@dataclass(frozen=True, slots=True)
class RenderedScope:
    """A scope as SQL: `sql` is a boolean expression with `$N` placeholders, `params` their values."""

    sql: str
    params: tuple[object, ...]
    digest: str


def render_scope(
    scope: Scope, corpus: StoreCorpus, first_param_index: int = 1, qualifier: str | None = None
) -> RenderedScope:
    """`scope` for a query over `corpus`'s stores; `TRUE` for the whole tenant.

    A pinned scope and a request filter are compiled separately (each binds only its own
    parameters) and joined as `(pinned) AND (request)`; the digest then covers both.
    """
    tables = [TableColumns.from_store(corpus.documents), TableColumns.from_store(corpus.relations)]
    parts: list[tuple[str, tuple[object, ...], str]] = []
    index = first_param_index
    for text, values in ((scope.pinned, scope.pinned_params), (scope.where, scope.params)):
        if text is None or _blank(text):
            continue
        compiled = compile_where(text, values, tables, index, qualifier=qualifier)
        parts.append((compiled.sql, compiled.params, compiled.scope_digest))
        index = compiled.next_param_index
    if not parts:
        return RenderedScope("TRUE", (), UNSCOPED_DIGEST)
    if len(parts) == 1:
        return RenderedScope(*parts[0])
    (pinned_sql, pinned_params, pinned_digest), (sql, params, digest) = parts
    combined = hashlib.sha256(f"pinned:{pinned_digest}\nwhere:{digest}".encode()).hexdigest()
    return RenderedScope(f"({pinned_sql}) AND ({sql})", pinned_params + params, combined)
