"""Forgetting a document, inside a `TenantTransaction` of the ingest role: the row, the edges
touching it, the parked edges naming it and the navigation outcomes whose path went through it.

Every statement runs on the transaction's connection, so the tenant policy applies: a row of
another tenant does not exist here and is never deleted. `match` narrows the document further to
the rows whose columns equal the given text values (an end-client's pinned scope), so a confined
caller can only ever forget its own rows. The deletes fire the stores' revision and reset triggers
(`mnemo_store.ddl`): every cached graph of the tenant reloads without the document.
"""

from __future__ import annotations

from collections.abc import Mapping

from mnemo_axon.ir import StoreDecl

from mnemo_store.identifiers import quote, store_table
from mnemo_store.unit_of_work import TenantTransaction


def _column(store: StoreDecl, name: str) -> str:
    if store.column(name) is None:
        raise ValueError(f"store {store.name!r} has no column {name!r}")
    return quote(name)


def document_condition(
    documents: StoreDecl, id_column: str, document_id: str, match: Mapping[str, str] | None
) -> tuple[str, list[str]]:
    """The WHERE condition (`$1`, `$2`, … binds) and its values that pick the document
    `document_id` (its id as text) whose `match` columns equal their values (as text)."""
    conditions = [f"{_column(documents, id_column)}::text = $1"]
    values: list[str] = [document_id]
    for name, value in sorted((match or {}).items()):
        values.append(value)
        conditions.append(f"{_column(documents, name)}::text = ${len(values)}")
    return " AND ".join(conditions), values


async def document_exists(
    tx: TenantTransaction,
    documents: StoreDecl,
    id_column: str,
    document_id: str,
    match: Mapping[str, str] | None = None,
) -> bool:
    """Whether the document `delete_document` would delete is there (any role that reads)."""
    where, values = document_condition(documents, id_column, document_id, match)
    found = await tx._open().fetchval(
        f"SELECT EXISTS (SELECT FROM {store_table(documents.name)} WHERE {where})", *values
    )
    return bool(found)


async def delete_document(
    tx: TenantTransaction,
    documents: StoreDecl,
    id_column: str,
    document_id: str,
    match: Mapping[str, str] | None = None,
) -> bool:
    """Delete the document whose id (as text) is `document_id` and whose `match` columns equal
    their values (as text); True when there was one."""
    where, values = document_condition(documents, id_column, document_id, match)
    deleted = await tx._open().fetch(
        f"DELETE FROM {store_table(documents.name)} WHERE {where} RETURNING true", *values
    )
    return bool(deleted)


async def delete_edges_touching(
    tx: TenantTransaction,
    relations: StoreDecl,
    from_column: str,
    to_column: str,
    document_id: str,
) -> int:
    """Delete every edge whose source or target is `document_id`; returns how many."""
    deleted = await tx._open().fetch(
        f"DELETE FROM {store_table(relations.name)}"
        f" WHERE {_column(relations, from_column)}::text = $1"
        f" OR {_column(relations, to_column)}::text = $1 RETURNING true",
        document_id,
    )
    return len(deleted)


async def drop_pending_edges_naming(
    tx: TenantTransaction, store: str, from_column: str, to_column: str, document_id: str
) -> int:
    """Delete the parked edges of `store` from or to `document_id`; returns how many."""
    deleted = await tx._open().fetch(
        "DELETE FROM mnemo.pending_edges WHERE store = $1"
        " AND (row_values ->> $2 = $4 OR row_values ->> $3 = $4) RETURNING true",
        store,
        from_column,
        to_column,
        document_id,
    )
    return len(deleted)


async def forget_outcomes_naming(tx: TenantTransaction, corpus_id: str, document_id: str) -> int:
    """Delete the navigation outcomes of `corpus_id` whose path holds `document_id`."""
    deleted = await tx._open().fetch(
        "DELETE FROM mnemo.nav_outcomes WHERE corpus_id = $1 AND $2 = ANY(path) RETURNING true",
        corpus_id,
        document_id,
    )
    return len(deleted)
