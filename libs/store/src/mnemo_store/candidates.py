"""What the edge classifier reads: a new document's candidates and the rarity of its keys.

Both queries run in the caller's tenant transaction (`TenantTransaction.linked_candidates`,
`TenantTransaction.key_frequencies`: row-level security) and in the document's sub-tenant scope.

- `linked_candidates`: exactly the documents the lexical classifier could join to the new one
  (the definition `mnemo_mdn.lexical_index.LexicalIndex.candidates` uses in process), as the union
  of two lookups:
  - **title lookup**: documents whose title, as tokens (`title_key_sql`, the tokens of spec §3
    written in SQL), or whose title without its qualifier (`alias_key_sql`), is one of the new
    document's capitalised phrases: the documents it may cite;
  - **phrase holders**: documents containing one of the given phrases (the new document's title,
    its title without its qualifier, its id, its rare names) as adjacent words (`<->` phrases
    matched against the documents store's stored tsvector column, `ddl.fulltext_column`);
- `key_frequencies`: for each key (a phrase), how many documents of the scope contain it
  (`phraseto_tsquery`: the words in order, adjacent).
- `candidates_sql` (kept for reading, not for classification): documents sharing any word with the
  new document, best full-text rank first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mnemo_mdn.tokenization import token_list, tokens

from mnemo_store.ddl import FULLTEXT_CONFIG, fulltext_column
from mnemo_store.identifiers import TENANT_COLUMN, quote, store_table
from mnemo_store.scope import Scope
from mnemo_store.store_corpus import StoreCorpus

if TYPE_CHECKING:
    from mnemo_store.unit_of_work import TenantTransaction

_TENANT = "NULLIF(current_setting('mnemo.tenant', true), '')::uuid"
MAX_QUERY_WORDS = 64
MAX_PHRASES = 512
"""Most phrases one holder lookup ORs together (a document's title, id and rare names)."""


@dataclass(frozen=True, slots=True)
class CandidateDocument:
    id: str
    title: str
    body: str | None


def title_key_sql(column: str) -> str:
    """SQL for `mnemo_mdn`'s title key of `column`: lowercase, split on every character that is
    not a letter or digit, drop one-character ASCII pieces, join with single spaces."""
    spaced = f"' ' || regexp_replace(lower({column}::text), '[^[:alnum:]]+', ' ', 'g') || ' '"
    # A one-character ASCII piece is a letter or digit between two spaces; the lookahead leaves
    # the second space to the next piece (`a b c` loses all three).
    dropped = f"regexp_replace({spaced}, ' [a-z0-9](?= )', '', 'g')"
    return f"btrim(regexp_replace({dropped}, ' +', ' ', 'g'))"


def alias_key_sql(column: str) -> str:
    """SQL for `mnemo_mdn`'s alias key of `column`: the title key of the title with its qualifiers
    (parenthesised parts, `mnemo_mdn.edge_classification.QUALIFIER`) removed. Equal to the title
    key when there is none (the in-process key is then ''; either way no lookup tells them apart)."""
    return title_key_sql(f"regexp_replace({column}::text, '\\([^()]*\\)', ' ', 'g')")


def candidates_sql(corpus: StoreCorpus, scope_sql: str) -> str:
    """`$1` tsquery text, `$2` the new document's id, `$3` limit, the scope from `$4`."""
    vector = quote(fulltext_column(corpus.title_column, corpus.body_column))
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


def linked_candidates_sql(corpus: StoreCorpus, scope_sql: str) -> str:
    """`$1` title keys (text[]), `$2` tsquery text of the phrases ('' for none), `$3` the new
    document's id, `$4` limit, the scope from `$5`. Id order (byte order), at most `$4`.

    Each document's title key is computed and its stored tsvector read once (a materialized scan
    of the tenant's rows in scope: under row-level security `@@` is not leakproof, so the GIN index
    cannot serve it), then both tests run against them."""
    vector = quote(fulltext_column(corpus.title_column, corpus.body_column))
    body = f"{quote(corpus.body_column)}::text" if corpus.body_column else "NULL::text"
    ident = f"{quote(corpus.id_column)}::text"
    return (
        f"WITH docs AS MATERIALIZED (SELECT {ident} AS axon_id,"
        f" coalesce({quote(corpus.title_column)}::text, '') AS axon_title, {body} AS axon_body,"
        f" {title_key_sql(quote(corpus.title_column))} AS axon_title_key,"
        f" {alias_key_sql(quote(corpus.title_column))} AS axon_alias_key, {vector} AS axon_vector"
        f" FROM {store_table(corpus.documents.name)}"
        f" WHERE {quote(TENANT_COLUMN)} = {_TENANT} AND {ident} <> $3 AND {scope_sql})"
        " SELECT axon_id, axon_title, axon_body FROM docs"
        " WHERE axon_title_key = ANY($1::text[]) OR axon_alias_key = ANY($1::text[])"
        f" OR ($2 <> '' AND axon_vector @@ to_tsquery('{FULLTEXT_CONFIG}'::regconfig, $2))"
        ' ORDER BY axon_id COLLATE "C" LIMIT $4'
    )


def key_frequencies_sql(corpus: StoreCorpus, scope_sql: str) -> str:
    """`$1` the keys (text[]), the scope from `$2`: one row (key, documents) per key. Each
    document's stored tsvector is read once, then matched against every key's phrase query."""
    vector = quote(fulltext_column(corpus.title_column, corpus.body_column))
    return (
        f"WITH docs AS MATERIALIZED (SELECT {vector} AS axon_vector"
        f" FROM {store_table(corpus.documents.name)}"
        f" WHERE {quote(TENANT_COLUMN)} = {_TENANT} AND {scope_sql})"
        " SELECT k.key AS axon_key, (SELECT count(*) FROM docs WHERE docs.axon_vector @@"
        f" phraseto_tsquery('{FULLTEXT_CONFIG}'::regconfig, k.key)) AS axon_count"
        " FROM unnest($1::text[]) AS k(key)"
    )


def neighbourhood_sql(corpus: StoreCorpus, scope_sql: str) -> str:
    """The classifier's one read per new document: key frequencies and candidates together.

    `$1` keys whose frequency is wanted (text[]), `$2` names among them (text[]), `$3` the most
    holders a name may have and still be evidence, `$4` phrases whose holders are always
    candidates (text[]), `$5` title keys (text[]), `$6` the new document's id, `$7` limit; the
    scope from `$8`. Rows: `('key', key, NULL, NULL, count)` for each key, then
    `('doc', id, title, body, NULL)` for each candidate, in id order (byte order).

    Under row-level security `@@` is not leakproof, so the GIN index cannot serve it and each
    query scans the tenant's rows in scope: here every row's title key is computed and its stored
    tsvector (`ddl.fulltext_column`, no `to_tsvector` per row) read once (a materialized scan) and
    every test runs against them."""
    vector = quote(fulltext_column(corpus.title_column, corpus.body_column))
    body = f"{quote(corpus.body_column)}::text" if corpus.body_column else "NULL::text"
    ident = f"{quote(corpus.id_column)}::text"
    config = f"'{FULLTEXT_CONFIG}'::regconfig"
    return (
        f"WITH docs AS MATERIALIZED (SELECT {ident} AS axon_id,"
        f" coalesce({quote(corpus.title_column)}::text, '') AS axon_title, {body} AS axon_body,"
        f" {title_key_sql(quote(corpus.title_column))} AS axon_title_key,"
        f" {alias_key_sql(quote(corpus.title_column))} AS axon_alias_key, {vector} AS axon_vector"
        f" FROM {store_table(corpus.documents.name)}"
        f" WHERE {quote(TENANT_COLUMN)} = {_TENANT} AND {scope_sql}),"
        " keys AS MATERIALIZED (SELECT k.key AS axon_key,"
        f" phraseto_tsquery({config}, k.key) AS axon_query,"
        " (SELECT count(*) FROM docs"
        f" WHERE docs.axon_vector @@ phraseto_tsquery({config}, k.key)) AS axon_count"
        " FROM unnest($1::text[]) AS k(key)),"
        " wanted AS (SELECT axon_query FROM keys"
        " WHERE axon_key = ANY($2::text[]) AND axon_count <= $3"
        f" UNION ALL SELECT phraseto_tsquery({config}, c.phrase)"
        " FROM unnest($4::text[]) AS c(phrase))"
        " SELECT 'key' AS axon_kind, axon_key AS axon_id, NULL::text AS axon_title,"
        " NULL::text AS axon_body, axon_count FROM keys"
        " UNION ALL (SELECT 'doc', axon_id, axon_title, axon_body, NULL FROM docs"
        " WHERE axon_id <> $6 AND (axon_title_key = ANY($5::text[])"
        " OR axon_alias_key = ANY($5::text[])"
        " OR EXISTS (SELECT 1 FROM wanted WHERE docs.axon_vector @@ wanted.axon_query))"
        ' ORDER BY axon_id COLLATE "C" LIMIT $7)'
    )


def query_text(words: Sequence[str]) -> str:
    """The tsquery text: the words' tokens joined with `|` (tokens are runs of letters and digits,
    so no tsquery syntax can reach `to_tsquery`), at most MAX_QUERY_WORDS, in sorted order."""
    found: set[str] = set()
    for word in words:
        found |= tokens(word)
    return " | ".join(sorted(found)[:MAX_QUERY_WORDS])


def phrase_query_text(phrases: Sequence[str]) -> str:
    """A tsquery matching any of `phrases` as adjacent words: `(hilda <-> hilst) | campinas`.
    Tokens are runs of letters and digits, so no tsquery syntax reaches `to_tsquery`; at most
    MAX_PHRASES phrases, sorted, each once."""
    found = {" <-> ".join(words) for words in (token_list(p) for p in phrases) if words}
    return " | ".join(f"({p})" for p in sorted(found)[:MAX_PHRASES])


async def find_candidates(
    tx: TenantTransaction,
    corpus: StoreCorpus,
    document_id: str,
    words: Sequence[str],
    limit: int,
    scope: Scope | None = None,
) -> list[CandidateDocument]:
    """Up to `limit` documents in `scope` sharing a word with `words`, best rank first."""
    return await tx.ranked_candidates(corpus, document_id, words, limit, scope)


async def find_linked_candidates(
    tx: TenantTransaction,
    corpus: StoreCorpus,
    document_id: str,
    titles: Sequence[str],
    phrases: Sequence[str],
    limit: int,
    scope: Scope | None = None,
) -> list[CandidateDocument]:
    """Documents in `scope` titled one of `titles` (title keys) or holding one of `phrases`."""
    return await tx.linked_candidates(corpus, document_id, titles, phrases, limit, scope)


async def key_frequencies(
    tx: TenantTransaction, corpus: StoreCorpus, keys: Sequence[str], scope: Scope | None = None
) -> dict[str, int]:
    """How many documents in `scope` contain each key (as a phrase)."""
    return await tx.key_frequencies(corpus, keys, scope)
