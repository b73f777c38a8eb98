"""Tenant policies read the tenant once per statement instead of once per row.

Revision ID: 0003_tenant_policy_once
Revises: 0002_system_tables
Create Date: 2026-12-03

The policy predicate `axon_tenant = NULLIF(current_setting('mnemo.tenant', true), '')::uuid` is
evaluated for every row a sequential scan meets (a setting lookup and a uuid parse per row).
Wrapped in a scalar subquery, Postgres evaluates it once per statement (an InitPlan) and still
uses it as an index condition. Measured under RLS on 500k edge rows: counting them 174 → 53 ms, the
graph-load edge query 325 → 85 ms. The predicate means exactly what it meant (no tenant set: NULL,
no rows, every write refused); ENABLE and FORCE are untouched.

`mnemo.enable_tenant_rls` (which `mnemo apply` calls for every new store) writes the new form, and
every existing `tenant_isolation` policy (system tables and stores) is altered in place, in this
migration's transaction, so no table is ever without its policy.
"""

from __future__ import annotations

from alembic import op

revision = "0003_tenant_policy_once"
down_revision = "0002_system_tables"
branch_labels = None
depends_on = None

ONCE = "(SELECT NULLIF(current_setting('mnemo.tenant', true), '')::uuid)"
PER_ROW = "NULLIF(current_setting('mnemo.tenant', true), '')::uuid"


def _enable_function(tenant: str) -> str:
    quoted = tenant.replace("'", "''")
    return f"""
CREATE OR REPLACE FUNCTION mnemo.enable_tenant_rls(target regclass) RETURNS void
LANGUAGE plpgsql AS $fn$
BEGIN
  EXECUTE format('ALTER TABLE %s ENABLE ROW LEVEL SECURITY', target);
  EXECUTE format('ALTER TABLE %s FORCE ROW LEVEL SECURITY', target);
  EXECUTE format('DROP POLICY IF EXISTS tenant_isolation ON %s', target);
  EXECUTE format(
    'CREATE POLICY tenant_isolation ON %s USING (axon_tenant = {quoted}) '
    'WITH CHECK (axon_tenant = {quoted})',
    target);
END
$fn$;
"""


def _alter_existing(tenant: str) -> str:
    quoted = tenant.replace("'", "''")
    return f"""
DO $do$
DECLARE
  target regclass;
BEGIN
  FOR target IN SELECT polrelid::regclass FROM pg_policy WHERE polname = 'tenant_isolation' LOOP
    EXECUTE format(
      'ALTER POLICY tenant_isolation ON %s USING (axon_tenant = {quoted}) '
      'WITH CHECK (axon_tenant = {quoted})',
      target);
  END LOOP;
END
$do$;
"""


def upgrade() -> None:
    op.execute(_enable_function(ONCE))
    op.execute("REVOKE ALL ON FUNCTION mnemo.enable_tenant_rls(regclass) FROM PUBLIC")
    op.execute(_alter_existing(ONCE))


def downgrade() -> None:
    op.execute(_enable_function(PER_ROW))
    op.execute("REVOKE ALL ON FUNCTION mnemo.enable_tenant_rls(regclass) FROM PUBLIC")
    op.execute(_alter_existing(PER_ROW))
