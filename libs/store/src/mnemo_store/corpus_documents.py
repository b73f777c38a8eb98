"""Declared corpora (forms a and c): their documents by corpus version, and their edge memory.

- `mnemo.corpus_documents` holds the documents an inline or declared-graph corpus lists, written by
  `mnemo apply` (the owner) with the registry version of the corpus they belong to. They are
  deployment-wide, like the registry row: every tenant that may read the corpus reads the same
  documents, and nothing of a tenant is stored with them. Its stored tsvector `fulltext` (migration
  0018) is generated from title and content as a documents store's is from title and body, so
  `rank_corpus_documents` ranks a declared corpus exactly as `retrieval.retrieve_sql` ranks a
  store corpus holding the same texts.
- `mnemo.declared_edge_weights` is the memory of an adaptive declared graph: per tenant (row-level
  security), corpus, scope and edge, the weight after that scope's reinforcements. An edge without
  a row has its declared weight. A reinforcement is one statement, a relative update clamped to
  `[0.001, 1.0]` per step as MDN.md §5 writes it, so concurrent ones lose nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import asyncpg

from mnemo_store.ddl import FULLTEXT_CONFIG
from mnemo_store.errors import StoreError
from mnemo_store.retrieval import text_query


@dataclass(frozen=True, slots=True)
class CorpusDocument:
    """One document of a declared corpus: `doc_id` is the name the corpus lists it by."""

    doc_id: str
    title: str
    content: str
    category: str = ""
    tags: tuple[str, ...] = ()
    source_uri: str = ""


@dataclass(frozen=True, slots=True)
class WeightUpdate:
    """`delta` for the edge `(source, target, etype)`, whose declared weight is `declared`."""

    source: str
    target: str
    etype: str
    declared: float
    delta: float


@dataclass(frozen=True, slots=True)
class StoredDocuments:
    """What `store_corpus_documents` did: rows written for the version, rows of older ones gone."""

    written: int
    removed: int


_DELETE_OTHER_VERSIONS: Final = (
    "DELETE FROM mnemo.corpus_documents WHERE corpus_id = $1 AND version <> $2"
)
_DELETE_VERSION: Final = "DELETE FROM mnemo.corpus_documents WHERE corpus_id = $1 AND version = $2"
_INSERT: Final = (
    "INSERT INTO mnemo.corpus_documents"
    " (corpus_id, version, doc_id, title, content, category, tags, source_uri)"
    " SELECT $1, $2, d.doc_id, d.title, d.content, d.category,"
    " ARRAY(SELECT jsonb_array_elements_text(d.tags)), d.source_uri"
    " FROM jsonb_to_recordset($3::jsonb)"
    " AS d(doc_id text, title text, content text, category text, tags jsonb, source_uri text)"
)
_READ: Final = (
    "SELECT doc_id, title, content, category, tags, source_uri FROM mnemo.corpus_documents"
    ' WHERE corpus_id = $1 AND version = $2 ORDER BY doc_id COLLATE "C"'
)
_RANKED: Final = (
    "SELECT doc_id, title, content, category, tags, source_uri,"
    " ts_rank_cd(fulltext, q, 32) AS similarity"
    f" FROM mnemo.corpus_documents, to_tsquery('{FULLTEXT_CONFIG}'::regconfig, $3) AS q"
    " WHERE corpus_id = $1 AND version = $2 AND fulltext @@ q"
    ' ORDER BY similarity DESC, doc_id COLLATE "C" LIMIT $4'
)
_STORED: Final = (
    "SELECT EXISTS (SELECT FROM mnemo.corpus_documents WHERE corpus_id = $1 AND version = $2)"
)
_OVERLAY: Final = (
    "SELECT source, target, etype, weight FROM mnemo.declared_edge_weights"
    " WHERE corpus_id = $1 AND scope = $2"
)
_REINFORCE: Final = (
    "INSERT INTO mnemo.declared_edge_weights AS w"
    " (axon_tenant, corpus_id, scope, source, target, etype, weight, last_delta)"
    " SELECT NULLIF(current_setting('mnemo.tenant', true), '')::uuid, $1, $2, u.source, u.target,"
    " u.etype, LEAST(GREATEST(u.declared + u.delta, 0.001), 1.0), u.delta"
    " FROM unnest($3::text[], $4::text[], $5::text[], $6::float8[], $7::float8[])"
    " AS u(source, target, etype, declared, delta)"
    " ON CONFLICT (axon_tenant, corpus_id, scope, source, target, etype) DO UPDATE"
    " SET weight = LEAST(GREATEST(w.weight + EXCLUDED.last_delta, 0.001), 1.0),"
    " last_delta = EXCLUDED.last_delta, updated_at = now()"
)
_LOCK_SCOPE: Final = "SELECT pg_advisory_xact_lock(hashtextextended($1, 16))"


async def store_corpus_documents(
    connection: asyncpg.Connection,
    corpus_id: str,
    version: str,
    documents: Sequence[CorpusDocument],
) -> StoredDocuments:
    """Make `documents` the corpus's documents at `version`, in one transaction: the version's rows
    replaced, the rows of every other version removed (the registry serves one version)."""
    seen: set[str] = set()
    for document in documents:
        if document.doc_id in seen:
            raise StoreError(f"corpus {corpus_id!r}: document {document.doc_id!r} is listed twice")
        seen.add(document.doc_id)
    rows = [
        {
            "doc_id": d.doc_id,
            "title": d.title,
            "content": d.content,
            "category": d.category,
            "tags": list(d.tags),
            "source_uri": d.source_uri,
        }
        for d in documents
    ]
    async with connection.transaction():
        removed = await connection.fetch(
            _DELETE_OTHER_VERSIONS + " RETURNING 1", corpus_id, version
        )
        await connection.execute(_DELETE_VERSION, corpus_id, version)
        await connection.execute(_INSERT, corpus_id, version, json.dumps(rows))
    return StoredDocuments(len(rows), len(removed))


async def read_corpus_documents(
    connection: asyncpg.Connection | asyncpg.Pool, corpus_id: str, version: str
) -> list[CorpusDocument]:
    """The corpus's documents at `version`, in id order (empty when none were stored)."""
    rows = await connection.fetch(_READ, corpus_id, version)
    return [
        CorpusDocument(
            r["doc_id"], r["title"], r["content"], r["category"], tuple(r["tags"]), r["source_uri"]
        )
        for r in rows
    ]


