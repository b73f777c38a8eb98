"""Declared corpora (forms a and c) ranked by Postgres full text, as store corpora are.

Revision ID: 0018_inline_fulltext
Revises: 0017_http_writes
Create Date: 2026-12-05

`mnemo.corpus_documents` gets a stored tsvector, `fulltext`, generated from the title and the
content exactly as a documents store's hidden full-text column is generated from its title and
body columns (migration 0009, `mnemo_store.ddl.fulltext_expression`: the `simple` configuration
over `title || ' ' || content`), and a GIN index on it. Retrieve and the search gateway then rank
an inline or declared-graph corpus with the same `ts_rank_cd` over the same tsquery as a living
graph, so the same texts rank and score the same whichever form holds them. The table has no
row-level security (it is deployment-wide), so `@@` is an index lookup for every role.

No grant is added: the navigator and application roles already read the table (migration 0016);
the generated column is computed by Postgres on the owner's inserts.
"""

from __future__ import annotations

from alembic import op

revision = "0018_inline_fulltext"
down_revision = "0017_http_writes"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        "ALTER TABLE mnemo.corpus_documents ADD COLUMN fulltext tsvector GENERATED ALWAYS AS"
        " (to_tsvector('simple'::regconfig,"
        " coalesce(title::text, '') || ' ' || coalesce(content::text, ''))) STORED"
    )
    op.execute(
        "CREATE INDEX corpus_documents_fulltext ON mnemo.corpus_documents USING gin (fulltext)"
    )


def downgrade() -> None:
    op.execute("DROP INDEX mnemo.corpus_documents_fulltext")
    op.execute("ALTER TABLE mnemo.corpus_documents DROP COLUMN fulltext")
