"""Reinforcement: one atomic statement per navigation moving every traversed edge's weight.

`weight = LEAST(GREATEST(weight + Δ, 0.001), 1.0)` evaluated by Postgres on the row it locks, so
concurrent navigations lose no update (a read-then-write kept 0.14 of an expected 0.80 here).
Duplicate keys are summed first (`UPDATE … FROM` applies one joined row per target row) and the
target rows are locked in key order first, so concurrent batches never deadlock. The update
is restricted by row-level security and by the same `where:` scope as the read: an edge with the
same endpoints and type under another sub-tenant is not touched.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from mnemo_store.identifiers import ROW_ID_COLUMN, quote, store_table
from mnemo_store.scope import CompiledScope
from mnemo_store.store_corpus import StoreCorpus

MIN_WEIGHT: Final = 0.001
MAX_WEIGHT: Final = 1.0


@dataclass(frozen=True, slots=True)
class EdgeDelta:
    """Move the edge `source -etype-> target` (document ids as text) by `delta`."""

    source: str
    target: str
    etype: str
    delta: float


@dataclass(frozen=True, slots=True)
class ReinforcementBatch:
    """The statement's bind arrays: keys sorted and unique, deltas summed."""

    sources: list[str]
    targets: list[str]
    etypes: list[str]
    deltas: list[float]

    def __len__(self) -> int:
        return len(self.sources)


def batch(deltas: Iterable[EdgeDelta]) -> ReinforcementBatch:
    """Sum duplicate keys and sort them; zero and non-finite deltas are dropped (nothing to write)."""
    summed: dict[tuple[str, str, str], float] = {}
    for item in deltas:
        if not math.isfinite(item.delta):
            raise ValueError(
                f"edge {item.source}->{item.target} ({item.etype}): delta {item.delta}"
            )
        key = (item.source, item.target, item.etype)
        summed[key] = summed.get(key, 0.0) + item.delta
    keys = sorted(key for key, value in summed.items() if value != 0.0)
    return ReinforcementBatch(
        sources=[key[0] for key in keys],
        targets=[key[1] for key in keys],
        etypes=[key[2] for key in keys],
        deltas=[summed[key] for key in keys],
    )


def reinforcement_sql(corpus: StoreCorpus, scope: CompiledScope) -> str:
    """The UPDATE (pure), in `scope` (unqualified), with the named binds `$(sources)`,
    `$(targets)`, `$(etypes)` and `$(deltas)` (a `ReinforcementBatch`; numbered by
    `mnemo_store.scope.positional`).

    Ids arrive as text (the engine's ids) and are cast to the id column's type, so the comparison
    uses the endpoint index. Lock order is made explicit: `UPDATE … FROM` locks rows in whatever
    order its join plan visits them, and under MVCC the physical order of a hot row changes with
    every update, so two batches could lock the same rows in opposite orders (measured here: 16
    overlapping writers deadlocked within seconds). The `axon_locked` CTE first locks every target
    row sorted by key (then primary key), and the UPDATE waits for it through a one-time filter.
    The delta and lock rows' columns carry the reserved `axon_` prefix, so the unqualified scope
    can only name the edge store's columns.
    """
    table = store_table(corpus.relations.name)
    ids = corpus.id_type.postgres
    source, target = quote(corpus.from_column), quote(corpus.to_column)
    etype, weight = quote(corpus.etype_column), quote(corpus.weight_column)
    key = [column.name for column in corpus.relations.columns if column.primary_key]
    tie_break = ", ".join(f"l.{quote(name)}" for name in (key or [ROW_ID_COLUMN]))

    def match(a: str) -> str:
        return (
            f"{a}.{source} = d.axon_from AND {a}.{target} = d.axon_to AND {a}.{etype} = d.axon_etype"
            f" AND {a}.{weight} IS NOT NULL AND {scope.relations_sql}"
        )

    return (
        "WITH d AS MATERIALIZED (SELECT axon_from, axon_to, axon_etype, sum(axon_delta) AS axon_delta"
        " FROM unnest($(sources)::text[]::{ids}[], $(targets)::text[]::{ids}[], $(etypes)::text[],"
        " $(deltas)::float8[])"
        " AS u(axon_from, axon_to, axon_etype, axon_delta)"
        " GROUP BY axon_from, axon_to, axon_etype),"
        " axon_locked AS MATERIALIZED (SELECT 1 AS axon_one FROM {table} AS l JOIN d ON {match_l}"
        " ORDER BY l.{source}, l.{target}, l.{etype}, {tie_break} FOR UPDATE OF l)"
        " UPDATE {table} AS e SET {weight} = LEAST(GREATEST(e.{weight} + d.axon_delta, {low}), {high})"
        " FROM d WHERE {match_e} AND (SELECT count(*) FROM axon_locked) >= 0"
    ).format(
        table=table,
        ids=ids,
        source=source,
        target=target,
        etype=etype,
        weight=weight,
        tie_break=tie_break,
        low=MIN_WEIGHT,
        high=MAX_WEIGHT,
        match_l=match("l"),
        match_e=match("e"),
    )
