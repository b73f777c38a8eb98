"""The edge classifier reads the corpora's change marks: it keeps the scopes it serves in memory
and follows their changes as the navigator's graph cache does.

Revision ID: 0011_classifier_change_marks
Revises: 0010_column_grants
Create Date: 2026-12-04

`mnemo_classifier` may SELECT `mnemo.graph_revisions` (a corpus's revision and reset revision, per
tenant under its row-level security policy), so it can tell which rows changed since it read a
scope (`mnemo_store.refresh`) and when a reset means it must read the scope in full. It still
writes nothing.
"""

from __future__ import annotations

from alembic import op

revision = "0011_classifier_change_marks"
down_revision = "0010_column_grants"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("GRANT SELECT ON mnemo.graph_revisions TO mnemo_classifier")


def downgrade() -> None:
    op.execute("REVOKE SELECT ON mnemo.graph_revisions FROM mnemo_classifier")
