-- Run once by the postgres image on first start: the roles of ARCHITECTURE.md §2 and the database.
CREATE ROLE mnemo_owner LOGIN PASSWORD 'mnemo_owner' NOSUPERUSER NOBYPASSRLS;
CREATE ROLE mnemo_app LOGIN PASSWORD 'mnemo_app' NOSUPERUSER NOBYPASSRLS;
CREATE ROLE mnemo_relay LOGIN PASSWORD 'mnemo_relay' NOSUPERUSER NOBYPASSRLS;
CREATE ROLE mnemo_ingest LOGIN PASSWORD 'mnemo_ingest' NOSUPERUSER NOBYPASSRLS;
CREATE ROLE mnemo_classifier LOGIN PASSWORD 'mnemo_classifier' NOSUPERUSER NOBYPASSRLS;
CREATE ROLE mnemo_navigator LOGIN PASSWORD 'mnemo_navigator' NOSUPERUSER NOBYPASSRLS;
CREATE ROLE mnemo_audit LOGIN PASSWORD 'mnemo_audit' NOSUPERUSER NOBYPASSRLS;
CREATE DATABASE mnemo OWNER mnemo_owner;
-- Opt-in, off by default: let the GIN index serve full-text matches under row-level security by
-- marking `tsvector @@ tsquery` leakproof in the mnemo database (superuser only; changes a
-- built-in function for every role; see services/navigator/README.md before turning it on).
-- \connect mnemo
-- ALTER FUNCTION pg_catalog.ts_match_vq(tsvector, tsquery) LEAKPROOF;
