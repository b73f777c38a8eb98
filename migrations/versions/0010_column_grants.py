"""Grants down to columns: edge weights for the navigator, unpublished rows for the relay, and an
audit chain lock no other role can take.

Revision ID: 0010_column_grants
Revises: 0009_fulltext_columns
Create Date: 2026-12-04

- **Navigator**: it writes one thing, the weight column reinforcement moves
  (`mnemo_store.reinforcement`). Its UPDATE on every column of every store (0004, and the owner's
  default privileges in `axon_stores`) becomes UPDATE on the weight column of each relations store
  a registered store corpus reads. `mnemo apply` grants the same for stores and corpora it adds
  (`mnemo_store.ddl`). SELECT stays as it was.
- **Relay**: it reads the rows it is about to publish and sets `published_at`, nothing else. Two
  restrictive policies narrow whatever else would let it see a row (its own `relay_publishes`, and
  the tenant policy should it set a tenant): it sees only unpublished rows (and, inside the
  transaction marking them, the rows it marks), so the payloads of events sent before (audit
  events among them) are out of its reach; and it may only move `published_at` from NULL to its
  transaction's time, never back nor back-dated, so it cannot re-open or rewrite what was sent.
  Its SELECT names the columns it reads (not `created_at`), its UPDATE only `published_at`.
- **Audit chain lock**: any role may take any advisory lock, so `pg_advisory_xact_lock(class,
  hashtext(tenant))` let every other role stall a tenant's audit appends. The chain trigger now
  locks the tenant's row of `mnemo.audit_chain_heads` (its last seq) instead, a table only
  `mnemo_audit` is granted: another role is refused before it can wait on, or hold, that row.
  The head row is updated with every append, so an appender under REPEATABLE READ that waited for
  another gets a serialization failure (and retries) rather than linking to a stale tail.
"""

from __future__ import annotations

from alembic import op

revision = "0010_column_grants"
down_revision = "0009_fulltext_columns"
branch_labels = None
depends_on = None

# The weight column of every relations store a registered store corpus reads (tables and
# columns that exist).
_NAVIGATOR_WEIGHTS = """
DO $$
DECLARE
  m record;
BEGIN
  FOR m IN
    SELECT DISTINCT definition->'corpus'->'relations_store'->>'store' AS store,
                    definition->'corpus'->'relations_store'->>'weight_column' AS weight
    FROM mnemo.corpora WHERE kind = 'store_graph'
  LOOP
    CONTINUE WHEN m.store IS NULL OR m.weight IS NULL;
    CONTINUE WHEN to_regclass(format('axon_stores.%I', m.store)) IS NULL;
    CONTINUE WHEN NOT EXISTS (
      SELECT FROM pg_attribute
      WHERE attrelid = to_regclass(format('axon_stores.%I', m.store))
        AND attname = m.weight AND NOT attisdropped);
    EXECUTE format('GRANT UPDATE (%I) ON axon_stores.%I TO mnemo_navigator', m.weight, m.store);
  END LOOP;
END
$$;
"""

# What the relay may see: unpublished rows, and the rows its own transaction is marking (Postgres
# checks an updated row against the SELECT policies too). now() is the transaction's start, so a
# row marked by an earlier transaction is out of sight.
UNPUBLISHED = "published_at IS NULL OR published_at = now()"
RELAY_COLUMNS = "axon_tenant, seq, event_id, topic, key, payload, headers, published_at"

_CHAIN_HEADS = """
CREATE TABLE mnemo.audit_chain_heads (
    axon_tenant uuid PRIMARY KEY,
    seq bigint NOT NULL CHECK (seq >= 0),
    updated_at timestamptz NOT NULL DEFAULT now()
)
"""

_CHAIN_LINK = """
CREATE OR REPLACE FUNCTION mnemo.audit_chain_link() RETURNS trigger
LANGUAGE plpgsql AS $fn$
DECLARE
  last_seq bigint;
  last_hash bytea;
BEGIN
  IF NEW.seq IS NOT NULL OR NEW.prev_hash IS NOT NULL OR NEW.hash IS NOT NULL THEN
    RAISE EXCEPTION 'mnemo.audit_log: seq, prev_hash and hash are computed by the database; insert the event without them'
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  -- One appender per tenant at a time: the tenant's head row, locked until the transaction ends
  -- (after its commit is visible, so the next appender's fresh snapshot sees the row this one
  -- added). Only the audit role may lock it: no other role is granted the table.
  INSERT INTO mnemo.audit_chain_heads (axon_tenant, seq) VALUES (NEW.axon_tenant, 0)
  ON CONFLICT (axon_tenant) DO NOTHING;
  PERFORM 1 FROM mnemo.audit_chain_heads WHERE axon_tenant = NEW.axon_tenant FOR UPDATE;
  SELECT a.seq, a.hash INTO last_seq, last_hash
    FROM mnemo.audit_log AS a
   WHERE a.axon_tenant = NEW.axon_tenant
   ORDER BY a.seq DESC
   LIMIT 1;
  NEW.seq := coalesce(last_seq, 0) + 1;
  NEW.prev_hash := coalesce(last_hash, '\\x0000000000000000000000000000000000000000000000000000000000000000'::bytea);
  NEW.recorded_at := now();
  NEW.hash := sha256(NEW.prev_hash || convert_to(mnemo.jcs(mnemo.audit_chain_document(
    NEW.axon_tenant, NEW.seq, NEW.event_id, NEW.kind, NEW.occurred_at, NEW.producer, NEW.trace,
    NEW.payload)), 'UTF8'));
  UPDATE mnemo.audit_chain_heads SET seq = NEW.seq, updated_at = now()
   WHERE axon_tenant = NEW.axon_tenant;
  RETURN NEW;
END
$fn$;
"""

