"""Route versions as text, versions of one route side by side, at most one of them active.

Revision ID: 0015_route_versions
Revises: 0012_title_key_columns
Create Date: 2026-12-05

`mnemo.routes.route_version` was an integer and `route_id` the only key, so a version such as
`2026.08.1` (the registry seed's) could not be stored and two versions of a route could not
coexist. The version becomes text (1 to 100 characters; existing rows keep their number, as text),
the key `(route_id, route_version)`, and a partial unique index lets at most one version of a
route be active: the one a prefetch without a version runs. Existing rows have distinct ids, so
they satisfy both.

Downgrading is refused when a route has more than one version or a version that is not an
integer: turning them back would lose rows.
"""

from __future__ import annotations

from alembic import op

revision = "0015_route_versions"
down_revision = "0014_audit_digest_checkpoints"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE mnemo.routes DROP CONSTRAINT routes_pkey")
    op.execute("ALTER TABLE mnemo.routes ALTER COLUMN route_version DROP DEFAULT")
    op.execute(
        "ALTER TABLE mnemo.routes ALTER COLUMN route_version TYPE text USING route_version::text"
    )
    op.execute("ALTER TABLE mnemo.routes ALTER COLUMN route_version SET DEFAULT '1'")
    op.execute(
        "ALTER TABLE mnemo.routes ADD CONSTRAINT routes_route_version_check"
        " CHECK (length(route_version) BETWEEN 1 AND 100)"
    )
    op.execute(
        "ALTER TABLE mnemo.routes ADD CONSTRAINT routes_route_id_check"
        " CHECK (length(route_id) BETWEEN 1 AND 200)"
    )
    op.execute("ALTER TABLE mnemo.routes ADD PRIMARY KEY (route_id, route_version)")
    op.execute("CREATE UNIQUE INDEX routes_one_active ON mnemo.routes (route_id) WHERE active")


def downgrade() -> None:
    op.execute(
        """
        DO $$
        BEGIN
          IF EXISTS (SELECT 1 FROM mnemo.routes GROUP BY route_id HAVING count(*) > 1)
             OR EXISTS (SELECT 1 FROM mnemo.routes WHERE route_version !~ '^[0-9]{1,9}$') THEN
            RAISE EXCEPTION 'mnemo.routes holds several versions of a route or a version that is'
              ' not an integer; remove them before downgrading past 0015_route_versions';
          END IF;
        END
        $$
        """
    )
    op.execute("DROP INDEX mnemo.routes_one_active")
    op.execute("ALTER TABLE mnemo.routes DROP CONSTRAINT routes_pkey")
    op.execute("ALTER TABLE mnemo.routes DROP CONSTRAINT routes_route_id_check")
    op.execute("ALTER TABLE mnemo.routes DROP CONSTRAINT routes_route_version_check")
    op.execute("ALTER TABLE mnemo.routes ALTER COLUMN route_version DROP DEFAULT")
    op.execute(
        "ALTER TABLE mnemo.routes ALTER COLUMN route_version TYPE integer"
        " USING route_version::integer"
    )
    op.execute("ALTER TABLE mnemo.routes ALTER COLUMN route_version SET DEFAULT 1")
    op.execute("ALTER TABLE mnemo.routes ADD PRIMARY KEY (route_id)")
