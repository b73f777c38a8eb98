"""The local infrastructure is real: Kafka carries messages, Postgres enforces tenant isolation."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import asyncpg
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic


async def test_a_message_produced_through_the_real_broker_is_consumed_back(
    kafka_bootstrap: str,
) -> None:
    topic = f"mnemo.test.roundtrip.{uuid.uuid4().hex[:8]}"
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka_bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])
    finally:
        await admin.close()

    payload = uuid.uuid4().bytes
    producer = AIOKafkaProducer(bootstrap_servers=kafka_bootstrap)
    await producer.start()
    try:
        await producer.send_and_wait(topic, payload, key=b"tenant-a")
    finally:
        await producer.stop()

    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=kafka_bootstrap, auto_offset_reset="earliest", group_id=None
    )
    await consumer.start()
    try:
        batch = await consumer.getmany(timeout_ms=15_000)
    finally:
        await consumer.stop()
    values = [record.value for records in batch.values() for record in records]
    assert values == [payload]


@pytest.fixture
async def tenant_table(owner_dsn: str) -> AsyncIterator[str]:
    """A throwaway tenant table under the project's RLS scheme, readable by the app role."""
    schema = f"test_rls_{uuid.uuid4().hex[:8]}"
    owner = await asyncpg.connect(owner_dsn)
    try:
        await owner.execute(f"CREATE SCHEMA {schema}")
        await owner.execute(f"GRANT USAGE ON SCHEMA {schema} TO mnemo_app")
        await owner.execute(
            f"CREATE TABLE {schema}.notes (axon_tenant uuid NOT NULL, id int, body text,"
            " PRIMARY KEY (axon_tenant, id))"
        )
        await owner.execute(f"SELECT mnemo.enable_tenant_rls('{schema}.notes')")
        await owner.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON {schema}.notes TO mnemo_app")
        yield f"{schema}.notes"
    finally:
        await owner.execute(f"DROP SCHEMA {schema} CASCADE")
        await owner.close()


async def insert_as(app: asyncpg.Connection, table: str, tenant: uuid.UUID, rows: int) -> None:
    async with app.transaction():
        await app.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
        for number in range(rows):
            await app.execute(
                f"INSERT INTO {table} (axon_tenant, id, body) VALUES ($1, $2, $3)",
                tenant,
                number,
                f"note {number} of {tenant}",
            )


async def test_the_application_role_sees_only_its_tenants_rows(
    app_dsn: str, tenant_table: str
) -> None:
    tenant_a, tenant_b = uuid.uuid4(), uuid.uuid4()
    app = await asyncpg.connect(app_dsn)
    try:
        await insert_as(app, tenant_table, tenant_a, 3)
        await insert_as(app, tenant_table, tenant_b, 2)

        # No tenant set: nothing, never everything (also after the setting was touched).
        assert await app.fetchval(f"SELECT count(*) FROM {tenant_table}") == 0

        async with app.transaction():
            await app.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant_a))
            seen = await app.fetch(f"SELECT axon_tenant FROM {tenant_table}")
        assert len(seen) == 3
        assert {row["axon_tenant"] for row in seen} == {tenant_a}

        # The setting was transaction-local: outside the transaction the tenant is gone again.
        assert await app.fetchval(f"SELECT count(*) FROM {tenant_table}") == 0
    finally:
        await app.close()


async def test_inserting_a_row_for_another_tenant_is_refused(
    app_dsn: str, tenant_table: str
) -> None:
    tenant_a, tenant_b = uuid.uuid4(), uuid.uuid4()
    app = await asyncpg.connect(app_dsn)
    try:
        with pytest.raises(asyncpg.InsufficientPrivilegeError, match="row-level security"):
            async with app.transaction():
                await app.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant_a))
                await app.execute(
                    f"INSERT INTO {tenant_table} (axon_tenant, id, body) VALUES ($1, 1, 'x')",
                    tenant_b,
                )
        with pytest.raises(asyncpg.InsufficientPrivilegeError, match="row-level security"):
            await app.execute(
                f"INSERT INTO {tenant_table} (axon_tenant, id, body) VALUES ($1, 1, 'x')",
                tenant_b,
            )
    finally:
        await app.close()


async def test_the_application_role_is_neither_superuser_nor_bypassrls(app_dsn: str) -> None:
    app = await asyncpg.connect(app_dsn)
    try:
        row = await app.fetchrow(
            "SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user"
        )
    finally:
        await app.close()
    assert row is not None
    assert (row["rolsuper"], row["rolbypassrls"]) == (False, False)
