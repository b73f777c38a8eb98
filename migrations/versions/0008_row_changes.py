"""Row change markers for incremental graph refresh; the navigator's inbox.

Revision ID: 0008_row_changes
Revises: 0005_tenant_names, 0006_revision_first, 0007_audit_chain
Create Date: 2026-12-03

Every store row carries `axon_changed xid8`, the transaction that last inserted or updated it (a
column default, and a row trigger when an update or an explicit value would leave another id),
indexed as `(axon_tenant, axon_changed)`. A cached graph read at snapshot S refreshes by reading
only the rows whose marker S could not see: `axon_changed >= xmin(S)` (an index range) and not
visible in S. A transaction that started before S and commits after it has an id at or above
xmin(S), so its rows are found however late it commits.

Markers cannot show a row that left (DELETE, TRUNCATE) or a row whose identity changed (a key or a
document id updated): a reset trigger records the corpus's current revision in
`graph_revisions.reset_revision`, and a cache older than the reset reloads in full.

This revision adds the functions, the revision column and, for the stores that exist, the column,
index and triggers `mnemo apply` creates for new ones (`mnemo_store.ddl`); the identity of a
store is its primary key plus the document id column of every registered corpus reading it.
It also lets the navigator claim Kafka requests in `mnemo.inbox` (redelivery dedup).
"""

from __future__ import annotations

from alembic import op

revision = "0008_row_changes"
down_revision = ("0005_tenant_names", "0006_revision_first", "0007_audit_chain")
branch_labels = None
depends_on = None

_FUNCTIONS = """
CREATE OR REPLACE FUNCTION mnemo.mark_row_change() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  NEW.axon_changed := pg_current_xact_id();
  RETURN NEW;
END
$fn$;

-- Runs as the invoker, after the statement: the revision trigger (before it) already bumped and
-- locked the revision rows of this tenant's corpora, so this only reads them back.
CREATE OR REPLACE FUNCTION mnemo.reset_graph_revision() RETURNS trigger
LANGUAGE plpgsql AS $fn$
DECLARE
  tenant uuid := NULLIF(current_setting('mnemo.tenant', true), '')::uuid;
BEGIN
  IF tenant IS NOT NULL THEN
    UPDATE mnemo.graph_revisions SET reset_revision = revision
    WHERE axon_tenant = tenant AND corpus_id = ANY(TG_ARGV);
  END IF;
  RETURN NULL;
END
$fn$;
"""

