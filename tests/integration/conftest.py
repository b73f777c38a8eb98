"""Real Postgres and real Kafka for integration tests.

The services come from `make up` (MNEMO_DATABASE_URL, MNEMO_OWNER_DATABASE_URL,
MNEMO_KAFKA_BOOTSTRAP), or, when those are not set and a container engine is present, from
testcontainers. Otherwise the tests fail with a message saying how to start them: integration
tests are never silently skipped.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.infrastructure import Infrastructure, provide_infrastructure


@pytest.fixture(scope="session")
def infrastructure() -> Iterator[Infrastructure]:
    yield from provide_infrastructure()


@pytest.fixture(scope="session")
def app_dsn(infrastructure: Infrastructure) -> str:
    """DSN of the application role: no BYPASSRLS, not superuser, owns nothing."""
    return infrastructure.app_dsn


@pytest.fixture(scope="session")
def owner_dsn(infrastructure: Infrastructure) -> str:
    """DSN of the owner role, which owns the schema and runs migrations."""
    return infrastructure.owner_dsn


@pytest.fixture(scope="session")
def relay_dsn(infrastructure: Infrastructure) -> str:
    """DSN of the outbox relay role."""
    return infrastructure.relay_dsn


@pytest.fixture(scope="session")
def kafka_bootstrap(infrastructure: Infrastructure) -> str:
    return infrastructure.kafka_bootstrap
