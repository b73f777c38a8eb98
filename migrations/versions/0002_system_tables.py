"""System tables: registry, routes, outbox, inbox, pending edges, outcomes, audit log, graph revisions.

Revision ID: 0002_system_tables
Revises: 0001_foundation
Create Date: 2026-12-02

Also creates the schema `axon_stores`, where `mnemo apply` creates the declared stores (one table per
`axonstore`, named exactly as declared), and the trigger function that bumps a corpus's graph
revision in the same transaction as every write to its stores.

Tables holding tenant rows carry `axon_tenant uuid NOT NULL`, lead their keys with it and get
`mnemo.enable_tenant_rls` (ENABLE + FORCE + the NULLIF policy). The deployment-wide tables
(`corpora`, `routes`) have no tenant column: the application role may only read them.
"""

from __future__ import annotations

from alembic import op

revision = "0002_system_tables"
down_revision = "0001_foundation"
branch_labels = None
depends_on = None

TENANT_TABLES = (
    "mnemo.outbox",
    "mnemo.inbox",
    "mnemo.pending_edges",
    "mnemo.nav_outcomes",
    "mnemo.audit_log",
    "mnemo.graph_revisions",
)

TOUCH_UPDATED_AT = """
CREATE FUNCTION mnemo.touch_updated_at() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  NEW.updated_at := now();
  RETURN NEW;
END
$fn$;
"""

# The audit log is evidence: once written, a row never changes and never goes away.
REFUSE_CHANGE = """
CREATE FUNCTION mnemo.refuse_audit_change() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  RAISE EXCEPTION 'mnemo.audit_log is append-only: % is refused; append a new event instead', TG_OP
    USING ERRCODE = 'insufficient_privilege';
END
$fn$;
"""

# Statement-level, so one bulk write bumps once. Under FORCE ROW LEVEL SECURITY every row a
# statement can write belongs to the transaction's tenant, so the tenant comes from the setting;
# with no tenant set nothing can have been written and nothing is bumped. The corpus ids reading
# the store are the trigger's arguments (`mnemo apply` keeps them current). It runs as the invoker,
# so the revision row is itself written under the tenant policy.
BUMP_GRAPH_REVISION = """
CREATE FUNCTION mnemo.bump_graph_revision() RETURNS trigger
LANGUAGE plpgsql AS $fn$
DECLARE
  tenant uuid := NULLIF(current_setting('mnemo.tenant', true), '')::uuid;
BEGIN
  IF tenant IS NULL OR TG_NARGS = 0 THEN
    RETURN NULL;
  END IF;
  INSERT INTO mnemo.graph_revisions AS g (axon_tenant, corpus_id, revision)
  SELECT tenant, corpus, 1 FROM unnest(TG_ARGV) AS corpus ORDER BY corpus
  ON CONFLICT (axon_tenant, corpus_id)
  DO UPDATE SET revision = g.revision + 1, updated_at = now();
  RETURN NULL;
END
$fn$;
"""


