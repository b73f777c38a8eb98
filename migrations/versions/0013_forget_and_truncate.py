"""Revisions that cannot be skipped (TRUNCATE, deletes across tenants); ingest may forget a row.

Revision ID: 0013_forget_and_truncate
Revises: 0012_title_key_columns
Create Date: 2026-12-05

A store's revision trigger bumped only the revision rows of the tenant set in `mnemo.tenant`, and
its reset trigger recorded a reset for that tenant only. Two statements remove rows of other
tenants while doing so: TRUNCATE, which row-level security does not filter, and a DELETE by a role
that bypasses it, with or without a tenant set. The navigators' caches kept serving those rows,
because nothing told them their corpus had moved. Now:

- TRUNCATE: a BEFORE TRUNCATE statement trigger (`axon_graph_truncate`,
  `mnemo.truncate_graph_revision`) bumps the revision of every tenant of every corpus reading the
  store, and records it as a reset, before the table is emptied (the table lock is taken first,
  then the revision rows, as every writer does). It runs as the owner, which sees every tenant's
  revision row through the `revision_sweep` policy, only while this function sets
  `mnemo.revision_sweep` (a policy for the owner alone, who owns the table anyway). Tenants without a revision row get one (registered tenants).
- DELETE: the reset trigger (`axon_graph_reset`) becomes an AFTER DELETE statement trigger over the
  deleted rows (`REFERENCING OLD TABLE`, `mnemo.reset_deleted_graph_revision`): every tenant a
  row was deleted for gets a reset, and a tenant other than the one set (whose revision the BEFORE
  trigger already took) a bump as well. A delete that removed nothing records nothing. It runs as
  the owner with the sweep (below), so it reaches the revision rows of exactly the tenants whose
  rows the statement deleted, whoever deleted them: a role that bypasses row-level security, or
  the owner on a table whose policy it no longer forces.
- The revision trigger no longer fires on TRUNCATE (its work is the truncate trigger's).

`mnemo apply` creates the same triggers for new stores (`mnemo_store.ddl`); this revision replaces
those of the stores that exist, keeping each one's corpus arguments.

Forgetting a memory (`mnemo_ingest.use_cases.Forget`): ingest, the only writer, may now delete
store rows (the owner's default privileges in `axon_stores`, and the stores that exist) and read
and delete the navigation outcomes that name a forgotten document. It already deletes pending
edges. No other role gains DELETE.
"""

from __future__ import annotations

from alembic import op

revision = "0013_forget_and_truncate"
down_revision = "0012_title_key_columns"
branch_labels = None
depends_on = None

_FUNCTIONS = """
CREATE OR REPLACE FUNCTION mnemo.reset_deleted_graph_revision() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
  current_tenant uuid := NULLIF(current_setting('mnemo.tenant', true), '')::uuid;
  sweep text := current_setting('mnemo.revision_sweep', true);
BEGIN
  IF TG_NARGS = 0 THEN
    RETURN NULL;
  END IF;
  PERFORM set_config('mnemo.revision_sweep', 'on', true);
  INSERT INTO mnemo.graph_revisions AS g (axon_tenant, corpus_id, revision, reset_revision)
  SELECT gone.tenant, corpus, 1, 1
  FROM (SELECT DISTINCT axon_tenant AS tenant FROM axon_gone) AS gone
  CROSS JOIN unnest(TG_ARGV) AS corpus
  ORDER BY 1, 2
  ON CONFLICT (axon_tenant, corpus_id) DO UPDATE
  SET revision = g.revision + CASE WHEN g.axon_tenant = current_tenant THEN 0 ELSE 1 END,
      reset_revision = g.revision + CASE WHEN g.axon_tenant = current_tenant THEN 0 ELSE 1 END,
      updated_at = now();
  PERFORM set_config('mnemo.revision_sweep', coalesce(sweep, ''), true);
  RETURN NULL;
END
$fn$;

CREATE OR REPLACE FUNCTION mnemo.truncate_graph_revision() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
  sweep text := current_setting('mnemo.revision_sweep', true);
BEGIN
  IF TG_NARGS = 0 THEN
    RETURN NULL;
  END IF;
  PERFORM set_config('mnemo.revision_sweep', 'on', true);
  INSERT INTO mnemo.graph_revisions AS g (axon_tenant, corpus_id, revision, reset_revision)
  SELECT tenant, corpus, 1, 1
  FROM (SELECT axon_tenant AS tenant FROM mnemo.graph_revisions WHERE corpus_id = ANY(TG_ARGV)
        UNION SELECT tenant_id FROM mnemo.tenants) AS known
  CROSS JOIN unnest(TG_ARGV) AS corpus
  ORDER BY 1, 2
  ON CONFLICT (axon_tenant, corpus_id) DO UPDATE
  SET revision = g.revision + 1, reset_revision = g.revision + 1, updated_at = now();
  PERFORM set_config('mnemo.revision_sweep', coalesce(sweep, ''), true);
  RETURN NULL;
END
$fn$;
REVOKE ALL ON FUNCTION mnemo.truncate_graph_revision() FROM PUBLIC;
REVOKE ALL ON FUNCTION mnemo.reset_deleted_graph_revision() FROM PUBLIC;

CREATE POLICY revision_sweep ON mnemo.graph_revisions TO CURRENT_USER
  USING (current_setting('mnemo.revision_sweep', true) = 'on')
  WITH CHECK (current_setting('mnemo.revision_sweep', true) = 'on');
"""

