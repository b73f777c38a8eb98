"""Alembic environment: migrations run online, as the owner role, against MNEMO_OWNER_DATABASE_URL."""

from __future__ import annotations

import os

from alembic import context
from sqlalchemy import create_engine, pool


def owner_url() -> str:
    url = os.environ.get("MNEMO_OWNER_DATABASE_URL")
    if not url:
        raise SystemExit(
            "MNEMO_OWNER_DATABASE_URL is not set: migrations run as the owner role, e.g. "
            "postgresql://mnemo_owner:PASSWORD@127.0.0.1:25432/mnemo (`make migrate` sets it)"
        )
    # The migrations use the synchronous psycopg driver.
    return url.replace("postgresql://", "postgresql+psycopg://", 1)


def run_migrations_online() -> None:
    engine = create_engine(owner_url(), poolclass=pool.NullPool)
    with engine.connect() as connection:
        context.configure(
            connection=connection,
            version_table="alembic_version",
            version_table_schema="mnemo",
            transaction_per_migration=True,
        )
        # The version table lives in the schema the first revision creates.
        connection.exec_driver_sql("CREATE SCHEMA IF NOT EXISTS mnemo")
        connection.commit()
        with context.begin_transaction():
            context.run_migrations()


if context.is_offline_mode():
    raise SystemExit("offline (--sql) migrations are not supported: run them against a database")
run_migrations_online()
