"""The search gateway's `tags` of a store corpus's documents, from the columns its documents store
declares (CORPUS.md A: tags come from the document's metadata or category).

A documents store may declare any of three columns, found by exact name:

- `category`: one tag, its value as text (an empty value gives none);
- `tags`: a `Json` array of strings (each a tag) or a `Json` string (one tag); a `Text` value is
  split at commas, each part trimmed;
- `metadata`: a `Json` object, whose `category` (a string) and `tags` (as the `tags` column) are read.

A document's tags are its categories first, then its tags, in that order, each once; values of
another JSON type are not tags and are skipped. A store declaring none of these columns has no
tags, and nothing is read for it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Final

import asyncpg
from mnemo_axon import AxonType
from mnemo_axon.ir import ColumnDecl

from mnemo_store.identifiers import TENANT_COLUMN, quote, store_table
from mnemo_store.scope import CompiledScope, Scope, compile_scope, positional
from mnemo_store.store_corpus import StoreCorpus

TAG_COLUMNS: Final = ("category", "tags", "metadata")
"""The documents store's columns that tags are read from, by exact name."""
_TENANT = "NULLIF(current_setting('mnemo.tenant', true), '')::uuid"


def tag_columns(corpus: StoreCorpus) -> tuple[ColumnDecl, ...]:
    """The columns of `corpus`'s documents store that give tags (`metadata` only when `Json`)."""
    found = []
    for name in TAG_COLUMNS:
        column = corpus.documents.column(name)
        if column is None or (name == "metadata" and column.type is not AxonType.JSON):
            continue
        found.append(column)
    return tuple(found)


def tags_sql(corpus: StoreCorpus, columns: Sequence[ColumnDecl], scope: CompiledScope) -> str:
    """The tag columns (as JSON text) of the documents whose id is in `$(ids)`, in the
    transaction's tenant and in `scope` (named binds: `mnemo_store.scope.positional`)."""
    values = ", ".join(
        f"to_jsonb({quote(column.name)})::text AS {quote('axon_' + column.name)}"
        for column in columns
    )
    return (
        f"SELECT {quote(corpus.id_column)}::text AS axon_id, {values}"
        f" FROM {store_table(corpus.documents.name)}"
        f" WHERE {quote(TENANT_COLUMN)} = {_TENANT}"
        f" AND {quote(corpus.id_column)}::text = ANY($(ids)::text[]) AND {scope.sql}"
    )


def tags_of(values: Mapping[str, object], types: Mapping[str, AxonType]) -> tuple[str, ...]:
    """A document's tags from its tag columns' values (`None` for NULL), by the rules above."""
    categories: list[object] = []
    tags: list[str] = []
    if "category" in values:
        categories.append(values["category"])
    if "tags" in values:
        tags.extend(_tag_list(values["tags"], split=types.get("tags") is AxonType.TEXT))
    metadata = values.get("metadata")
    if isinstance(metadata, dict):
        categories.append(metadata.get("category"))
        tags.extend(_tag_list(metadata.get("tags"), split=False))
    named = [_category(value) for value in categories]
    return tuple(dict.fromkeys(tag for tag in [*named, *tags] if tag))


def _category(value: object) -> str:
    if value is None or isinstance(value, (dict, list)):
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value).strip()


def _tag_list(value: object, *, split: bool) -> list[str]:
    if isinstance(value, str):
        return [part.strip() for part in value.split(",")] if split else [value.strip()]
    if isinstance(value, list):
        return [item.strip() for item in value if isinstance(item, str)]
    return []


async def document_tags(
    connection: asyncpg.Connection, corpus: StoreCorpus, ids: Sequence[str], scope: Scope
) -> dict[str, tuple[str, ...]]:
    """Per id among `ids` (documents in the connection's tenant and `scope`), its tags; empty for
    a corpus whose documents store declares no tag column."""
    columns = tag_columns(corpus)
    if not columns or not ids:
        return {}
    compiled = compile_scope(scope, corpus)
    sql, params = positional(tags_sql(corpus, columns, compiled), compiled, ids=list(ids))
    rows = await connection.fetch(sql, *params)
    types = {column.name: column.type for column in columns}
    found: dict[str, tuple[str, ...]] = {}
    for row in rows:
        values = {column.name: _json(row["axon_" + column.name]) for column in columns}
        found[row["axon_id"]] = tags_of(values, types)
    return found


def _json(text: str | None) -> object:
    return None if text is None else json.loads(text)
