"""The audit chain links a digest of each payload, so a payload can be redacted in place; erased
tenants are remembered, and their writes refused.

Revision ID: 0014_audit_digest_checkpoints
Revises: 0012_title_key_columns
Create Date: 2026-12-05

- **Chain version 2.** A row's hash becomes `sha256(prev_hash || JCS(document))` where the document
  names the payload only by `payload_sha256`, the hex SHA-256 of the payload's canonical JSON, kept
  in the new column `payload_digest`. Redacting a row replaces its payload with `{}` and sets
  `redacted_at`; its digest, seq and links stay, so the chain still verifies, and the verifier
  reports the row as redacted instead of checking a payload that is gone.
- **Existing chains are converted** under a lock that holds appends: each tenant's rows are first
  checked under version 1; the prefix that verifies is relinked under version 2. A row where the
  version-1 chain breaks, and every row after it, keep their old hashes, so the break still shows
  (as a row that no longer matches its hash) rather than being laundered into a valid chain.
- **Redaction is the one update the log accepts**: the append-only trigger lets through an UPDATE
  that only turns an unredacted row's payload into `{}` and stamps `redacted_at`. No service role
  is granted UPDATE; the owner role redacts (`mnemo tenant erase`).
- **Erased tenants**: `mnemo.erased_tenants` keeps the id of every erased tenant (the id only, no
  name). `mnemo.hold_tenant(t)` (SECURITY DEFINER), the first statement of every write transaction
  of the tenant unit of work, refuses a tenant marked erased and share-locks the tenant's row, so
  an erase (which marks the tenant first) waits for the writes in flight and no later one lands.
  Inserts into the tenant's system tables (outbox, inbox, pending edges, outcomes, revisions) hold
  their tenants the same way, by a statement trigger, whichever path wrote them. An
  audit event that still arrives for an erased tenant is linked with its payload already redacted.
- **Checkpoints** of each chain's head go to a compacted Kafka topic (the audit service), out of
  the owner role's reach; nothing of them lives in the database.
"""

from __future__ import annotations

from alembic import op

revision = "0014_audit_digest_checkpoints"
down_revision = "0013_forget_and_truncate"
branch_labels = None
depends_on = None

SERVICE_ROLES = (
    "mnemo_app, mnemo_ingest, mnemo_classifier, mnemo_navigator, mnemo_relay, mnemo_audit"
)

CHAIN_DOCUMENT_V2 = """
CREATE FUNCTION mnemo.audit_chain_document_v2(
  tenant uuid, seq bigint, event_id uuid, kind text, occurred_at timestamptz,
  producer text, trace text, payload_digest bytea
) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
  SELECT jsonb_build_object(
    'v', 2,
    'tenant', tenant::text,
    'seq', seq,
    'event_id', event_id::text,
    'kind', kind,
    'occurred_at', to_char(occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
    'producer', producer,
    'trace', trace,
    'payload_sha256', encode(payload_digest, 'hex'))
$fn$;

CREATE FUNCTION mnemo.audit_payload_digest(payload jsonb) RETURNS bytea
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $fn$
  SELECT sha256(convert_to(mnemo.jcs(payload), 'UTF8'))
$fn$;
"""

CHAIN_LINK_V2 = """
CREATE OR REPLACE FUNCTION mnemo.audit_chain_link() RETURNS trigger
LANGUAGE plpgsql AS $fn$
DECLARE
  last_seq bigint;
  last_hash bytea;
BEGIN
  IF NEW.seq IS NOT NULL OR NEW.prev_hash IS NOT NULL OR NEW.hash IS NOT NULL
     OR NEW.payload_digest IS NOT NULL OR NEW.redacted_at IS NOT NULL THEN
    RAISE EXCEPTION 'mnemo.audit_log: seq, prev_hash, hash, payload_digest and redacted_at are computed by the database; insert the event without them'
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  -- One appender per tenant at a time: the tenant's head row, locked until the transaction ends.
  -- Only the audit role may lock it: no other role is granted the table.
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
  NEW.payload_digest := mnemo.audit_payload_digest(NEW.payload);
  NEW.hash := sha256(NEW.prev_hash || convert_to(mnemo.jcs(mnemo.audit_chain_document_v2(
    NEW.axon_tenant, NEW.seq, NEW.event_id, NEW.kind, NEW.occurred_at, NEW.producer, NEW.trace,
    NEW.payload_digest)), 'UTF8'));
  IF mnemo.tenant_is_erased(NEW.axon_tenant) THEN
    NEW.payload := '{}'::jsonb;
    NEW.redacted_at := now();
  END IF;
  UPDATE mnemo.audit_chain_heads SET seq = NEW.seq, updated_at = now()
   WHERE axon_tenant = NEW.axon_tenant;
  RETURN NEW;
END
$fn$;
"""

