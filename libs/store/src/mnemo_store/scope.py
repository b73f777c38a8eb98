"""The sub-tenant scope of a request (`where:` plus its parameters), rendered for one query.

The same scope restricts the documents read, the edges read and the reinforcement written
(ARCHITECTURE.md §2): every query of this package that touches a corpus's stores renders it here,
so a filter that fits neither store is refused before any SQL runs.

A filter whose columns both stores have applies to each store's own rows. A filter naming a column
only the documents store has (`title == 'x'`) scopes the documents, and an edge is then in scope
when both its endpoints are documents in scope (`CompiledScope.relations_sql`). A column the documents
store lacks is refused, naming it.

Each filter is parsed and bound once (`compile_scope`, which keeps the last few hundred compiled
scopes: a request's digest, graph load, refresh and reinforcement share one compilation) and
rendered with named binds (`$(pinned_0)`, `$(where_0)`, …): the documents condition and the
relations condition, which repeats it inside a subquery, share their values. A statement that
holds a scope is written with named binds too, and `positional` numbers the whole statement in one
place (`mnemo_axon.where.number_binds`): no statement counts another fragment's binds.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final, cast

from mnemo_axon.errors import RenderArgumentError, UnknownColumnError
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


_WHOLE_TENANT = CompiledScope("TRUE", "TRUE", MappingProxyType({}), UNSCOPED_DIGEST)


def compile_scope(scope: Scope, corpus: StoreCorpus, qualifier: str | None = None) -> CompiledScope:
    """`scope` for a query over `corpus`'s stores, each filter parsed and bound once; `TRUE` for
    the whole tenant.

    A pinned scope and a request filter are compiled separately (each binds only its own
    parameters, under its own bind names) and joined as `(pinned) AND (request)`; the digest then
    covers both. The result is a pure function of (scope, corpus, qualifier): the last
    `_CACHE_SIZE` are kept, keyed by the scope's text and every parameter value with its type
    (`_cache_key`) and by the corpus object (a caller keeps one per corpus version, as the
    navigator's registry cache does; the entry holds it, so its identity is never reused while the
    entry lives), so a scope is compiled once however many statements of a request hold it. A
    scope holding a value of another type is compiled afresh.
    """
    if _blank(scope.where) and _blank(scope.pinned):
        return _WHOLE_TENANT
    key = _cache_key(scope, corpus, qualifier)
    if key is not None:
        with _CACHE_LOCK:
            cached = _CACHE.get(key)
            if cached is not None and cached[0] is corpus:
                _CACHE.move_to_end(key)
                return cached[1]
    compiled = _compile(scope, corpus, qualifier)
    if key is not None:
        with _CACHE_LOCK:
            _CACHE[key] = (corpus, compiled)
            while len(_CACHE) > _CACHE_SIZE:
                _CACHE.popitem(last=False)
    return compiled


def positional(
    sql: str, scope: CompiledScope, /, **values: object
) -> tuple[str, tuple[object, ...]]:
    """A statement written with named binds, `$(name)` for its own `values` and the scope's
    conditions where it holds them, as asyncpg runs it: `$1…` for the statement's values in the
    order given, then the scope's binds in order of first appearance, and the values in that
    order. A name of the statement that is also one of the scope's, a bind without a value or a
    value without a bind is a RenderArgumentError (the caller's bug)."""
    shared = sorted(values.keys() & scope.binds.keys())
    if shared:
        raise RenderArgumentError(f"statement binds {shared} are also the scope's bind names")
    numbered = number_binds([sql], {**values, **scope.binds}, leading=tuple(values))
    return numbered.texts[0], numbered.params


def _compile(scope: Scope, corpus: StoreCorpus, qualifier: str | None) -> CompiledScope:
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
        MappingProxyType({**pinned.binds, **where.binds}),
        hashlib.sha256(f"pinned:{pinned.digest}\nwhere:{where.digest}".encode()).hexdigest(),
    )


_CACHE_SIZE: Final = 512
_CACHE: OrderedDict[Hashable, tuple[StoreCorpus, CompiledScope]] = OrderedDict()
_CACHE_LOCK: Final = threading.Lock()
# Parameter values are JSON (a request's or a token's): each scalar is keyed with its exact type, so
# 1, 1.0, True and "1" never share an entry, and a float by its exact bits (-0.0 is not 0.0).
# A value of any other type (whose equality may be looser than its text: Decimal, aware
# datetimes) makes the scope uncached.
_KEYED_TYPES: Final = (str, int, bool, type(None))


def _cache_key(scope: Scope, corpus: StoreCorpus, qualifier: str | None) -> Hashable | None:
    """The cache key of a compilation, or None when a parameter value cannot be keyed exactly."""
    try:
        params = (_value_key(scope.params), _value_key(scope.pinned_params))
    except _UnkeyedError:
        return None
    return (scope.where, scope.pinned, params, id(corpus), qualifier)


class _UnkeyedError(Exception):
    """A parameter value of a type the cache does not key (compiled afresh instead)."""


def _value_key(value: object) -> Hashable:
    kind = type(value)
    if kind in _KEYED_TYPES:
        return (kind, value)
    if kind is float:
        return (float, cast(float, value).hex())
    if kind is list or kind is tuple:
        return (kind, tuple(_value_key(item) for item in cast(Sequence[object], value)))
    if isinstance(value, Mapping):
        return (Mapping, tuple((_value_key(k), _value_key(v)) for k, v in value.items()))
    raise _UnkeyedError


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


def _binds(compiled: CompiledWhere) -> Mapping[str, object]:
    return MappingProxyType(dict(zip(compiled.bind_names, compiled.params, strict=True)))
