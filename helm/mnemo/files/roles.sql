-- Mnemo's database roles (ARCHITECTURE §2), for a Postgres Mnemo does not run: the owner of the
-- schema, the legacy application role, the outbox relay and one login role per service. None is a
-- superuser, none may bypass row-level security (NOBYPASSRLS): the tenant policies hold for all.
-- Idempotent: a role that exists is left as it is, apart from its password when one is given.
--
-- Passwords are read from session settings, never written here:
--   PGOPTIONS="-c mnemo.password_mnemo_owner=… -c mnemo.password_mnemo_ingest=… …" \
--     psql "$ADMIN_URL" -v ON_ERROR_STOP=1 -f roles.sql
-- (a role without one gets none: set it later with ALTER ROLE … PASSWORD, or use your provider's
-- IAM or certificate login). Run as a role with CREATEROLE. Then, once:
--   CREATE DATABASE mnemo OWNER mnemo_owner;  REVOKE ALL ON SCHEMA public FROM PUBLIC;  (in mnemo)
-- The chart's optional hook Job (roles.job.enabled) runs this file and creates the database.
DO $$
DECLARE
  role text;
  password text;
BEGIN
  FOREACH role IN ARRAY ARRAY[
    'mnemo_owner', 'mnemo_app', 'mnemo_relay',
    'mnemo_ingest', 'mnemo_classifier', 'mnemo_navigator', 'mnemo_audit'
  ] LOOP
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = role) THEN
      EXECUTE format(
        'CREATE ROLE %I LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE NOREPLICATION',
        role
      );
    END IF;
    password := nullif(current_setting('mnemo.password_' || role, true), '');
    IF password IS NOT NULL THEN
      EXECUTE format('ALTER ROLE %I PASSWORD %L', role, password);
    END IF;
  END LOOP;
END
$$;
