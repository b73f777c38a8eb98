"""Queries the ingest service runs inside a `TenantTransaction`: the inbox and the outbox for a
whole batch in one statement each, which edge endpoints exist (with their sub-tenant scope
values), and the early edges that wait in `mnemo.pending_edges`.

The inbox remembers what an event carried as well as its id (`claim_events_with_payloads`): beside
the `(consumer, event id)` row it holds a `(consumer#payload, uuid5(event id, payload digest))`
row, so a later event with a known id tells a redelivery (same payload) from a different event
reusing the id, without a column of its own.

Like every query of this package they run on the transaction's connection, so the tenant policy
applies: a document of another tenant simply does not exist here.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from mnemo_axon.ir import StoreDecl

from mnemo_store import outbox
from mnemo_store.identifiers import quote, store_table
from mnemo_store.unit_of_work import TenantTransaction


@dataclass(frozen=True, slots=True)
class PendingEdge:
    pending_id: int
    event_id: uuid.UUID
    store: str
    values: dict[str, Any]
    missing: tuple[str, ...]
    received_at: datetime


async def claim_events(
    tx: TenantTransaction, consumer: str, event_ids: Sequence[uuid.UUID]
) -> set[uuid.UUID]:
    """`TenantTransaction.claim_event` for many events in one statement: the ids claimed now
    (those `consumer` had not processed). Claimed in id order, so two transactions claiming
    overlapping sets never wait on each other in a cycle."""
    if not event_ids:
        return set()
    rows = await tx._open().fetch(
        "INSERT INTO mnemo.inbox (axon_tenant, consumer, event_id)"
        " SELECT $1, $2, e FROM unnest($3::uuid[]) AS e ORDER BY e"
        " ON CONFLICT DO NOTHING RETURNING event_id",
        tx.tenant_id,
        consumer,
        sorted(set(event_ids)),
    )
    return {row["event_id"] for row in rows}


PAYLOAD_MARKS = "#payload"
"""Suffix of the inbox consumer under which the payload marks of a consumer's events are kept."""


def payload_mark(event_id: uuid.UUID, digest: str) -> uuid.UUID:
    """The inbox id that records that `event_id` carried the payload whose digest is `digest`."""
    return uuid.uuid5(event_id, digest)


async def claim_events_with_payloads(
    tx: TenantTransaction, consumer: str, digests: Mapping[uuid.UUID, str]
) -> tuple[set[uuid.UUID], set[uuid.UUID]]:
    """Claim each event of `digests` (event id → digest of its payload) for `consumer`; returns the
    ids claimed now and, of the others (processed before), those whose earlier payload was a
    different one. An event processed before its payload was recorded counts as different."""
    if not digests:
        return set(), set()
    marks = consumer + PAYLOAD_MARKS
    ids = sorted(digests)
    # One statement: the ids claimed now get their payload marks (in id order, like every claim).
    rows = await tx._open().fetch(
        "WITH claimed AS ("
        " INSERT INTO mnemo.inbox (axon_tenant, consumer, event_id)"
        " SELECT $1, $2, e FROM unnest($4::uuid[]) AS e ORDER BY e"
        " ON CONFLICT DO NOTHING RETURNING event_id),"
        " marked AS ("
        " INSERT INTO mnemo.inbox (axon_tenant, consumer, event_id)"
        " SELECT $1, $3, u.m FROM unnest($4::uuid[], $5::uuid[]) AS u (e, m)"
        " JOIN claimed ON claimed.event_id = u.e ORDER BY u.m"
        " ON CONFLICT DO NOTHING)"
        " SELECT event_id FROM claimed",
        tx.tenant_id,
        consumer,
        marks,
        ids,
        [payload_mark(e, digests[e]) for e in ids],
    )
    fresh = {row["event_id"] for row in rows}
    again = {e: payload_mark(e, d) for e, d in digests.items() if e not in fresh}
    if not again:
        return fresh, set()
    rows = await tx._open().fetch(
        "SELECT event_id FROM mnemo.inbox"
        " WHERE axon_tenant = $1 AND consumer = $2 AND event_id = ANY($3::uuid[])",
        tx.tenant_id,
        marks,
        list(again.values()),
    )
    known = {row["event_id"] for row in rows}
    return fresh, {e for e, mark in again.items() if mark not in known}