# 0007's function, for the downgrade.
_ADVISORY_CHAIN_LINK = """
CREATE OR REPLACE FUNCTION mnemo.audit_chain_link() RETURNS trigger
LANGUAGE plpgsql AS $fn$
DECLARE
  last_seq bigint;
  last_hash bytea;
BEGIN
  IF NEW.seq IS NOT NULL OR NEW.prev_hash IS NOT NULL OR NEW.hash IS NOT NULL THEN
    RAISE EXCEPTION 'mnemo.audit_log: seq, prev_hash and hash are computed by the database; insert the event without them'
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  PERFORM pg_advisory_xact_lock(1835950453, hashtext(NEW.axon_tenant::text));
  SELECT a.seq, a.hash INTO last_seq, last_hash
    FROM mnemo.audit_log AS a
   WHERE a.axon_tenant = NEW.axon_tenant
   ORDER BY a.seq DESC
   LIMIT 1;
  NEW.seq := coalesce(last_seq, 0) + 1;
  NEW.prev_hash := coalesce(last_hash, '\\x0000000000000000000000000000000000000000000000000000000000000000'::bytea);
  NEW.recorded_at := now();
  NEW.hash := sha256(NEW.prev_hash || convert_to(mnemo.jcs(mnemo.audit_chain_document(
    NEW.axon_tenant, NEW.seq, NEW.event_id, NEW.kind, NEW.occurred_at, NEW.producer, NEW.trace,
    NEW.payload)), 'UTF8'));
  RETURN NEW;
END
$fn$;
"""


def upgrade() -> None:
    # navigator: edge weights only
    op.execute(
        "ALTER DEFAULT PRIVILEGES IN SCHEMA axon_stores REVOKE UPDATE ON TABLES FROM mnemo_navigator"
    )
    op.execute("REVOKE UPDATE ON ALL TABLES IN SCHEMA axon_stores FROM mnemo_navigator")
    op.execute(_NAVIGATOR_WEIGHTS)

    # relay: the unpublished rows' columns it sends, and published_at once
    op.execute("REVOKE SELECT, UPDATE ON mnemo.outbox FROM mnemo_relay")
    op.execute(f"GRANT SELECT ({RELAY_COLUMNS}) ON mnemo.outbox TO mnemo_relay")
    op.execute("GRANT UPDATE (published_at) ON mnemo.outbox TO mnemo_relay")
    op.execute(
        "CREATE POLICY relay_reads_unpublished ON mnemo.outbox AS RESTRICTIVE FOR SELECT"
        f" TO mnemo_relay USING ({UNPUBLISHED})"
    )
    op.execute(
        "CREATE POLICY relay_marks_published_once ON mnemo.outbox AS RESTRICTIVE FOR UPDATE"
        " TO mnemo_relay USING (published_at IS NULL) WITH CHECK (published_at = now())"
    )

    # audit chain: a row lock only the audit role can take. Appends wait while the heads are
    # filled from the log, so no link lands between the fill and the new trigger.
    op.execute("LOCK TABLE mnemo.audit_log IN SHARE ROW EXCLUSIVE MODE")
    op.execute(_CHAIN_HEADS)
    op.execute("SELECT mnemo.enable_tenant_rls('mnemo.audit_chain_heads')")
    op.execute(
        "INSERT INTO mnemo.audit_chain_heads (axon_tenant, seq)"
        " SELECT axon_tenant, max(seq) FROM mnemo.audit_log GROUP BY axon_tenant"
    )
    op.execute("GRANT SELECT, INSERT, UPDATE ON mnemo.audit_chain_heads TO mnemo_audit")
    # Straight to the driver: the function body holds '%', which a parameter-aware layer reads.
    op.get_bind().connection.driver_connection.execute(_CHAIN_LINK)


def downgrade() -> None:
    op.get_bind().connection.driver_connection.execute(_ADVISORY_CHAIN_LINK)
    op.execute("DROP TABLE IF EXISTS mnemo.audit_chain_heads")
    op.execute("DROP POLICY IF EXISTS relay_marks_published_once ON mnemo.outbox")
    op.execute("DROP POLICY IF EXISTS relay_reads_unpublished ON mnemo.outbox")
    op.execute("REVOKE SELECT, UPDATE ON mnemo.outbox FROM mnemo_relay")
    op.execute("GRANT SELECT, UPDATE (published_at) ON mnemo.outbox TO mnemo_relay")
    op.execute("GRANT UPDATE ON ALL TABLES IN SCHEMA axon_stores TO mnemo_navigator")
    op.execute(
        "ALTER DEFAULT PRIVILEGES IN SCHEMA axon_stores GRANT UPDATE ON TABLES TO mnemo_navigator"
    )