# For each store with a revision trigger: that trigger without TRUNCATE, the reset trigger over the
# deleted rows, the truncate trigger; all with the revision trigger's corpus arguments.
_STORES = r"""
DO $$
DECLARE
  store record;
BEGIN
  FOR store IN
    SELECT c.relname,
           (SELECT substring(pg_get_triggerdef(t.oid) FROM 'bump_graph_revision\((.*)\)$')
            FROM pg_trigger t
            WHERE t.tgrelid = c.oid AND t.tgname = 'axon_graph_revision') AS corpora
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = 'axon_stores' AND c.relkind IN ('r', 'p')
  LOOP
    CONTINUE WHEN store.corpora IS NULL OR store.corpora = '';
    EXECUTE format('CREATE OR REPLACE TRIGGER axon_graph_revision BEFORE {revision_events}'
                   ' ON axon_stores.%I FOR EACH STATEMENT'
                   ' EXECUTE FUNCTION mnemo.bump_graph_revision(%s)', store.relname,
                   store.corpora);
    EXECUTE format('DROP TRIGGER IF EXISTS axon_graph_reset ON axon_stores.%I', store.relname);
    EXECUTE format('CREATE TRIGGER axon_graph_reset {reset}'
                   ' ON axon_stores.%I {referencing} FOR EACH STATEMENT'
                   ' EXECUTE FUNCTION mnemo.{reset_function}(%s)', store.relname, store.corpora);
    {truncate}
  END LOOP;
END
$$;
"""

_UP = _STORES.format(
    revision_events="INSERT OR UPDATE OR DELETE",
    reset="AFTER DELETE",
    referencing="REFERENCING OLD TABLE AS axon_gone",
    reset_function="reset_deleted_graph_revision",
    truncate=(
        "EXECUTE format('CREATE OR REPLACE TRIGGER axon_graph_truncate BEFORE TRUNCATE"
        " ON axon_stores.%I FOR EACH STATEMENT"
        " EXECUTE FUNCTION mnemo.truncate_graph_revision(%s)', store.relname, store.corpora);"
    ),
)
_DOWN = _STORES.format(
    revision_events="INSERT OR UPDATE OR DELETE OR TRUNCATE",
    reset="AFTER DELETE OR TRUNCATE",
    referencing="",
    reset_function="reset_graph_revision",
    truncate=(
        "EXECUTE format('DROP TRIGGER IF EXISTS axon_graph_truncate ON axon_stores.%I',"
        " store.relname);"
    ),
)


def upgrade() -> None:
    op.execute(_FUNCTIONS)
    op.execute(_UP)
    op.execute("GRANT DELETE ON ALL TABLES IN SCHEMA axon_stores TO mnemo_ingest")
    op.execute(
        "ALTER DEFAULT PRIVILEGES IN SCHEMA axon_stores GRANT DELETE ON TABLES TO mnemo_ingest"
    )
    op.execute("GRANT SELECT, DELETE ON mnemo.nav_outcomes TO mnemo_ingest")


def downgrade() -> None:
    op.execute("REVOKE SELECT, DELETE ON mnemo.nav_outcomes FROM mnemo_ingest")
    op.execute(
        "ALTER DEFAULT PRIVILEGES IN SCHEMA axon_stores REVOKE DELETE ON TABLES FROM mnemo_ingest"
    )
    op.execute("REVOKE DELETE ON ALL TABLES IN SCHEMA axon_stores FROM mnemo_ingest")
    op.execute(_DOWN)
    op.execute("DROP POLICY IF EXISTS revision_sweep ON mnemo.graph_revisions")
    op.execute("DROP FUNCTION IF EXISTS mnemo.truncate_graph_revision()")
    op.execute("DROP FUNCTION IF EXISTS mnemo.reset_deleted_graph_revision()")