async def rank_corpus_documents(
    connection: asyncpg.Connection | asyncpg.Pool,
    corpus_id: str,
    version: str,
    query: str,
    k: int,
) -> list[tuple[CorpusDocument, float]] | None:
    """The `k` documents of the corpus at `version` ranked highest for `query`, with their
    similarity: Postgres full text, the tsquery and `ts_rank_cd(…, 32)` of a store corpus
    (`retrieval`), ties by id. None when no document is stored for the version."""
    text = text_query(query)
    rows = await connection.fetch(_RANKED, corpus_id, version, text, k) if text and k > 0 else []
    if not rows:
        return [] if await connection.fetchval(_STORED, corpus_id, version) else None
    return [
        (
            CorpusDocument(
                r["doc_id"],
                r["title"],
                r["content"],
                r["category"],
                tuple(r["tags"]),
                r["source_uri"],
            ),
            float(r["similarity"]),
        )
        for r in rows
    ]


async def lock_scope_memory(connection: asyncpg.Connection, key: str) -> None:
    """Serialise the memory writers of one (tenant, corpus, scope) until the transaction ends."""
    await connection.execute(_LOCK_SCOPE, key)


async def edge_overlay(
    connection: asyncpg.Connection, corpus_id: str, scope: str
) -> dict[tuple[str, str, str], float]:
    """The tenant's remembered weights of the corpus in `scope` (the transaction's tenant)."""
    rows = await connection.fetch(_OVERLAY, corpus_id, scope)
    return {(r["source"], r["target"], r["etype"]): float(r["weight"]) for r in rows}


async def reinforce_declared(
    connection: asyncpg.Connection, corpus_id: str, scope: str, updates: Sequence[WeightUpdate]
) -> None:
    """Each update as one relative step on the tenant's weight (its declared weight the first
    time): `LEAST(GREATEST(weight + Δ, 0.001), 1.0)`."""
    if not updates:
        return
    await connection.execute(
        _REINFORCE,
        corpus_id,
        scope,
        [u.source for u in updates],
        [u.target for u in updates],
        [u.etype for u in updates],
        [u.declared for u in updates],
        [u.delta for u in updates],
    )


def overlaid(
    declared: Mapping[tuple[str, str, str], float],
    overlay: Mapping[tuple[str, str, str], float],
) -> dict[tuple[str, str, str], float]:
    """Declared weights with the remembered ones in their place."""
    return {key: overlay.get(key, weight) for key, weight in declared.items()}
