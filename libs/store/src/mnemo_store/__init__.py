"""Postgres storage: tables, tenant-scoped units of work, store DDL, graph loading, reinforcement, outbox, inbox."""
