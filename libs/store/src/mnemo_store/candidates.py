"""What the edge classifier reads: a new document's candidates and the rarity of its keys.

`neighbourhood_sql` is the one statement, run in the caller's tenant transaction
(`TenantTransaction.neighbourhood`: row-level security) and in the document's sub-tenant scope:

- **key frequencies**: for each key (a phrase), how many documents of the scope contain it
  (`phraseto_tsquery`: the words in order, adjacent);
- **candidates**: exactly the documents the lexical classifier could join to the new one (the
  definition `mnemo_mdn.lexical_index.LexicalIndex.candidates` uses in process), as the union of
  - the **title lookup**: documents whose title, as tokens (`title_key_sql`, the tokens of spec §3
    written in SQL), or whose title without its qualifier (`alias_key_sql`), is one of the new
    document's capitalised phrases: the documents it may cite;
  - the **phrase holders**: documents containing one of the phrases always wanted (the new
    document's title, its title without its qualifier, its id) or one of its names held by few
    enough documents, as adjacent words matched against the documents store's stored tsvector
    column (`ddl.fulltext_column`).
"""

from __future__ import annotations

from dataclasses import dataclass

from mnemo_store.ddl import FULLTEXT_CONFIG, fulltext_column
from mnemo_store.identifiers import TENANT_COLUMN, quote, store_table
from mnemo_store.store_corpus import StoreCorpus

_TENANT = "NULLIF(current_setting('mnemo.tenant', true), '')::uuid"


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
