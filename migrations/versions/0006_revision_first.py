"""The graph revision is taken before a write statement locks its rows, not after.

Revision ID: 0006_revision_first
Revises: 0004_service_roles
Create Date: 2026-12-03

Every store table has a statement-level trigger that bumps the revision row of each corpus reading
it. Run AFTER the statement, it took the revision row once the statement already held its rows, so
a transaction writing twice locked rows → revision → rows, while a concurrent one held its own rows
and waited for the revision: a deadlock (8 workers, 37 of 120 two-statement transactions). Run
BEFORE the statement, every writer of a corpus takes that corpus's revision row first, and the
rows only while holding it, in every statement: writers of one corpus queue on the revision row
and never wait for each other in a cycle. (Readers never lock it.) The bump before the statement
is as visible as the one after: both become visible at commit, together with the rows.

`mnemo apply` creates new triggers the same way (`mnemo_store.ddl`). This revision re-creates the
triggers of the stores that exist, keeping each one's corpus arguments.
"""

from __future__ import annotations

from alembic import op

revision = "0006_revision_first"
down_revision = "0004_service_roles"
branch_labels = None
depends_on = None

_RETIME = """
DO $$
DECLARE
  definition text;
BEGIN
  FOR definition IN
    SELECT pg_get_triggerdef(t.oid)
    FROM pg_trigger t
    JOIN pg_class c ON c.oid = t.tgrelid
    JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE t.tgname = 'axon_graph_revision' AND n.nspname = 'axon_stores' AND NOT t.tgisinternal
  LOOP
    EXECUTE regexp_replace(
      definition, '^CREATE TRIGGER (\\S+) {old} ', 'CREATE OR REPLACE TRIGGER \\1 {new} '
    );
  END LOOP;
END
$$;
"""


def upgrade() -> None:
    op.execute(_RETIME.format(old="AFTER", new="BEFORE"))


def downgrade() -> None:
    op.execute(_RETIME.format(old="BEFORE", new="AFTER"))
