"""Full-text retrieval and paging over a store corpus's documents.

`retrieve` ranks by Postgres full-text rank over the documents store's stored tsvector column
(`ddl.fulltext_column`, generated from title and body, GIN-indexed after the tenant). Under
row-level security `@@` is not leakproof, so Postgres applies it after the tenant's policy: a
per-row test of the stored vector (no `to_tsvector` per row) over the tenant's rows in scope; where
the superuser has marked `ts_match_vq` leakproof, the same statement is a GIN index lookup. The
query is the disjunction of the query's tokens (MDN.md §3: runs of letters and digits, so no tsquery
syntax can reach `to_tsquery`) of at most `MAX_QUERY_TERMS` distinct tokens, the first ones the
query holds: a disjunction of thousands of terms cost seconds per statement and, past about 40k,
overflowed Postgres's stack. `ts_rank_cd(…, 32)` is `rank / (rank + 1)`, a similarity in [0, 1).
"""

from __future__ import annotations

from dataclasses import dataclass

from mnemo_mdn.tokenization import token_list

from mnemo_store.ddl import FULLTEXT_CONFIG, fulltext_column
from mnemo_store.identifiers import TENANT_COLUMN, quote, store_table
from mnemo_store.scope import CompiledScope
from mnemo_store.store_corpus import StoreCorpus

_TENANT = "NULLIF(current_setting('mnemo.tenant', true), '')::uuid"
MAX_QUERY_TERMS = 64
"""Distinct tokens of a query that reach the tsquery (the first ones, in the query's order)."""


@dataclass(frozen=True, slots=True)
class FoundDocument:
    """A document of a store corpus: id (as text), title, body (None when the corpus maps none)."""

    id: str
    title: str
    body: str | None
    similarity: float = 0.0


def text_query(query: str, max_terms: int = MAX_QUERY_TERMS) -> str:
    """The tsquery text for `query`: its first `max_terms` distinct tokens, sorted, joined with
    `|` (empty when it has none)."""
    first = list(dict.fromkeys(token_list(query)))[:max_terms]
    return " | ".join(sorted(first))


def retrieve_sql(corpus: StoreCorpus, scope: CompiledScope) -> str:
    """Top-`$(k)` by rank for the tsquery text `$(query)`, in `scope` (unqualified; named binds:
    `mnemo_store.scope.positional`)."""
    vector = quote(fulltext_column(corpus.title_column, corpus.body_column))
    query = f"to_tsquery('{FULLTEXT_CONFIG}'::regconfig, $(query))"
    return (
        f"SELECT {_columns(corpus)}, ts_rank_cd({vector}, {query}, 32) AS axon_similarity"
        f" FROM {store_table(corpus.documents.name)}"
        f" WHERE {quote(TENANT_COLUMN)} = {_TENANT} AND {vector} @@ {query} AND {scope.sql}"
        f' ORDER BY axon_similarity DESC, {quote(corpus.id_column)}::text COLLATE "C" LIMIT $(k)'
    )


def page_sql(corpus: StoreCorpus, scope: CompiledScope) -> str:
    """Documents in `scope` in id order after `$(after)` (NULL: from the start), `$(limit)` per
    page (named binds: `mnemo_store.scope.positional`)."""
    key = f'{quote(corpus.id_column)}::text COLLATE "C"'
    return (
        f"SELECT {_columns(corpus)} FROM {store_table(corpus.documents.name)}"
        f" WHERE {quote(corpus.id_column)} IS NOT NULL AND ($(after)::text IS NULL OR {key} > $(after))"
        f" AND {scope.sql} ORDER BY {key} LIMIT $(limit)"
    )


def _columns(corpus: StoreCorpus) -> str:
    body = f"{quote(corpus.body_column)}::text" if corpus.body_column else "NULL::text"
    return (
        f"{quote(corpus.id_column)}::text AS axon_id,"
        f" coalesce({quote(corpus.title_column)}::text, '') AS axon_title, {body} AS axon_body"
    )