# 0010's function, for the downgrade.
CHAIN_LINK_V1 = """
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

# Append-only, except one update: redacting a row that is not redacted yet.
REFUSE_CHANGE = """
CREATE OR REPLACE FUNCTION mnemo.refuse_audit_change() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  IF TG_OP = 'UPDATE'
     AND OLD.redacted_at IS NULL AND NEW.redacted_at IS NOT NULL
     AND NEW.payload = '{}'::jsonb
     AND (NEW.axon_tenant, NEW.seq, NEW.event_id, NEW.kind, NEW.occurred_at, NEW.producer,
          NEW.trace, NEW.prev_hash, NEW.hash, NEW.recorded_at, NEW.payload_digest)
         IS NOT DISTINCT FROM
         (OLD.axon_tenant, OLD.seq, OLD.event_id, OLD.kind, OLD.occurred_at, OLD.producer,
          OLD.trace, OLD.prev_hash, OLD.hash, OLD.recorded_at, OLD.payload_digest) THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'mnemo.audit_log is append-only: % is refused; append a new event instead (the one change allowed is redacting a payload)', TG_OP
    USING ERRCODE = 'insufficient_privilege';
END
$fn$;
"""

REFUSE_CHANGE_V1 = """
CREATE OR REPLACE FUNCTION mnemo.refuse_audit_change() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  RAISE EXCEPTION 'mnemo.audit_log is append-only: % is refused; append a new event instead', TG_OP
    USING ERRCODE = 'insufficient_privilege';
END
$fn$;
"""

# Each tenant's rows in seq order: checked under version 1, relinked under version 2 while they
# verify; from the first break on, left as they are (so the break stays visible).
CONVERT = """
DO $$
DECLARE
  t uuid;
  r record;
  prev_old bytea;
  prev_new bytea;
  expected bigint;
  broken boolean;
  digest bytea;
  linked bytea;
BEGIN
  FOR t IN SELECT DISTINCT axon_tenant FROM mnemo.audit_log LOOP
    prev_old := '\\x0000000000000000000000000000000000000000000000000000000000000000'::bytea;
    prev_new := prev_old;
    expected := 1;
    broken := false;
    FOR r IN SELECT * FROM mnemo.audit_log WHERE axon_tenant = t ORDER BY seq LOOP
      digest := mnemo.audit_payload_digest(r.payload);
      IF NOT broken AND (r.seq <> expected OR r.prev_hash <> prev_old OR r.hash <> sha256(
           r.prev_hash || convert_to(mnemo.jcs(mnemo.audit_chain_document(
             r.axon_tenant, r.seq, r.event_id, r.kind, r.occurred_at, r.producer, r.trace,
             r.payload)), 'UTF8'))) THEN
        broken := true;
        RAISE WARNING 'audit chain of tenant % breaks at seq % under version 1: rows from there keep their old hashes', t, r.seq;
      END IF;
      IF broken THEN
        UPDATE mnemo.audit_log SET payload_digest = digest
         WHERE axon_tenant = t AND seq = r.seq;
        CONTINUE;
      END IF;
      linked := sha256(prev_new || convert_to(mnemo.jcs(mnemo.audit_chain_document_v2(
        r.axon_tenant, r.seq, r.event_id, r.kind, r.occurred_at, r.producer, r.trace, digest)),
        'UTF8'));
      UPDATE mnemo.audit_log SET payload_digest = digest, prev_hash = prev_new, hash = linked
       WHERE axon_tenant = t AND seq = r.seq;
      prev_old := r.hash;
      prev_new := linked;
      expected := expected + 1;
    END LOOP;
  END LOOP;
END
$$;
"""

ERASED = """
CREATE TABLE mnemo.erased_tenants (
    tenant_id uuid PRIMARY KEY,
    erased_at timestamptz NOT NULL DEFAULT now()
);

CREATE FUNCTION mnemo.tenant_is_erased(t uuid) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, mnemo AS $fn$
  SELECT EXISTS (SELECT FROM mnemo.erased_tenants WHERE tenant_id = t)
$fn$;

-- The first statement of a write transaction: refuses a tenant marked erased, and holds the
-- tenant's row (key share) so that an erase waits for this transaction. The erase marks the
-- tenant (committed) before it locks the row, so new writers stop coming and its lock cannot
-- starve behind a stream of key-share lockers; one that got past the mark waits for the erase
-- and is then refused.
CREATE FUNCTION mnemo.hold_tenant(t uuid) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, mnemo AS $fn$
BEGIN
  IF EXISTS (SELECT FROM mnemo.erased_tenants WHERE tenant_id = t) THEN
    RAISE EXCEPTION 'tenant % has been erased: nothing may be written for it', t
      USING ERRCODE = 'MNE01';
  END IF;
  PERFORM 1 FROM mnemo.tenants WHERE tenant_id = t FOR KEY SHARE;
  IF NOT FOUND AND EXISTS (SELECT FROM mnemo.erased_tenants WHERE tenant_id = t) THEN
    RAISE EXCEPTION 'tenant % has been erased: nothing may be written for it', t
      USING ERRCODE = 'MNE01';
  END IF;
