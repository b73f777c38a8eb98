"""Tenant names follow one pattern and are unique ignoring case.

Revision ID: 0005_tenant_names
Revises: 0004_service_roles
Create Date: 2026-12-04

The rule is `mnemo_store.registry.TENANT_NAME_PATTERN`: 1 to 63 characters of lower-case ASCII
letters, digits, `-` and `_`, starting with a letter or digit. Before it, a name could hold control
characters and ANSI escapes (a name with a newline printed as a forged row of `mnemo tenant list`)
and case or homoglyph twins (`Acme` beside `acme`).

- `tenants_name_pattern`: a CHECK, added NOT VALID, so rows written before this revision stay
  readable while every new or renamed row must follow the rule. The migration prints (NOTICE) each
  existing name that breaks it; rename those (`UPDATE mnemo.tenants SET name = 'acme-corp' WHERE
  tenant_id = '…'`), then `ALTER TABLE mnemo.tenants VALIDATE CONSTRAINT tenants_name_pattern`.
- `tenants_name_lower_key`: a unique index on `lower(name)`. An index cannot be NOT VALID: when
  existing names are case twins, the migration stops and names them; rename all but one of each,
  then run it again.

The pattern is repeated here, not imported, because a migration states the rule as it was when it
ran (a test pins the two together).
"""

from __future__ import annotations

from alembic import op

revision = "0005_tenant_names"
down_revision = "0004_service_roles"
branch_labels = None
depends_on = None

TENANT_NAME_PATTERN = "[a-z0-9][a-z0-9_-]{0,62}"

UPGRADE = f"""
DO $$
DECLARE
  twins text;
  breaking record;
BEGIN
  SELECT string_agg(names, '; ') INTO twins FROM (
    SELECT string_agg(format('%L (%s)', name, tenant_id), ', ' ORDER BY name) AS names
    FROM mnemo.tenants GROUP BY lower(name) HAVING count(*) > 1
  ) AS groups;
  IF twins IS NOT NULL THEN
    RAISE EXCEPTION 'tenant names must be unique ignoring case, and these are not: %', twins
      USING HINT = 'rename all but one of each group (UPDATE mnemo.tenants SET name = ... '
                   'WHERE tenant_id = ...), then run the migration again';
  END IF;
  FOR breaking IN
    SELECT tenant_id, name FROM mnemo.tenants
    WHERE NOT (name COLLATE "C" ~ '^{TENANT_NAME_PATTERN}$') ORDER BY name
  LOOP
    RAISE NOTICE 'tenant % is named %, which breaks the tenant-name rule ({TENANT_NAME_PATTERN}): '
                 'rename it, then VALIDATE CONSTRAINT tenants_name_pattern',
      breaking.tenant_id, quote_literal(breaking.name);
  END LOOP;
END
$$;
ALTER TABLE mnemo.tenants ADD CONSTRAINT tenants_name_pattern
  CHECK (name COLLATE "C" ~ '^{TENANT_NAME_PATTERN}$') NOT VALID;
CREATE UNIQUE INDEX tenants_name_lower_key ON mnemo.tenants (lower(name));
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS mnemo.tenants_name_lower_key")
    op.execute("ALTER TABLE mnemo.tenants DROP CONSTRAINT IF EXISTS tenants_name_pattern")