def upgrade() -> None:
    op.execute("CREATE SCHEMA axon_stores")
    op.execute("REVOKE ALL ON SCHEMA axon_stores FROM PUBLIC")
    op.execute("GRANT USAGE ON SCHEMA axon_stores TO mnemo_app")
    # Lets a store's full-text GIN index lead with axon_tenant like every other key (a trusted
    # extension: the database owner may create it).
    op.execute("CREATE EXTENSION IF NOT EXISTS btree_gin SCHEMA mnemo")
    op.execute(TOUCH_UPDATED_AT)
    op.execute(REFUSE_CHANGE)

    op.execute(
        """
        CREATE TABLE mnemo.corpora (
            corpus_id text PRIMARY KEY CHECK (length(corpus_id) BETWEEN 1 AND 200),
            display_name text NOT NULL,
            url text NOT NULL,
            collection text NOT NULL DEFAULT '',
            auth text NOT NULL DEFAULT 'workload-oauth',
            owner text NOT NULL DEFAULT '',
            status text NOT NULL DEFAULT 'draft'
                CONSTRAINT corpora_status_check CHECK (status IN ('draft', 'published', 'deprecated')),
            region text,
            updated_at timestamptz NOT NULL DEFAULT now(),
            kind text NOT NULL
                CONSTRAINT corpora_kind_check
                CHECK (kind IN ('inline', 'mcp', 'graph', 'store_graph', 'directory', 'external')),
            definition jsonb NOT NULL,
            version text NOT NULL
        )
        """
    )
    op.execute(
        "CREATE TRIGGER corpora_updated_at BEFORE UPDATE ON mnemo.corpora"
        " FOR EACH ROW EXECUTE FUNCTION mnemo.touch_updated_at()"
    )

    op.execute(
        """
        CREATE TABLE mnemo.routes (
            route_id text PRIMARY KEY,
            route_version integer NOT NULL DEFAULT 1,
            mode text NOT NULL CHECK (mode IN ('tool', 'deterministic_prefetch')),
            scope jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(scope) = 'array'),
            active boolean NOT NULL DEFAULT true,
            updated_at timestamptz NOT NULL DEFAULT now()
        )
        """
    )
    op.execute(
        "CREATE TRIGGER routes_updated_at BEFORE UPDATE ON mnemo.routes"
        " FOR EACH ROW EXECUTE FUNCTION mnemo.touch_updated_at()"
    )

    op.execute(
        """
        CREATE TABLE mnemo.outbox (
            axon_tenant uuid NOT NULL,
            seq bigint GENERATED ALWAYS AS IDENTITY,
            event_id uuid NOT NULL,
            topic text NOT NULL,
            key bytea NOT NULL,
            payload jsonb NOT NULL,
            headers jsonb NOT NULL DEFAULT '{}',
            created_at timestamptz NOT NULL DEFAULT now(),
            published_at timestamptz,
            PRIMARY KEY (axon_tenant, seq),
            UNIQUE (axon_tenant, event_id)
        )
        """
    )
    # The relay scans every tenant's unpublished rows in order; a partial index keeps that cheap.
    op.execute("CREATE INDEX outbox_unpublished ON mnemo.outbox (seq) WHERE published_at IS NULL")

    op.execute(
        """
        CREATE TABLE mnemo.inbox (
            axon_tenant uuid NOT NULL,
            consumer text NOT NULL,
            event_id uuid NOT NULL,
            processed_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (axon_tenant, consumer, event_id)
        )
        """
    )

    op.execute(
        """
        CREATE TABLE mnemo.pending_edges (
            axon_tenant uuid NOT NULL,
            pending_id bigint GENERATED ALWAYS AS IDENTITY,
            event_id uuid NOT NULL,
            store text NOT NULL,
            row_values jsonb NOT NULL,
            missing text[] NOT NULL,
            received_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (axon_tenant, pending_id),
            UNIQUE (axon_tenant, event_id)
        )
        """
    )
    # Pending edges are swept by age (applied or dead-lettered after the hold time).
    op.execute(
        "CREATE INDEX pending_edges_received ON mnemo.pending_edges (axon_tenant, received_at)"
    )

    op.execute(
        """
        CREATE TABLE mnemo.nav_outcomes (
            axon_tenant uuid NOT NULL,
            corpus_id text NOT NULL,
            scope text NOT NULL,
            seq bigint NOT NULL,
            query text NOT NULL,
            path text[] NOT NULL,
            traversed jsonb NOT NULL DEFAULT '[]',
            score double precision NOT NULL CHECK (score >= 0 AND score <= 1),
            created_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (axon_tenant, corpus_id, scope, seq)
        )
        """
    )

    op.execute(
        """
        CREATE TABLE mnemo.audit_log (
            axon_tenant uuid NOT NULL,
            seq bigint NOT NULL,
            event_id uuid NOT NULL,
            kind text NOT NULL,
            occurred_at timestamptz NOT NULL,
            payload jsonb NOT NULL,
            prev_hash bytea NOT NULL,
            hash bytea NOT NULL,
            recorded_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (axon_tenant, seq),
            UNIQUE (axon_tenant, event_id)
        )
        """
    )
    op.execute(
        "CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON mnemo.audit_log"
        " FOR EACH ROW EXECUTE FUNCTION mnemo.refuse_audit_change()"
    )
    op.execute(
        "CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON mnemo.audit_log"
        " FOR EACH STATEMENT EXECUTE FUNCTION mnemo.refuse_audit_change()"
    )

    op.execute(
        """
        CREATE TABLE mnemo.graph_revisions (
            axon_tenant uuid NOT NULL,
            corpus_id text NOT NULL,
            revision bigint NOT NULL CHECK (revision > 0),
            updated_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (axon_tenant, corpus_id)
        )
        """
    )
    op.execute(BUMP_GRAPH_REVISION)

    for table in TENANT_TABLES:
        op.execute(f"SELECT mnemo.enable_tenant_rls('{table}')")

    # The relay publishes every tenant's events, so it gets its own policy on the outbox, and
    # grants on nothing else: it cannot name any other table.
    op.execute(
        "CREATE POLICY relay_publishes ON mnemo.outbox TO mnemo_relay USING (true) WITH CHECK (true)"
    )
    op.execute("GRANT SELECT, UPDATE (published_at) ON mnemo.outbox TO mnemo_relay")

    op.execute("GRANT SELECT ON mnemo.corpora, mnemo.routes TO mnemo_app")
    op.execute("GRANT SELECT, INSERT ON mnemo.outbox, mnemo.inbox, mnemo.nav_outcomes TO mnemo_app")
    # Pending edges leave the table when their document arrives (or when they are dead-lettered).
    op.execute("GRANT SELECT, INSERT, DELETE ON mnemo.pending_edges TO mnemo_app")
    op.execute("GRANT SELECT, INSERT ON mnemo.audit_log TO mnemo_app")
    op.execute("GRANT SELECT, INSERT, UPDATE ON mnemo.graph_revisions TO mnemo_app")
    op.execute("GRANT USAGE ON ALL SEQUENCES IN SCHEMA mnemo TO mnemo_app")


def downgrade() -> None:
    for table in (
        "mnemo.graph_revisions",
        "mnemo.audit_log",
        "mnemo.nav_outcomes",
        "mnemo.pending_edges",
        "mnemo.inbox",
        "mnemo.outbox",
        "mnemo.routes",
        "mnemo.corpora",
    ):
        op.execute(f"DROP TABLE IF EXISTS {table}")
    op.execute("DROP FUNCTION IF EXISTS mnemo.bump_graph_revision()")
    op.execute("DROP FUNCTION IF EXISTS mnemo.refuse_audit_change()")
    op.execute("DROP FUNCTION IF EXISTS mnemo.touch_updated_at()")
    op.execute("DROP SCHEMA IF EXISTS axon_stores CASCADE")
    op.execute("DROP EXTENSION IF EXISTS btree_gin")
