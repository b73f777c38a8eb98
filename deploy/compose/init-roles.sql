-- Run once by the postgres image on first start: the roles of ARCHITECTURE.md §2 and the database.
CREATE ROLE mnemo_owner LOGIN PASSWORD 'mnemo_owner' NOSUPERUSER NOBYPASSRLS;
CREATE ROLE mnemo_app LOGIN PASSWORD 'mnemo_app' NOSUPERUSER NOBYPASSRLS;
CREATE ROLE mnemo_relay LOGIN PASSWORD 'mnemo_relay' NOSUPERUSER NOBYPASSRLS;
CREATE DATABASE mnemo OWNER mnemo_owner;
