"""Grants down to columns: what each service role may update in the stores, and what the relay may
read and change in the outbox (migration 0010, `mnemo apply`'s weight grant)."""

from __future__ import annotations

import os
import uuid
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest
from mnemo_store import EdgeDelta, OutboxEvent, OutboxMessage, OutboxRelay, Store
from mnemo_store.applier import apply_deployment
from mnemo_store.identifiers import quote, store_table

from tests.integration.store.conftest import Declared

AUDIT_TOPIC = f"test.audit.grants.{uuid.uuid4().hex[:8]}.v1"


def role_dsn(owner_dsn: str, role: str) -> str:
    """`MNEMO_<ROLE>_DATABASE_URL` when set, else the owner's with the role's name and password."""
    given = os.environ.get(f"MNEMO_{role.removeprefix('mnemo_').upper()}_DATABASE_URL")
    if given:
        return given
    parts = urlsplit(owner_dsn)
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit(parts._replace(netloc=f"{role}:{role}@{host}"))


@pytest.fixture(scope="module")
async def arena(
    declare: Any, new_tenant: Any, store: Store
) -> tuple[Declared, uuid.UUID, uuid.UUID, uuid.UUID]:
    """A corpus with two documents and one edge between them, for one tenant."""
    declared = await declare()
    tenant = await new_tenant()
    first, second = uuid.uuid4(), uuid.uuid4()
    async with store.tenant(tenant) as tx:
        await tx.insert_rows(
            declared.corpus.documents,
            [
                {"id": doc, "tenant_id": tenant, "title": f"doc {doc}", "body": "words"}
                for doc in (first, second)
            ],
        )
        await tx.insert_rows(
            declared.corpus.relations,
            [
                {
                    "from_id": first,
                    "to_id": second,
                    "etype": "cite",
                    "weight": 0.5,
                    "tenant_id": tenant,
                }
            ],
        )
    return declared, tenant, first, second


# (role, which store, column, may update)
CASES = [
    ("mnemo_navigator", "edges", "weight", True),
    ("mnemo_navigator", "edges", "etype", False),
    ("mnemo_navigator", "edges", "from_id", False),
    ("mnemo_navigator", "edges", "tenant_id", False),
    ("mnemo_navigator", "documents", "title", False),
    ("mnemo_navigator", "documents", "body", False),
    ("mnemo_classifier", "edges", "weight", False),
    ("mnemo_classifier", "documents", "title", False),
    ("mnemo_ingest", "edges", "weight", True),
    ("mnemo_ingest", "documents", "title", True),
]


@pytest.mark.parametrize(("role", "which", "column", "allowed"), CASES)
async def test_each_service_role_may_update_only_the_store_columns_its_work_needs(
    arena: tuple[Declared, uuid.UUID, uuid.UUID, uuid.UUID],
    owner_dsn: str,
    role: str,
    which: str,
    column: str,
    allowed: bool,
) -> None:
    declared, tenant, _, _ = arena
    table = store_table(declared.edges if which == "edges" else declared.documents)
    connection = await asyncpg.connect(role_dsn(owner_dsn, role))
    try:
        transaction = connection.transaction()
        await transaction.start()
        try:
            await connection.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
            statement = f"UPDATE {table} SET {quote(column)} = {quote(column)}"
            if allowed:
                assert await connection.execute(statement) != "UPDATE 0"
            else:
                with pytest.raises(asyncpg.InsufficientPrivilegeError, match="permission denied"):
                    await connection.execute(statement)
        finally:
            await transaction.rollback()
    finally:
        await connection.close()


async def test_the_navigator_still_reinforces_through_its_weight_column_grant(
    arena: tuple[Declared, uuid.UUID, uuid.UUID, uuid.UUID], owner_dsn: str
) -> None:
    declared, tenant, first, second = arena
    navigator_dsn = role_dsn(owner_dsn, "mnemo_navigator")
    delta = EdgeDelta(str(first), str(second), "cite", 0.1)
    async with (
        await Store.connect(navigator_dsn, max_size=1) as navigator,
        navigator.tenant(tenant) as tx,
    ):
        moved = await tx.reinforce(declared.corpus, [delta])
    assert moved == 1


