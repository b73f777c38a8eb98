"""The audit log becomes a per-tenant hash chain that the database computes itself.

Revision ID: 0007_audit_chain
Revises: 0004_service_roles
Create Date: 2026-12-03

A BEFORE INSERT trigger on `mnemo.audit_log`, under a per-tenant transaction-scoped advisory
lock, assigns

    seq       = previous seq + 1 (1 for a tenant's first row: contiguous, per tenant)
    prev_hash = previous row's hash (32 zero bytes for the first row)
    hash      = sha256(prev_hash || JCS(document))

where JCS is RFC 8785 canonical JSON, computed here by `mnemo.jcs(jsonb)` so that it yields the
same bytes as Python's `rfc8785` (which `mnemo_store.audit_chain` uses to verify), and the document
is `mnemo.audit_chain_document(...)`: `{v, tenant, seq, event_id, kind, occurred_at, producer,
trace, payload}`. An inserter that supplies `seq`, `prev_hash` or `hash` is refused.

Numbers the chain accepts: integers within ±(2^53−1) and finite, non-integral doubles (what every
JSON implementation round-trips exactly). An integral value outside ±(2^53−1), or a value no
double can hold, is refused with a message saying so: such a number would not read back as the
same JSON value, so the chain could not be verified.

Only `mnemo_audit` may insert (and only the event's own columns); every other role loses INSERT.
Nobody may update or delete (the append-only trigger of 0002 stays).
"""

from __future__ import annotations

from alembic import op

revision = "0007_audit_chain"
down_revision = "0004_service_roles"
branch_labels = None
depends_on = None

# Advisory lock class of the audit chain ("mnau"): the second key is the tenant's hash.
LOCK_CLASS = 0x6D6E6175

JCS_NUMBER = r"""
CREATE FUNCTION mnemo.jcs_number(n numeric) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $fn$
DECLARE
  d float8;
  m text[];
  all_digits text;
  digits text;
  point int;
  k int;
  e int;
  body text;
BEGIN
  IF n = trunc(n) THEN
    IF abs(n) > 9007199254740991 THEN
      RAISE EXCEPTION 'audit chain: the number % is an integer outside ±(2^53−1); JSON numbers hold only those exactly (send it as a string)', n
        USING ERRCODE = 'numeric_value_out_of_range';
    END IF;
    RETURN n::bigint::text;
  END IF;
  IF abs(n) > 1.7976931348623157e308 OR abs(n) < 2.4703282292062328e-324 THEN
    RAISE EXCEPTION 'audit chain: the number % has no double-precision value (JSON numbers are doubles)', n
      USING ERRCODE = 'numeric_value_out_of_range';
  END IF;
  d := n::float8;
  IF d = trunc(d) AND abs(d) > 9007199254740991 THEN
    RAISE EXCEPTION 'audit chain: the number % rounds to an integer outside ±(2^53−1)', n
      USING ERRCODE = 'numeric_value_out_of_range';
  END IF;
  -- The shortest text that reads back as d (extra_float_digits > 0, set by mnemo.jcs), rewritten
  -- in ECMAScript's Number::toString layout (RFC 8785 §3.2.2.3).
  m := regexp_match(d::text, '^(-?)([0-9]+)(?:\.([0-9]+))?(?:e([-+][0-9]+))?$');
  all_digits := m[2] || coalesce(m[3], '');
  point := length(m[2]) + coalesce(m[4]::int, 0);
  digits := ltrim(all_digits, '0');
  point := point - (length(all_digits) - length(digits));
  digits := rtrim(digits, '0');
  k := length(digits);
  IF k <= point AND point <= 21 THEN
    body := digits || repeat('0', point - k);
  ELSIF 0 < point AND point <= 21 THEN
    body := substr(digits, 1, point) || '.' || substr(digits, point + 1);
  ELSIF -6 < point AND point <= 0 THEN
    body := '0.' || repeat('0', -point) || digits;
  ELSE
    e := point - 1;
    body := substr(digits, 1, 1)
      || CASE WHEN k > 1 THEN '.' || substr(digits, 2) ELSE '' END
      || 'e' || CASE WHEN e >= 0 THEN '+' ELSE '-' END || abs(e)::text;
  END IF;
  RETURN m[1] || body;
END
$fn$;
"""

# A key's UTF-16 code units, big-endian: the order RFC 8785 sorts object keys by.
JCS_UTF16 = r"""
CREATE FUNCTION mnemo.jcs_utf16(k text) RETURNS bytea
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $fn$
  SELECT coalesce(decode(string_agg(
    CASE WHEN c < 65536 THEN lpad(to_hex(c), 4, '0')
         ELSE lpad(to_hex(55296 + ((c - 65536) >> 10)), 4, '0')
              || lpad(to_hex(56320 + ((c - 65536) & 1023)), 4, '0')
    END, '' ORDER BY i), 'hex'), '\x'::bytea)
  FROM (SELECT ascii(ch) AS c, i FROM regexp_split_to_table(k, '') WITH ORDINALITY AS s(ch, i)) AS chars
$fn$;
"""

