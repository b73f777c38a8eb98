"""`apply` against a real database: it waits at most its lock timeout behind another transaction,
changes nothing, and names the session holding the lock, so a store's readers never queue behind
it for long; what the checker accepts (defaults written `1e-3` or `.5`) the database takes."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator

import asyncpg
import pytest
from mnemo_axon.compiler import load_deployment
from mnemo_store import LockTimeoutError
from mnemo_store.applier import apply_deployment
from mnemo_store.identifiers import store_table

from tests.waiting import eventually

URL = "http://navigator.example"


@pytest.fixture
async def name(owner: asyncpg.Connection) -> AsyncIterator[str]:
    value = f"Locked_{uuid.uuid4().hex[:10]}"
    yield value
    await owner.execute(f"DROP TABLE IF EXISTS {store_table(value)}")


def store(name: str, extra: str = "") -> str:
    return f"axonstore {name} {{ schema {{ id: Text primary_key  title: Text  {extra} }} }}"


async def test_apply_gives_up_after_its_lock_timeout_naming_the_transaction_holding_the_lock(
    owner: asyncpg.Connection, owner_dsn: str, name: str
) -> None:
    await apply_deployment(owner, load_deployment(store(name)), gateway_base_url=URL)
    holder = await asyncpg.connect(owner_dsn, server_settings={"application_name": "long-report"})
    reader = await asyncpg.connect(owner_dsn)
    try:
        holding = holder.transaction()
        await holding.start()
        await holder.execute(f"SELECT count(*) FROM {store_table(name)}")  # AccessShareLock, held
        holder_pid = await holder.fetchval("SELECT pg_backend_pid()")

        widened = load_deployment(store(name, "note: Text"))
        started = time.monotonic()
        applying = asyncio.create_task(
            apply_deployment(owner, widened, gateway_base_url=URL, lock_timeout=0.5)
        )

        async def apply_is_queued() -> bool:
            assert not applying.done(), "apply finished before it queued for its lock"
            waiting = await reader.fetchval(
                "SELECT count(*) FROM pg_locks WHERE relation = to_regclass($1)"
                " AND mode = 'AccessExclusiveLock' AND NOT granted",
                store_table(name),
            )
            return bool(waiting)

        await eventually(
            apply_is_queued, within=5, every=0.02, what="apply never queued for its lock"
        )
        read_started = time.monotonic()
        await reader.fetchval(f"SELECT count(*) FROM {store_table(name)}")
        read_waited = time.monotonic() - read_started
        with pytest.raises(LockTimeoutError) as timed_out:
            await applying
        waited = time.monotonic() - started
        await holding.rollback()
    finally:
        await holder.close()
        await reader.close()

    message = str(timed_out.value)
    assert message.startswith("apply waited 0.5 s for a lock and changed nothing")
    assert f"pid {holder_pid}, role mnemo_owner, application 'long-report'" in message
    assert f'AccessShareLock on axon_stores."{name}"' in message
    assert f"pg_terminate_backend(pid) for pid {holder_pid}" in message
    assert waited < 3
    assert read_waited < 1.5  # queued behind apply at most until its timeout, not behind the holder
    columns = await owner.fetch(
        "SELECT attname FROM pg_attribute WHERE attrelid = to_regclass($1) AND attnum > 0",
        store_table(name),
    )
    assert "note" not in {row["attname"] for row in columns}


@pytest.mark.parametrize(
    "column",
    ["score: Float default(1e-3)", "score: Double default(.5)", "score: Float default(-2E2)"],
)
async def test_a_number_default_in_any_notation_the_checker_accepts_applies(
    owner: asyncpg.Connection, name: str, column: str
) -> None:
    report = await apply_deployment(
        owner, load_deployment(store(name, column)), gateway_base_url=URL
    )
    assert report.applied
    assert await owner.fetchval("SELECT to_regclass($1) IS NOT NULL", store_table(name))
