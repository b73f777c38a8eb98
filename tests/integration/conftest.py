"""Real Postgres and real Kafka for integration tests.

The services come from `make up` (MNEMO_DATABASE_URL, MNEMO_OWNER_DATABASE_URL,
MNEMO_KAFKA_BOOTSTRAP), or, when those are not set and a container engine is present, from
testcontainers. Otherwise the tests fail with a message saying how to start them: integration
tests are never silently skipped.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.infrastructure import SUPERUSER_URL_VARIABLE, Infrastructure, provide_infrastructure


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
def superuser_dsn(infrastructure: Infrastructure) -> str:
    """DSN of a superuser of the same cluster: only to create and drop a test's own database."""
    if infrastructure.superuser_dsn is None:
        pytest.fail(
            f"{SUPERUSER_URL_VARIABLE} is not set: this test creates a database of its own, as a"
            " superuser of the test cluster; `make test` sets it",
            pytrace=False,
        )
    return infrastructure.superuser_dsn


@pytest.fixture(scope="session")
def kafka_bootstrap(infrastructure: Infrastructure) -> str:
    return infrastructure.kafka_bootstrap