END
$fn$;

-- The same hold for rows written to the system tables by any path (a service's own pool, not the
-- unit of work): after each statement, every tenant it wrote rows for is held, or refused.
CREATE FUNCTION mnemo.hold_tenants_written() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  PERFORM mnemo.hold_tenant(t) FROM (SELECT DISTINCT axon_tenant AS t FROM written) AS w;
  RETURN NULL;
END
$fn$;
"""


GUARDED_TABLES = ("outbox", "inbox", "pending_edges", "nav_outcomes", "graph_revisions")
"""System tables whose inserts hold their tenants (`mnemo.hold_tenants_written`)."""


def upgrade() -> None:
    driver = op.get_bind().connection.driver_connection
    assert driver is not None
    # This revision's id is 33 characters; Alembic's version table holds 32 unless widened.
    op.execute("ALTER TABLE mnemo.alembic_version ALTER COLUMN version_num TYPE varchar(64)")
    op.execute("LOCK TABLE mnemo.audit_log IN SHARE ROW EXCLUSIVE MODE")
    op.execute(
        "ALTER TABLE mnemo.audit_log ADD COLUMN payload_digest bytea, ADD COLUMN redacted_at timestamptz"
    )
    driver.execute(ERASED)
    driver.execute(CHAIN_DOCUMENT_V2)
    # The owner reads every tenant's rows for the conversion only (row-level security is forced).
    op.execute("ALTER TABLE mnemo.audit_log NO FORCE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE mnemo.audit_log DISABLE TRIGGER audit_log_append_only")
    driver.execute(CONVERT)
    op.execute("ALTER TABLE mnemo.audit_log ENABLE TRIGGER audit_log_append_only")
    op.execute("ALTER TABLE mnemo.audit_log FORCE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE mnemo.audit_log ALTER COLUMN payload_digest SET NOT NULL")
    driver.execute(REFUSE_CHANGE)
    driver.execute(CHAIN_LINK_V2)
    op.execute(f"REVOKE ALL ON mnemo.erased_tenants FROM PUBLIC, {SERVICE_ROLES}")
    op.execute("REVOKE ALL ON FUNCTION mnemo.hold_tenant(uuid) FROM PUBLIC")
    op.execute(f"GRANT EXECUTE ON FUNCTION mnemo.hold_tenant(uuid) TO {SERVICE_ROLES}")
    for table in GUARDED_TABLES:
        op.execute(
            f"CREATE TRIGGER {table}_holds_tenant AFTER INSERT ON mnemo.{table}"
            " REFERENCING NEW TABLE AS written FOR EACH STATEMENT"
            " EXECUTE FUNCTION mnemo.hold_tenants_written()"
        )
    op.execute("REVOKE ALL ON FUNCTION mnemo.tenant_is_erased(uuid) FROM PUBLIC")
    op.execute(f"GRANT EXECUTE ON FUNCTION mnemo.tenant_is_erased(uuid) TO {SERVICE_ROLES}")


def downgrade() -> None:
    driver = op.get_bind().connection.driver_connection
    assert driver is not None
    op.execute("LOCK TABLE mnemo.audit_log IN SHARE ROW EXCLUSIVE MODE")
    driver.execute(CHAIN_LINK_V1)
    driver.execute(REFUSE_CHANGE_V1)
    # Version-2 hashes do not verify under version 1: the chains would have to be relinked by
    # hand, and redacted payloads cannot come back. The columns go; the hashes stay as they are.
    op.execute("ALTER TABLE mnemo.audit_log DROP COLUMN redacted_at, DROP COLUMN payload_digest")
    for table in GUARDED_TABLES:
        op.execute(f"DROP TRIGGER IF EXISTS {table}_holds_tenant ON mnemo.{table}")
    op.execute("DROP FUNCTION IF EXISTS mnemo.hold_tenants_written()")
    op.execute("DROP FUNCTION IF EXISTS mnemo.hold_tenant(uuid)")
    op.execute("DROP FUNCTION IF EXISTS mnemo.tenant_is_erased(uuid)")
    op.execute("DROP TABLE IF EXISTS mnemo.erased_tenants")
    op.execute("DROP FUNCTION IF EXISTS mnemo.audit_payload_digest(jsonb)")
    op.execute(
        "DROP FUNCTION IF EXISTS mnemo.audit_chain_document_v2(uuid, bigint, uuid, text,"
        " timestamptz, text, text, bytea)"
    )
