"""Foundation: schema `mnemo`, the tenants table, grants, and the tenant row-level-security helper.

Revision ID: 0001_foundation
Revises:
Create Date: 2026-12-02

Roles (`mnemo_owner`, `mnemo_app`, `mnemo_relay`) are created by whoever provisions the database
(`deploy/local/postgres.sh` here, the Helm chart's bootstrap elsewhere); this revision checks them and
fails with a clear message when one is missing or too powerful.
"""

from __future__ import annotations

from alembic import op

revision = "0001_foundation"
down_revision = None
branch_labels = None
depends_on = None

ROLE_CHECK = """
DO $$
DECLARE
  missing text;
  powerful text;
BEGIN
  SELECT string_agg(r, ', ') INTO missing
  FROM unnest(ARRAY['mnemo_app', 'mnemo_relay']) AS r
  WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = r);
  IF missing IS NOT NULL THEN
    RAISE EXCEPTION 'roles missing: %; create them (LOGIN, NOSUPERUSER, NOBYPASSRLS) before migrating',
      missing;
  END IF;
  SELECT string_agg(rolname, ', ') INTO powerful
  FROM pg_roles WHERE rolname IN ('mnemo_app', 'mnemo_relay') AND (rolsuper OR rolbypassrls);
  IF powerful IS NOT NULL THEN
    RAISE EXCEPTION 'roles % must have neither SUPERUSER nor BYPASSRLS: row-level security would not apply',
      powerful;
  END IF;
END
$$;
"""

# One way to give any table tenant row-level security, used by later revisions and by
# `mnemo apply` for declared stores. The predicate stays inline in the policy (a plpgsql
# wrapper in the predicate itself turns index scans into sequential scans), and NULLIF maps
# the '' that current_setting returns once a session has touched the setting to NULL, so an
# unset tenant matches no row instead of erroring.
ENABLE_TENANT_RLS = """
CREATE OR REPLACE FUNCTION mnemo.enable_tenant_rls(target regclass) RETURNS void
LANGUAGE plpgsql AS $fn$
BEGIN
  EXECUTE format('ALTER TABLE %s ENABLE ROW LEVEL SECURITY', target);
  EXECUTE format('ALTER TABLE %s FORCE ROW LEVEL SECURITY', target);
  EXECUTE format('DROP POLICY IF EXISTS tenant_isolation ON %s', target);
  EXECUTE format(
    'CREATE POLICY tenant_isolation ON %s '
    'USING (axon_tenant = NULLIF(current_setting(''mnemo.tenant'', true), '''')::uuid) '
    'WITH CHECK (axon_tenant = NULLIF(current_setting(''mnemo.tenant'', true), '''')::uuid)',
    target);
END
$fn$;
REVOKE ALL ON FUNCTION mnemo.enable_tenant_rls(regclass) FROM PUBLIC;
"""


def upgrade() -> None:
    op.execute(ROLE_CHECK)
    op.execute("CREATE SCHEMA IF NOT EXISTS mnemo")
    op.execute("REVOKE ALL ON SCHEMA mnemo FROM PUBLIC")
    op.execute("GRANT USAGE ON SCHEMA mnemo TO mnemo_app, mnemo_relay")
    op.execute(
        """
        CREATE TABLE mnemo.tenants (
            tenant_id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
            name text NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 200),
            created_at timestamptz NOT NULL DEFAULT now()
        )
        """
    )
    # Services look tenants up (ingest refuses unknown ones); only operators create them.
    op.execute("GRANT SELECT ON mnemo.tenants TO mnemo_app")
    op.execute(ENABLE_TENANT_RLS)


def downgrade() -> None:
    op.execute("DROP FUNCTION IF EXISTS mnemo.enable_tenant_rls(regclass)")
    op.execute("DROP TABLE IF EXISTS mnemo.tenants")
