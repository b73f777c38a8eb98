"""HTTP writes wait for the outbox relay: its claim reads the unpublished rows of its own topics
through an index, whatever other topics hold.

Revision ID: 0017_http_writes
Revises: 0012_title_key_columns
Create Date: 2026-12-05

`POST /v1/stores/{store}/rows` answers once the navigator's relay has published the rows it
queued, so every claim of that relay is on the request's path. A relay claims the oldest
unpublished rows of the topics it relays; the partial index on `seq` alone serves that only while
the unpublished rows are mostly its own, and rows of a topic no running relay takes (a stopped
service's, a test's) made every claim a scan of all of them (74,000 such rows: 40 ms a claim,
idle or not). The index on `(topic, seq)` of the unpublished rows reads only the relay's topics.

No grant is added: the navigator role could already insert and read its tenants' outbox rows
(migration 0004) and read the inbox (0008), which is all the write path and `?wait=` need.
"""

from __future__ import annotations

from alembic import op

revision = "0017_http_writes"
down_revision = "0016_corpus_forms"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        "CREATE INDEX IF NOT EXISTS outbox_unpublished_by_topic ON mnemo.outbox (topic, seq)"
        " WHERE published_at IS NULL"
    )


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS mnemo.outbox_unpublished_by_topic")
