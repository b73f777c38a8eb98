"""Where the real services for integration and e2e tests come from (see tests/integration/conftest.py)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    """A loopback TCP port nobody listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


HOW_TO_START = (
    "integration tests need real PostgreSQL and Kafka. Start them with `make up` and run the tests "
    "through `make test` (it exports MNEMO_DATABASE_URL, MNEMO_OWNER_DATABASE_URL, "
    "MNEMO_RELAY_DATABASE_URL and MNEMO_KAFKA_BOOTSTRAP), or install a container engine so "
    "testcontainers can start them."
)


@dataclass(frozen=True, slots=True)
class Infrastructure:
    app_dsn: str
    owner_dsn: str
    relay_dsn: str
    kafka_bootstrap: str
    superuser_dsn: str | None = None
    """A superuser of the same cluster, for tests that make a database of their own (None: not
    given, and such a test fails saying so)."""


def from_environment() -> Infrastructure | None:
    names = ("MNEMO_DATABASE_URL", "MNEMO_OWNER_DATABASE_URL", "MNEMO_KAFKA_BOOTSTRAP")
    if not all(os.environ.get(name) for name in names):
        return None
    owner = os.environ["MNEMO_OWNER_DATABASE_URL"]
    return Infrastructure(
        app_dsn=os.environ["MNEMO_DATABASE_URL"],
        owner_dsn=owner,
        relay_dsn=os.environ.get("MNEMO_RELAY_DATABASE_URL", owner),
        kafka_bootstrap=os.environ["MNEMO_KAFKA_BOOTSTRAP"],
        superuser_dsn=os.environ.get(SUPERUSER_URL_VARIABLE) or None,
    )


def container_engine_available() -> bool:
    docker = shutil.which("docker")
    if docker is None:
        return False
    return subprocess.run([docker, "info"], capture_output=True, check=False).returncode == 0


SUPERUSER_URL_VARIABLE = "MNEMO_SUPERUSER_DATABASE_URL"
"""A superuser's URL on the test cluster: `make test` sets it (the local cluster's socket)."""

ROLE_BOOTSTRAP = """
CREATE ROLE mnemo_owner LOGIN PASSWORD 'mnemo_owner' NOSUPERUSER NOBYPASSRLS;
CREATE ROLE mnemo_app LOGIN PASSWORD 'mnemo_app' NOSUPERUSER NOBYPASSRLS;
CREATE ROLE mnemo_relay LOGIN PASSWORD 'mnemo_relay' NOSUPERUSER NOBYPASSRLS;
CREATE DATABASE mnemo OWNER mnemo_owner;
"""


def from_containers() -> Iterator[Infrastructure]:
    """Postgres and Kafka in containers, provisioned and migrated like `make up` does."""
    from testcontainers.kafka import KafkaContainer
    from testcontainers.postgres import PostgresContainer

    with PostgresContainer("postgres:16", driver=None) as postgres, KafkaContainer() as kafka:
        host, port = postgres.get_container_host_ip(), postgres.get_exposed_port(5432)
        for statement in ROLE_BOOTSTRAP.strip().splitlines():
            postgres.exec(["psql", "-U", postgres.username, "-d", postgres.dbname, "-c", statement])

        def dsn(role: str) -> str:
            return f"postgresql://{role}:{role}@{host}:{port}/mnemo"

        environment = {**os.environ, "MNEMO_OWNER_DATABASE_URL": dsn("mnemo_owner")}
        subprocess.run(
            ["alembic", "-c", str(ROOT / "migrations" / "alembic.ini"), "upgrade", "heads"],
            env=environment,
            check=True,
        )
        superuser = (
            f"postgresql://{postgres.username}:{postgres.password}@{host}:{port}/{postgres.dbname}"
        )
        yield Infrastructure(
            dsn("mnemo_app"),
            dsn("mnemo_owner"),
            dsn("mnemo_relay"),
            kafka.get_bootstrap_server(),
            superuser,
        )


def provide_infrastructure() -> Iterator[Infrastructure]:
    found = from_environment()
    if found is not None:
        yield found
    elif container_engine_available():
        yield from from_containers()
    else:
        pytest.fail(HOW_TO_START, pytrace=False)
