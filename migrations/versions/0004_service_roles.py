"""One least-privilege login role per service.

Revision ID: 0004_service_roles
Revises: 0003_tenant_policy_once
Create Date: 2026-12-02

Each service connects as its own role (ARCHITECTURE §2), created, like the others, by whoever
provisions the database (`deploy/local/postgres.sh`, `deploy/compose/init-roles.sql`, the Helm
chart's bootstrap). This revision checks them and gives each only what its work needs:

| role | may |
|---|---|
| `mnemo_ingest` | read tenants and corpora; read, insert and update store rows; inbox, outbox, pending edges, graph revisions |
| `mnemo_classifier` | read tenants, corpora and store rows (it writes nothing: its edges go through ingest) |
| `mnemo_navigator` | read tenants, corpora, routes and store rows; update store rows (edge weights); outcomes, outbox, graph revisions |
| `mnemo_audit` | read tenants; read the audit log (appending is granted by the audit-chain revision) |

Store tables are created later by `mnemo apply` as the owner role, so the store grants are default
privileges of the owner in schema `axon_stores` (plus the same grants on the stores that already
exist). No role here may delete a store row, and none has BYPASSRLS: every grant is still filtered
by the tenant policy.
"""

from __future__ import annotations

from alembic import op

revision = "0004_service_roles"
down_revision = "0003_tenant_policy_once"
branch_labels = None
depends_on = None

SERVICE_ROLES = ("mnemo_ingest", "mnemo_classifier", "mnemo_navigator", "mnemo_audit")

ROLE_CHECK = """
DO $$
DECLARE
  missing text;
  powerful text;
BEGIN
  SELECT string_agg(r, ', ') INTO missing
  FROM unnest(ARRAY['mnemo_ingest', 'mnemo_classifier', 'mnemo_navigator', 'mnemo_audit']) AS r
  WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = r);
  IF missing IS NOT NULL THEN
    RAISE EXCEPTION 'service roles missing: %; create them (LOGIN, NOSUPERUSER, NOBYPASSRLS) before migrating (deploy/local/postgres.sh does it for the local stack)',
      missing;
  END IF;
  SELECT string_agg(rolname, ', ') INTO powerful
  FROM pg_roles
  WHERE rolname IN ('mnemo_ingest', 'mnemo_classifier', 'mnemo_navigator', 'mnemo_audit')
    AND (rolsuper OR rolbypassrls);
  IF powerful IS NOT NULL THEN
    RAISE EXCEPTION 'roles % must have neither SUPERUSER nor BYPASSRLS: row-level security would not apply',
      powerful;
  END IF;
END
$$;
"""

# (privileges, role) on every store table, existing and future.
STORE_GRANTS = (
    ("SELECT, INSERT, UPDATE", "mnemo_ingest"),
    ("SELECT", "mnemo_classifier"),
    ("SELECT, UPDATE", "mnemo_navigator"),
)

SYSTEM_GRANTS = (
    "GRANT USAGE ON SCHEMA mnemo TO mnemo_ingest, mnemo_classifier, mnemo_navigator, mnemo_audit",
    "GRANT USAGE ON SCHEMA axon_stores TO mnemo_ingest, mnemo_classifier, mnemo_navigator",
    "GRANT SELECT ON mnemo.tenants TO mnemo_ingest, mnemo_classifier, mnemo_navigator, mnemo_audit",
    "GRANT SELECT ON mnemo.corpora TO mnemo_ingest, mnemo_classifier, mnemo_navigator",
    "GRANT SELECT ON mnemo.routes TO mnemo_navigator",
    # ingest: dedup, the outbox, early edges, and the revision bump its writes trigger
    "GRANT SELECT, INSERT ON mnemo.inbox TO mnemo_ingest",
    "GRANT SELECT, INSERT ON mnemo.outbox TO mnemo_ingest, mnemo_navigator",
    "GRANT SELECT, INSERT, DELETE ON mnemo.pending_edges TO mnemo_ingest",
    "GRANT SELECT, INSERT, UPDATE ON mnemo.graph_revisions TO mnemo_ingest, mnemo_navigator",
    # navigator: the memory history of adaptive corpora
    "GRANT SELECT, INSERT ON mnemo.nav_outcomes TO mnemo_navigator",
    "GRANT SELECT ON mnemo.audit_log TO mnemo_audit",
    "GRANT USAGE ON ALL SEQUENCES IN SCHEMA mnemo TO mnemo_ingest, mnemo_navigator",
)


def upgrade() -> None:
    op.execute(ROLE_CHECK)
    for statement in SYSTEM_GRANTS:
        op.execute(statement)
    for privileges, role in STORE_GRANTS:
        op.execute(f"GRANT {privileges} ON ALL TABLES IN SCHEMA axon_stores TO {role}")
        op.execute(
            f"ALTER DEFAULT PRIVILEGES IN SCHEMA axon_stores GRANT {privileges} ON TABLES TO {role}"
        )


def downgrade() -> None:
    for privileges, role in STORE_GRANTS:
        op.execute(
            "ALTER DEFAULT PRIVILEGES IN SCHEMA axon_stores"
            f" REVOKE {privileges} ON TABLES FROM {role}"
        )
    for role in SERVICE_ROLES:
        op.execute(f"REVOKE ALL ON ALL TABLES IN SCHEMA axon_stores FROM {role}")
        op.execute(f"REVOKE ALL ON ALL TABLES IN SCHEMA mnemo FROM {role}")
        op.execute(f"REVOKE ALL ON ALL SEQUENCES IN SCHEMA mnemo FROM {role}")
        op.execute(f"REVOKE ALL ON SCHEMA mnemo, axon_stores FROM {role}")