async def append_outbox_events(tx: TenantTransaction, events: Sequence[outbox.OutboxEvent]) -> None:
    """`TenantTransaction.append_outbox` for many events in one statement, in the given order
    (`outbox.INSERT_MANY_SQL`)."""
    if not events:
        return
    await tx._open().execute(outbox.INSERT_MANY_SQL, *outbox.insert_many_args(tx.tenant_id, events))


async def existing_documents(
    tx: TenantTransaction,
    documents: StoreDecl,
    id_column: str,
    ids: Sequence[str],
    scope_columns: Sequence[str],
) -> dict[str, dict[str, Any]]:
    """Document id (as text) → its scope column values, for those of `ids` that exist."""
    if not ids:
        return {}
    id_decl = documents.column(id_column)
    if id_decl is None:
        raise ValueError(f"store {documents.name!r} has no column {id_column!r}")
    selected = ", ".join(f"{quote(c)}::text AS {quote(c)}" for c in scope_columns)
    sql = (
        f"SELECT {quote(id_column)}::text AS axon_id{', ' + selected if selected else ''}"
        f" FROM {store_table(documents.name)}"
        f" WHERE {quote(id_column)}::text = ANY($1::text[])"
    )
    rows = await tx._open().fetch(sql, list(dict.fromkeys(ids)))
    return {row["axon_id"]: {c: row[c] for c in scope_columns} for row in rows}


async def hold_edge(
    tx: TenantTransaction,
    event_id: uuid.UUID,
    store: str,
    values: Mapping[str, Any],
    missing: Sequence[str],
    received_at: datetime | None = None,
) -> bool:
    """Park an edge whose endpoints `missing` do not exist yet; False when already parked."""
    held = await tx._open().fetchval(
        "INSERT INTO mnemo.pending_edges"
        " (axon_tenant, event_id, store, row_values, missing, received_at)"
        " VALUES ($1, $2, $3, $4::jsonb, $5::text[], coalesce($6, now()))"
        " ON CONFLICT DO NOTHING RETURNING true",
        tx.tenant_id,
        event_id,
        store,
        json.dumps(dict(values), sort_keys=True),
        list(missing),
        received_at,
    )
    return bool(held)


_TAKE = (
    "DELETE FROM mnemo.pending_edges WHERE pending_id IN ({which})"
    " RETURNING pending_id, event_id, store, row_values::text AS row_values, missing, received_at"
)


async def take_pending_edges_for(
    tx: TenantTransaction, document_ids: Sequence[str]
) -> list[PendingEdge]:
    """Remove and return the parked edges waiting for any of `document_ids`, oldest first.

    Taken out (a DELETE locks them, and the ingest role may delete but not update them); the
    caller parks again, with `hold_edge(..., received_at=…)`, any that still miss an endpoint.
    """
    if not document_ids:
        return []
    rows = await tx._open().fetch(
        _TAKE.format(
            which="SELECT pending_id FROM mnemo.pending_edges WHERE missing && $1::text[]"
        ),
        list(dict.fromkeys(document_ids)),
    )
    return sorted((_pending(row) for row in rows), key=lambda e: e.pending_id)


async def take_expired_pending_edges(
    tx: TenantTransaction, received_before: datetime, limit: int = 500
) -> list[PendingEdge]:
    """Remove and return up to `limit` parked edges received before `received_before`."""
    rows = await tx._open().fetch(
        _TAKE.format(
            which="SELECT pending_id FROM mnemo.pending_edges WHERE received_at < $1"
            " ORDER BY pending_id LIMIT $2"
        ),
        received_before,
        limit,
    )
    return sorted((_pending(row) for row in rows), key=lambda e: e.pending_id)


def _pending(row: Any) -> PendingEdge:
    return PendingEdge(
        pending_id=int(row["pending_id"]),
        event_id=row["event_id"],
        store=row["store"],
        values=json.loads(row["row_values"]),
        missing=tuple(row["missing"]),
        received_at=row["received_at"],
    )
