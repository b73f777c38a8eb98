"""Corpus forms (a) and (c): the declared documents of a corpus version, and per-tenant edge memory.

Revision ID: 0016_corpus_forms
Revises: 0012_title_key_columns
Create Date: 2026-12-05

- `mnemo.corpus_documents`: the documents an inline (form a) or declared-graph (form c) corpus
  lists, stored by `mnemo apply` with the corpus version they belong to. Deployment-wide like
  `mnemo.corpora`: code-tracked documents every tenant that may read the corpus shares, so there
  is no tenant column; the owner writes them, the application and navigator roles only read them.
- `mnemo.declared_edge_weights`: the memory of an adaptive declared-graph corpus, an overlay on
  its declared weights per (tenant, corpus, scope, edge): the weight the edge has for that tenant
  and scope after its reinforcements. Tenant rows under row-level security, so one tenant's
  learning never changes another's graph; the navigator inserts and updates them. `last_delta`
  carries a reinforcement into `ON CONFLICT DO UPDATE`, so each one is a single relative update
  `LEAST(GREATEST(weight + Δ, 0.001), 1.0)` that loses nothing to a concurrent one.
"""

from __future__ import annotations

from alembic import op

revision = "0016_corpus_forms"
down_revision = "0015_route_versions"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE mnemo.corpus_documents (
            corpus_id text NOT NULL,
            version text NOT NULL,
            doc_id text NOT NULL CHECK (length(doc_id) BETWEEN 1 AND 1024),
            title text NOT NULL,
            content text NOT NULL,
            category text NOT NULL DEFAULT '',
            tags text[] NOT NULL DEFAULT '{}',
            source_uri text NOT NULL,
            PRIMARY KEY (corpus_id, version, doc_id)
        )
        """
    )
    op.execute("GRANT SELECT ON mnemo.corpus_documents TO mnemo_app, mnemo_navigator")
    op.execute(
        """
        CREATE TABLE mnemo.declared_edge_weights (
            axon_tenant uuid NOT NULL,
            corpus_id text NOT NULL,
            scope text NOT NULL,
            source text NOT NULL,
            target text NOT NULL,
            etype text NOT NULL,
            weight double precision NOT NULL CHECK (weight >= 0.001 AND weight <= 1.0),
            last_delta double precision NOT NULL DEFAULT 0,
            updated_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (axon_tenant, corpus_id, scope, source, target, etype)
        )
        """
    )
    op.execute("SELECT mnemo.enable_tenant_rls('mnemo.declared_edge_weights')")
    op.execute(
        "GRANT SELECT, INSERT, UPDATE ON mnemo.declared_edge_weights TO mnemo_app, mnemo_navigator"
    )


def downgrade() -> None:
    op.execute("DROP TABLE mnemo.declared_edge_weights")
    op.execute("DROP TABLE mnemo.corpus_documents")
