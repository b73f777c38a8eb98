"""What the edge classifier reads: a new document's candidates and the rarity of its keys.

Both queries run in the caller's tenant transaction (row-level security) and in the document's
sub-tenant scope, over the same tsvector expression the documents store is indexed with
(`ddl.fulltext_expression`, a GIN index leading with the tenant), so each is an index lookup:

- `candidates`: the documents matching any of the new document's words (names, title,
  capitalised words), best full-text rank first, at most `limit`, the document itself excluded;
- `key_frequencies`: for each key (a phrase), how many documents of the scope contain it
  (`phraseto_tsquery`: the words in order, adjacent).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mnemo_mdn.tokenization import tokens

from mnemo_store.ddl import FULLTEXT_CONFIG, fulltext_expression
from mnemo_store.identifiers import TENANT_COLUMN, quote, store_table
from mnemo_store.scope import Scope, render_scope
from mnemo_store.store_corpus import StoreCorpus
from mnemo_store.unit_of_work import TenantTransaction

_TENANT = "NULLIF(current_setting('mnemo.tenant', true), '')::uuid"
MAX_QUERY_WORDS = 64


@dataclass(frozen=True, slots=True)
class CandidateDocument:
    id: str
    title: str
    body: str | None


def candidates_sql(corpus: StoreCorpus, scope_sql: str) -> str:
    """`$1` tsquery text, `$2` the new document's id, `$3` limit, the scope from `$4`."""
    vector = fulltext_expression(corpus.title_column, corpus.body_column)
    query = f"to_tsquery('{FULLTEXT_CONFIG}'::regconfig, $1)"
    body = f"{quote(corpus.body_column)}::text" if corpus.body_column else "NULL::text"
    return (
        f"SELECT {quote(corpus.id_column)}::text AS axon_id,"
        f" coalesce({quote(corpus.title_column)}::text, '') AS axon_title, {body} AS axon_body"
        f" FROM {store_table(corpus.documents.name)}"
        f" WHERE {quote(TENANT_COLUMN)} = {_TENANT} AND {vector} @@ {query}"
        f" AND {quote(corpus.id_column)}::text <> $2 AND {scope_sql}"
        f" ORDER BY ts_rank_cd({vector}, {query}) DESC, {quote(corpus.id_column)}::text"
        ' COLLATE "C" LIMIT $3'
    )


def key_frequencies_sql(corpus: StoreCorpus, scope_sql: str) -> str:
    """`$1` the keys (text[]), the scope from `$2`: one row (key, documents) per key."""
    vector = fulltext_expression(corpus.title_column, corpus.body_column)
    return (
        "SELECT k.key AS axon_key, (SELECT count(*) FROM"
        f" {store_table(corpus.documents.name)} WHERE {quote(TENANT_COLUMN)} = {_TENANT}"
        f" AND {vector} @@ phraseto_tsquery('{FULLTEXT_CONFIG}'::regconfig, k.key)"
        f" AND {scope_sql}) AS axon_count FROM unnest($1::text[]) AS k(key)"
    )


def query_text(words: Sequence[str]) -> str:
    """The tsquery text: the words' tokens joined with `|` (tokens are runs of letters and digits,
    so no tsquery syntax can reach `to_tsquery`), at most MAX_QUERY_WORDS, in sorted order."""
    found: set[str] = set()
    for word in words:
        found |= tokens(word)
    return " | ".join(sorted(found)[:MAX_QUERY_WORDS])


async def find_candidates(
    tx: TenantTransaction,
    corpus: StoreCorpus,
    document_id: str,
    words: Sequence[str],
    limit: int,
    scope: Scope | None = None,
) -> list[CandidateDocument]:
    """Up to `limit` documents in `scope` sharing a word with `words`, best rank first."""
    text = query_text(words)
    if not text or limit < 1:
        return []
    rendered = render_scope(scope or Scope(), corpus, 4)
    # This package's queries all run through the tenant transaction's connection.
    rows = await tx._open().fetch(  # same package, see above
        candidates_sql(corpus, rendered.sql), text, document_id, limit, *rendered.params
    )
    return [CandidateDocument(r["axon_id"], r["axon_title"], r["axon_body"]) for r in rows]


async def key_frequencies(
    tx: TenantTransaction, corpus: StoreCorpus, keys: Sequence[str], scope: Scope | None = None
) -> dict[str, int]:
    """How many documents in `scope` contain each key (as a phrase)."""
    if not keys:
        return {}
    rendered = render_scope(scope or Scope(), corpus, 2)
    rows = await tx._open().fetch(  # same package, see find_candidates
        key_frequencies_sql(corpus, rendered.sql), list(keys), *rendered.params
    )
    return {r["axon_key"]: int(r["axon_count"]) for r in rows}