_STORES = r"""
DO $$
DECLARE
  store record;
  identity text[];
  old_row text;
  new_row text;
  index_name text;
BEGIN
  FOR store IN
    SELECT c.oid, c.relname,
           (SELECT substring(pg_get_triggerdef(t.oid) FROM 'bump_graph_revision\((.*)\)$')
            FROM pg_trigger t
            WHERE t.tgrelid = c.oid AND t.tgname = 'axon_graph_revision') AS corpora
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = 'axon_stores' AND c.relkind IN ('r', 'p')
  LOOP
    IF NOT EXISTS (SELECT FROM pg_attribute WHERE attrelid = store.oid
                   AND attname = 'axon_changed' AND NOT attisdropped) THEN
      EXECUTE format('ALTER TABLE axon_stores.%I ADD COLUMN axon_changed xid8 NOT NULL'
                     ' DEFAULT pg_current_xact_id()', store.relname);
    END IF;
    index_name := store.relname || '__changed_idx';
    IF octet_length(index_name) <= 63 THEN
      EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON axon_stores.%I (axon_tenant, axon_changed)',
                     index_name, store.relname);
    ELSE
      -- mnemo_store.identifiers.object_name: a digest for names Postgres would truncate
      index_name := convert_from(substring(convert_to(index_name, 'UTF8') FROM 1 FOR 52), 'UTF8')
                    || '_' || substring(encode(sha256(convert_to(index_name, 'UTF8')), 'hex'), 1, 10);
      EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON axon_stores.%I (axon_tenant, axon_changed)',
                     index_name, store.relname);
    END IF;
    EXECUTE format('CREATE OR REPLACE TRIGGER axon_row_change BEFORE INSERT OR UPDATE'
                   ' ON axon_stores.%I FOR EACH ROW'
                   ' WHEN (NEW.axon_changed IS DISTINCT FROM pg_current_xact_id())'
                   ' EXECUTE FUNCTION mnemo.mark_row_change()', store.relname);
    CONTINUE WHEN store.corpora IS NULL OR store.corpora = '';
    SELECT coalesce(array_agg(DISTINCT col), ARRAY[]::text[]) INTO identity FROM (
      SELECT a.attname::text AS col
      FROM pg_constraint con CROSS JOIN unnest(con.conkey) AS k(num)
      JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.num
      WHERE con.conrelid = store.oid AND con.contype = 'p' AND a.attname <> 'axon_tenant'
      UNION
      SELECT definition->'corpus'->'documents_store'->>'id_column'
      FROM mnemo.corpora
      WHERE kind = 'store_graph'
        AND definition->'corpus'->'documents_store'->>'store' = store.relname
    ) AS columns WHERE col IS NOT NULL
      AND EXISTS (SELECT FROM pg_attribute WHERE attrelid = store.oid AND attname = col);
    CONTINUE WHEN cardinality(identity) = 0;
    SELECT string_agg(format('OLD.%I', col), ', '), string_agg(format('NEW.%I', col), ', ')
      INTO old_row, new_row FROM unnest(identity) AS col;
    EXECUTE format('CREATE OR REPLACE TRIGGER axon_graph_reset AFTER DELETE OR TRUNCATE'
                   ' ON axon_stores.%I FOR EACH STATEMENT'
                   ' EXECUTE FUNCTION mnemo.reset_graph_revision(%s)', store.relname,
                   store.corpora);
    EXECUTE format('CREATE OR REPLACE TRIGGER axon_identity_reset AFTER UPDATE'
                   ' ON axon_stores.%I FOR EACH ROW WHEN (ROW(%s) IS DISTINCT FROM ROW(%s))'
                   ' EXECUTE FUNCTION mnemo.reset_graph_revision(%s)', store.relname,
                   old_row, new_row,
                   store.corpora);
  END LOOP;
END
$$;
"""

_UNDO_STORES = r"""
DO $$
DECLARE
  store record;
BEGIN
  FOR store IN
    SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = 'axon_stores' AND c.relkind IN ('r', 'p')
  LOOP
    EXECUTE format('DROP TRIGGER IF EXISTS axon_identity_reset ON axon_stores.%I', store.relname);
    EXECUTE format('DROP TRIGGER IF EXISTS axon_graph_reset ON axon_stores.%I', store.relname);
    EXECUTE format('DROP TRIGGER IF EXISTS axon_row_change ON axon_stores.%I', store.relname);
    EXECUTE format('ALTER TABLE axon_stores.%I DROP COLUMN IF EXISTS axon_changed', store.relname);
  END LOOP;
END
$$;
"""


def upgrade() -> None:
    op.execute(
        "ALTER TABLE mnemo.graph_revisions"
        " ADD COLUMN IF NOT EXISTS reset_revision bigint NOT NULL DEFAULT 0"
    )
    op.execute(_FUNCTIONS)
    op.execute(_STORES)
    op.execute("GRANT SELECT, INSERT ON mnemo.inbox TO mnemo_navigator")


def downgrade() -> None:
    op.execute("REVOKE SELECT, INSERT ON mnemo.inbox FROM mnemo_navigator")
    op.execute(_UNDO_STORES)
    op.execute("DROP FUNCTION IF EXISTS mnemo.reset_graph_revision()")
    op.execute("DROP FUNCTION IF EXISTS mnemo.mark_row_change()")
    op.execute("ALTER TABLE mnemo.graph_revisions DROP COLUMN IF EXISTS reset_revision")
