"""What the edge classifier reads: a new document's candidates and the rarity of its keys.

`neighbourhood_sql` is the one statement, run in the caller's tenant transaction
(`TenantTransaction.neighbourhood`: row-level security) and in the document's sub-tenant scope:

- **key frequencies**: for each key (a phrase), how many documents of the scope contain it
  (`phraseto_tsquery`: the words in order, adjacent);
- **candidates**: exactly the documents the lexical classifier could join to the new one (the
  definition `mnemo_mdn.lexical_index.LexicalIndex.candidates` uses in process), as the union of
  - the **title lookup**: documents whose title, as tokens (its title key), or whose title
    without its qualifier (its alias key), is one of the new document's capitalised phrases: the
    documents it may cite; both keys are stored columns with b-tree indexes
    (`mnemo_store.title_keys`), so this is an index lookup;
  - the **phrase holders**: documents containing one of the phrases always wanted (the new
    document's title, its title without its qualifier, its id) or one of its names held by few
    enough documents, as adjacent words matched against the documents store's stored tsvector
    column (`ddl.fulltext_column`), read row by row in the scope (see `neighbourhood_sql`).
"""

from __future__ import annotations

from dataclasses import dataclass

from mnemo_store.ddl import FULLTEXT_CONFIG, fulltext_column
from mnemo_store.identifiers import TENANT_COLUMN, quote, store_table
from mnemo_store.store_corpus import StoreCorpus
from mnemo_store.title_keys import alias_key_column, alias_key_sql, title_key_column, title_key_sql

_TENANT = "NULLIF(current_setting('mnemo.tenant', true), '')::uuid"


@dataclass(frozen=True, slots=True)
class CandidateDocument:
    id: str
    title: str
    body: str | None


def neighbourhood_sql(corpus: StoreCorpus, scope_sql: str) -> str:
    """The classifier's one read per new document: key frequencies and candidates together.

    Named binds (`mnemo_store.scope.positional`): `$(keys)` keys whose frequency is wanted
    (text[]), `$(names)` names among them (text[]), `$(max_holders)` the most holders a name may
    have and still be evidence, `$(cited)` phrases whose holders are always candidates (text[]),
    `$(titles)` title keys (text[]), `$(document_id)` the new document's id, `$(limit)`; and the
    scope's, in `scope_sql`. Rows: `('key', key, NULL, NULL, count)` for each key, then
    `('doc', id, title, body, NULL)` for each candidate, in id order (byte order).

    The title lookup is an index lookup of the stored keys (`mnemo_store.title_keys`). The phrase
    tests cannot be: under row-level security `@@` is not leakproof, so the GIN index cannot serve
    it. They read each row of the tenant's scope once, testing its stored tsvector
    (`ddl.fulltext_column`) against one query, the OR of every phrase (`hits`); the frequencies
    and phrase holders are then counted among those rows only, not among all of them once per
    phrase."""
    table = store_table(corpus.documents.name)
    title = quote(corpus.title_column)
    vector = quote(fulltext_column(corpus.title_column, corpus.body_column))
    body = f"{quote(corpus.body_column)}::text" if corpus.body_column else "NULL::text"
    row = (
        f"ctid AS axon_row, {quote(corpus.id_column)}::text AS axon_id,"
        f" coalesce({title}::text, '') AS axon_title, {body} AS axon_body"
    )
    in_scope = f"{quote(TENANT_COLUMN)} = {_TENANT} AND {scope_sql}"
    title_key = quote(title_key_column(corpus.title_column))
    alias_key = quote(alias_key_column(corpus.title_column))
    config = f"'{FULLTEXT_CONFIG}'::regconfig"
    return (
        "WITH keys AS MATERIALIZED (SELECT k.key AS axon_key,"
        f" phraseto_tsquery({config}, k.key) AS axon_query FROM unnest($(keys)::text[]) AS k(key)),"
        f" cited AS MATERIALIZED (SELECT phraseto_tsquery({config}, c.phrase) AS axon_query"
        " FROM unnest($(cited)::text[]) AS c(phrase)),"
        # NULL (no row matches) when no phrase has a lexeme.
        " any_phrase AS (SELECT string_agg('(' || p.axon_query::text || ')', ' | ')::tsquery"
        " AS axon_query FROM (SELECT axon_query FROM keys UNION ALL SELECT axon_query FROM cited)"
        " AS p WHERE numnode(p.axon_query) > 0),"
        f" hits AS MATERIALIZED (SELECT {row}, {vector} AS axon_vector FROM {table}"
        f" WHERE {in_scope} AND {vector} @@ (SELECT axon_query FROM any_phrase)),"
        " counted AS MATERIALIZED (SELECT axon_key, axon_query, (SELECT count(*) FROM hits"
        " WHERE hits.axon_vector @@ keys.axon_query) AS axon_count FROM keys),"
        " wanted AS (SELECT axon_query FROM counted"
        " WHERE axon_key = ANY($(names)::text[]) AND axon_count <= $(max_holders)"
        " UNION ALL SELECT axon_query FROM cited),"
        # Rows whose keys are stored are found by the index; the others (NULL keys) by the same
        # index, their keys computed here.
        f" titled AS (SELECT {row} FROM {table} WHERE {in_scope}"
        f" AND ({title_key} = ANY($(titles)::text[]) OR {alias_key} = ANY($(titles)::text[]))"
        f" UNION ALL SELECT {row} FROM {table} WHERE {in_scope}"
        f" AND ({title_key} IS NULL OR {alias_key} IS NULL)"
        f" AND ({title_key_sql(title)} = ANY($(titles)::text[])"
        f" OR {alias_key_sql(title)} = ANY($(titles)::text[])))"
        " SELECT 'key' AS axon_kind, axon_key AS axon_id, NULL::text AS axon_title,"
        " NULL::text AS axon_body, axon_count FROM counted"
        " UNION ALL (SELECT 'doc', axon_id, axon_title, axon_body, NULL FROM ("
        "SELECT axon_row, axon_id, axon_title, axon_body FROM titled"
        " UNION SELECT axon_row, axon_id, axon_title, axon_body FROM hits"
        " WHERE EXISTS (SELECT 1 FROM wanted WHERE hits.axon_vector @@ wanted.axon_query)"
        ') AS found WHERE axon_id <> $(document_id) ORDER BY axon_id COLLATE "C" LIMIT $(limit))'
    )
