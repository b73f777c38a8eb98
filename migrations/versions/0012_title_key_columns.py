"""Stored, b-tree-indexed title and alias keys for the documents stores of store corpora.

Revision ID: 0012_title_key_columns
Revises: 0011_classifier_change_marks
Create Date: 2026-12-04

The edge classifier's per-event read (`mnemo_store.candidates.neighbourhood_sql`, the path of a
scope it does not hold in memory) looked documents up by title key and alias key, computed with
regular expressions on every row of the tenant's scope for every event. Stored generated columns
hold both keys, computed once when a row is written (no writer changes), and a b-tree index after
the tenant serves the lookup: text equality is leakproof, so it stays an index condition under
row-level security.

For every registered store corpus, its documents store gets the columns `mnemo apply` creates for
new stores (`mnemo_store.title_keys`: `axon_title_key_` and `axon_alias_key_` with the first 10
hex digits of SHA-256 over the title column's name; NULL for a title longer than 2000 bytes
lowercased, which the lookup reads per row) and their indexes (`<store>__<column>`, shortened like
`mnemo_store.identifiers.object_name`). Adding the columns rewrites each such table once. The key
expressions are written out here as they are today: a migration does not change with the code.
"""

from __future__ import annotations

from alembic import op

revision = "0012_title_key_columns"
down_revision = "0011_classifier_change_marks"
branch_labels = None
depends_on = None

# mnemo_store.identifiers.object_name, in SQL (as 0009)
_OBJECT_NAME = r"""
CREATE OR REPLACE FUNCTION pg_temp.mnemo_object_name(store text, suffix text) RETURNS text
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE WHEN octet_length(store || '__' || suffix) <= 63 THEN store || '__' || suffix
    ELSE convert_from(substring(convert_to(store || '__' || suffix, 'UTF8') FROM 1 FOR 52), 'UTF8')
         || '_' || substring(encode(sha256(convert_to(store || '__' || suffix, 'UTF8')), 'hex'), 1, 10)
  END
$fn$;
"""

# mnemo_store.title_keys.key_columns_sql, `%1$I` standing for the title column.
_TITLE_KEY = (
    r"CASE WHEN octet_length(lower(%1$I::text)) <= 2000 THEN btrim(regexp_replace(regexp_replace("
    r"' ' || regexp_replace(lower(%1$I::text), '[^[:alnum:]]+', ' ', 'g') || ' ', "
    r"' [a-z0-9](?= )', '', 'g'), ' +', ' ', 'g')) END"
)
_ALIAS_KEY = (
    r"CASE WHEN octet_length(lower(%1$I::text)) <= 2000 THEN btrim(regexp_replace(regexp_replace("
    r"' ' || regexp_replace(lower(regexp_replace(%1$I::text, '\([^()]*\)', ' ', 'g')::text), "
    r"'[^[:alnum:]]+', ' ', 'g') || ' ', ' [a-z0-9](?= )', '', 'g'), ' +', ' ', 'g')) END"
)


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


# The (store, title column) of the registered store corpora whose table and title column exist,
# with the two column names.
_MAPPINGS = """
SELECT DISTINCT mp.store, mp.title,
  'axon_title_key_' || substring(encode(sha256(convert_to(mp.title, 'UTF8')), 'hex'), 1, 10) AS title_col,
  'axon_alias_key_' || substring(encode(sha256(convert_to(mp.title, 'UTF8')), 'hex'), 1, 10) AS alias_col
FROM (
  SELECT definition->'corpus'->'documents_store'->>'store' AS store,
         definition->'corpus'->'documents_store'->>'title_column' AS title
  FROM mnemo.corpora WHERE kind = 'store_graph'
) AS mp
JOIN pg_class c ON c.relname = mp.store AND c.relkind IN ('r', 'p')
JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'axon_stores'
WHERE mp.title IS NOT NULL
  AND EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = mp.title
              AND NOT a.attisdropped)
"""

_UPGRADE = f"""
DO $$
DECLARE
  m record;
  table_oid regclass;
  key record;
BEGIN
  FOR m IN {_MAPPINGS} LOOP
    table_oid := to_regclass(format('axon_stores.%I', m.store));
    CONTINUE WHEN table_oid IS NULL;  -- dropped since the mappings were read
    FOR key IN SELECT * FROM (VALUES (m.title_col, {_quoted(_TITLE_KEY)}),
                                     (m.alias_col, {_quoted(_ALIAS_KEY)})) AS k(col, expression)
    LOOP
      -- Each step only when needed: a store `mnemo apply` already gave the column is not locked.
      IF NOT EXISTS (SELECT FROM pg_attribute
                     WHERE attrelid = table_oid AND attname = key.col AND NOT attisdropped) THEN
        EXECUTE format('ALTER TABLE axon_stores.%I ADD COLUMN %I text'
                       ' GENERATED ALWAYS AS (%s) STORED',
                       m.store, key.col, format(key.expression, m.title));
      END IF;
      IF to_regclass(format('axon_stores.%I', pg_temp.mnemo_object_name(m.store, key.col)))
         IS NULL THEN
        EXECUTE format('CREATE INDEX %I ON axon_stores.%I (axon_tenant, %I)',
                       pg_temp.mnemo_object_name(m.store, key.col), m.store, key.col);
      END IF;
    END LOOP;
  END LOOP;
END
$$;
"""

_DOWNGRADE = f"""
DO $$
DECLARE
  m record;
BEGIN
  FOR m IN {_MAPPINGS} LOOP
    EXECUTE format('ALTER TABLE axon_stores.%I DROP COLUMN IF EXISTS %I, DROP COLUMN IF EXISTS %I',
                   m.store, m.title_col, m.alias_col);
  END LOOP;
END
$$;
"""


def upgrade() -> None:
    op.execute(_OBJECT_NAME)
    op.execute(_UPGRADE)


def downgrade() -> None:
    op.execute(_OBJECT_NAME)
    op.execute(_DOWNGRADE)