# Strings: jsonb's own escaping (", \, \b \f \n \r \t, other controls as \u00xx, everything else
# literal) is exactly RFC 8785's. Keys: code-point order (COLLATE "C" on UTF-8) equals UTF-16 order
# unless a key holds a character at or above U+E000, which takes the slower exact path.
JCS_VALUE = r"""
CREATE FUNCTION mnemo.jcs_value(v jsonb) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $fn$
DECLARE
  body text;
BEGIN
  CASE jsonb_typeof(v)
  WHEN 'object' THEN
    IF EXISTS (SELECT FROM jsonb_object_keys(v) AS k WHERE k ~ '[\uE000-\U0010FFFF]') THEN
      SELECT string_agg(to_jsonb(e.key)::text || ':' || mnemo.jcs_value(e.value), ','
                        ORDER BY mnemo.jcs_utf16(e.key))
        INTO body FROM jsonb_each(v) AS e;
    ELSE
      SELECT string_agg(to_jsonb(e.key)::text || ':' || mnemo.jcs_value(e.value), ','
                        ORDER BY e.key COLLATE "C")
        INTO body FROM jsonb_each(v) AS e;
    END IF;
    RETURN '{' || coalesce(body, '') || '}';
  WHEN 'array' THEN
    SELECT string_agg(mnemo.jcs_value(a.value), ',' ORDER BY a.i)
      INTO body FROM jsonb_array_elements(v) WITH ORDINALITY AS a(value, i);
    RETURN '[' || coalesce(body, '') || ']';
  WHEN 'number' THEN
    RETURN mnemo.jcs_number(v::numeric);
  WHEN 'string' THEN
    RETURN v::text;
  WHEN 'boolean' THEN
    RETURN v::text;
  ELSE
    RETURN 'null';
  END CASE;
END
$fn$;
"""

JCS = """
CREATE FUNCTION mnemo.jcs(v jsonb) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET extra_float_digits = 1
AS $fn$ SELECT mnemo.jcs_value(v) $fn$;
COMMENT ON FUNCTION mnemo.jcs(jsonb) IS
  'RFC 8785 canonical JSON of v: the same text as Python rfc8785.dumps for every value the audit chain accepts';
"""

CHAIN_DOCUMENT = """
CREATE FUNCTION mnemo.audit_chain_document(
  tenant uuid, seq bigint, event_id uuid, kind text, occurred_at timestamptz,
  producer text, trace text, payload jsonb
) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
  SELECT jsonb_build_object(
    'v', 1,
    'tenant', tenant::text,
    'seq', seq,
    'event_id', event_id::text,
    'kind', kind,
    'occurred_at', to_char(occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
    'producer', producer,
    'trace', trace,
    'payload', payload)
$fn$;
"""

CHAIN_LINK = f"""
CREATE FUNCTION mnemo.audit_chain_link() RETURNS trigger
LANGUAGE plpgsql AS $fn$
DECLARE
  last_seq bigint;
  last_hash bytea;
BEGIN
  IF NEW.seq IS NOT NULL OR NEW.prev_hash IS NOT NULL OR NEW.hash IS NOT NULL THEN
    RAISE EXCEPTION 'mnemo.audit_log: seq, prev_hash and hash are computed by the database; insert the event without them'
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  -- One appender per tenant at a time; released when the transaction ends, after its commit is
  -- visible, so the next appender's fresh snapshot sees the row this one added.
  PERFORM pg_advisory_xact_lock({LOCK_CLASS}, hashtext(NEW.axon_tenant::text));
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

OTHER_ROLES = "mnemo_app, mnemo_ingest, mnemo_classifier, mnemo_navigator, mnemo_relay, PUBLIC"
EVENT_COLUMNS = "axon_tenant, event_id, kind, occurred_at, payload, producer, trace"


def upgrade() -> None:
    op.execute(
        "ALTER TABLE mnemo.audit_log"
        " ADD COLUMN producer text NOT NULL DEFAULT '',"
        " ADD COLUMN trace text"
    )
    op.execute("ALTER TABLE mnemo.audit_log ALTER COLUMN producer DROP DEFAULT")
    # Straight to the driver, without parameters: the function bodies hold ':' (regular
    # expressions) and '%' (RAISE formats) that a parameter-aware layer would read as placeholders.
    driver = op.get_bind().connection.driver_connection
    for statement in (JCS_NUMBER, JCS_UTF16, JCS_VALUE, JCS, CHAIN_DOCUMENT, CHAIN_LINK):
        driver.execute(statement)
    op.execute(
        "CREATE TRIGGER audit_log_chain BEFORE INSERT ON mnemo.audit_log"
        " FOR EACH ROW EXECUTE FUNCTION mnemo.audit_chain_link()"
    )
    op.execute(f"REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON mnemo.audit_log FROM {OTHER_ROLES}")
    op.execute(f"GRANT INSERT ({EVENT_COLUMNS}) ON mnemo.audit_log TO mnemo_audit")


def downgrade() -> None:
    op.execute(f"REVOKE INSERT ({EVENT_COLUMNS}) ON mnemo.audit_log FROM mnemo_audit")
    op.execute("GRANT INSERT ON mnemo.audit_log TO mnemo_app")
    op.execute("DROP TRIGGER IF EXISTS audit_log_chain ON mnemo.audit_log")
    op.execute("DROP FUNCTION IF EXISTS mnemo.audit_chain_link()")
    op.execute(
        "DROP FUNCTION IF EXISTS mnemo.audit_chain_document(uuid, bigint, uuid, text, timestamptz,"
        " text, text, jsonb)"
    )
    op.execute("DROP FUNCTION IF EXISTS mnemo.jcs(jsonb)")
    op.execute("DROP FUNCTION IF EXISTS mnemo.jcs_value(jsonb)")
    op.execute("DROP FUNCTION IF EXISTS mnemo.jcs_utf16(text)")
    op.execute("DROP FUNCTION IF EXISTS mnemo.jcs_number(numeric)")
    op.execute("ALTER TABLE mnemo.audit_log DROP COLUMN trace, DROP COLUMN producer")