async def test_applying_the_same_declarations_again_grants_nothing_more(
    arena: tuple[Declared, uuid.UUID, uuid.UUID, uuid.UUID], owner: asyncpg.Connection
) -> None:
    declared = arena[0]
    report = await apply_deployment(
        owner, declared.deployment, gateway_base_url="http://127.0.0.1:8080", dry_run=True
    )
    assert report.plan.steps == ()
    granted = await owner.fetch(
        "SELECT table_name, column_name FROM information_schema.column_privileges"
        " WHERE grantee = 'mnemo_navigator' AND privilege_type = 'UPDATE'"
        " AND table_schema = 'axon_stores' AND table_name = ANY($1::text[])",
        [declared.documents, declared.edges],
    )
    assert {(row["table_name"], row["column_name"]) for row in granted} == {
        (declared.edges, "weight")
    }


class Collect:
    def __init__(self) -> None:
        self.sent: list[OutboxMessage] = []

    async def publish(self, message: OutboxMessage) -> None:
        self.sent.append(message)


async def test_the_relay_reads_only_what_it_is_about_to_send_and_cannot_reopen_or_rewrite_it(
    store: Store, new_tenant: Any, relay_dsn: str
) -> None:
    tenant = await new_tenant()
    secret = {"action": "corpus:Docs:query", "query": f"secret {uuid.uuid4().hex}"}
    async with store.tenant(tenant) as tx:
        await tx.append_outbox(OutboxEvent(uuid.uuid4(), AUDIT_TOPIC, b"k", secret))
    pool = await asyncpg.create_pool(relay_dsn, min_size=1, max_size=1)
    try:
        publisher = Collect()
        relay = OutboxRelay(pool, publisher, tenants=[tenant], topics=[AUDIT_TOPIC])
        assert await relay.relay_once() == 1
        assert [message.topic for message in publisher.sent] == [AUDIT_TOPIC]
        async with pool.acquire() as relay_connection:
            # Sent: its payload is out of the relay's reach, even with the tenant set.
            async with relay_connection.transaction():
                await relay_connection.execute(
                    "SELECT set_config('mnemo.tenant', $1, true)", str(tenant)
                )
                rows = await relay_connection.fetch(
                    "SELECT payload FROM mnemo.outbox WHERE axon_tenant = $1", tenant
                )
                assert rows == []
                # It cannot re-open (or back-date) a sent event either: no row qualifies.
                reopened = await relay_connection.execute(
                    "UPDATE mnemo.outbox SET published_at = NULL WHERE axon_tenant = $1", tenant
                )
                assert reopened == "UPDATE 0"
            for statement in (
                "UPDATE mnemo.outbox SET topic = 'elsewhere' WHERE false",
                "UPDATE mnemo.outbox SET payload = '{}' WHERE false",
                "DELETE FROM mnemo.outbox WHERE false",
                "SELECT created_at FROM mnemo.outbox LIMIT 1",
                "SELECT payload FROM mnemo.audit_log LIMIT 1",
            ):
                with pytest.raises(asyncpg.InsufficientPrivilegeError):
                    await relay_connection.execute(statement)
    finally:
        await pool.close()


async def test_the_relay_may_only_stamp_its_own_transaction_time_as_published(
    store: Store, new_tenant: Any, relay_dsn: str
) -> None:
    tenant = await new_tenant()
    async with store.tenant(tenant) as tx:
        await tx.append_outbox(OutboxEvent(uuid.uuid4(), AUDIT_TOPIC, b"k", {"n": 1}))
    relay = await asyncpg.connect(relay_dsn)
    try:
        with pytest.raises(asyncpg.InsufficientPrivilegeError, match="row-level security"):
            await relay.execute(
                "UPDATE mnemo.outbox SET published_at = now() - interval '1 day'"
                " WHERE axon_tenant = $1",
                tenant,
            )
    finally:
        await relay.close()
