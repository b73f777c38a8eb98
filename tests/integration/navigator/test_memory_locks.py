"""What a navigation's memory write locks, and for how long (Postgres only: the in-memory adapter
runs every write unit alone).

A navigation of an adaptive corpus remembers its outcome and reinforces the edges it followed. It
holds its scope's memory lock while it reads the scope's recent outcomes and records the next one,
so two navigations of one scope never take the same sequence; and the corpus's revision row only
from its reinforcement to its commit. So a writer of the corpus's rows (ingest, the classifier)
never waits on a navigation that is reading or recording (the issue 22 load test saw ingest queue
behind navigations that held the revision row over six round trips), a navigation of another scope
does not wait either, and with every writer taking the revision row before its rows, nothing
deadlocks.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import AsyncIterator, Awaitable

import asyncpg
import pytest
from mnemo_store import EdgeDelta, Scope

from tests.integration.navigator.conftest import Declare, NewTenant, navigator_dsn
from tests.integration.navigator.test_ports_contract import DOCS, EDGES, World, postgres_world
from tests.waiting import eventually

HORIZON = 4


@pytest.fixture
async def world(
    app_dsn: str,
    declare: Declare,
    new_tenant: NewTenant,
    owner_connection: asyncpg.Connection,
) -> AsyncIterator[World]:
    pool = await asyncpg.create_pool(navigator_dsn(app_dsn), min_size=1, max_size=24)
    try:
        yield await postgres_world(declare, new_tenant, owner_connection, pool)
    finally:
        await pool.close()


async def filled(world: World) -> uuid.UUID:
    tenant = await world.new_tenant()
    await world.write(tenant, DOCS, EDGES)
    return tenant


async def remember(
    world: World,
    tenant: uuid.UUID,
    scope: str,
    deltas: list[EdgeDelta],
    *,
    recorded: asyncio.Event | None = None,
    release: asyncio.Event | None = None,
) -> int:
    """One navigation's memory write, in the navigator's order; it waits for `release` (once it
    has `recorded` its outcome) before it reinforces. Returns the sequence it took."""
    name = world.corpus.name
    async with world.transactions.tenant(tenant) as work:
        await work.memory.serialise(name, scope)
        recent = await work.memory.recent_scores(name, scope, HORIZON - 1)
        sequence = recent.last_sequence + 1
        await work.memory.record_outcome(name, scope, sequence, "q", ["a", "b"], [], 0.5)
        if recorded is not None:
            recorded.set()
        if release is not None:
            await release.wait()
        if deltas:
            await work.memory.reinforce(world.corpus, deltas, Scope())
            await work.graph.revision(name)
    return sequence


async def advisory_waiters(owner: asyncpg.Connection) -> int:
    return int(
        await owner.fetchval(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
        )
    )


async def test_a_corpus_writer_never_waits_on_a_navigation_reading_and_recording(
    world: World,
) -> None:
    tenant = await filled(world)
    recorded, release = asyncio.Event(), asyncio.Event()
    held = asyncio.create_task(
        remember(
            world,
            tenant,
            "s",
            [EdgeDelta("a", "b", "cite", 0.01)],
            recorded=recorded,
            release=release,
        )
    )
    try:
        await asyncio.wait_for(recorded.wait(), 30)
        # Two statements in one transaction, as ingest writes a document and its edge. Held on
        # the revision row, it would wait until `release`, which comes only after it.
        await asyncio.wait_for(
            world.write(
                tenant,
                [{"id": "d", "tenant_id": "c1", "title": "delta", "body": None}],
                [{"from_id": "a", "to_id": "d", "etype": "cite", "weight": 0.5, "tenant_id": "c1"}],
            ),
            30,
        )
    finally:
        release.set()
    assert await held == 1
    weights = await world.weights(tenant)
    assert weights[("a", "b", "c1")] == pytest.approx(0.51)
    assert weights[("a", "d", "c1")] == 0.5


async def test_navigations_of_one_scope_take_turns_and_another_scope_does_not_wait(
    world: World, owner_connection: asyncpg.Connection
) -> None:
    tenant = await filled(world)
    recorded, release = asyncio.Event(), asyncio.Event()
    first = asyncio.create_task(
        remember(world, tenant, "s", [], recorded=recorded, release=release)
    )
    second: asyncio.Task[int] | None = None
    try:
        await asyncio.wait_for(recorded.wait(), 30)
        waiting_before = await advisory_waiters(owner_connection)
        second = asyncio.create_task(remember(world, tenant, "s", []))
        await eventually(
            lambda: _more_waiters(owner_connection, waiting_before),
            within=30,
            what="the second navigation of scope s waiting on the scope's lock",
        )
        assert not second.done()
        assert await asyncio.wait_for(remember(world, tenant, "other", []), 30) == 1
    finally:
        release.set()
    assert await first == 1
    assert second is not None
    assert await second == 2  # read after the first committed: the next sequence


async def _more_waiters(owner: asyncpg.Connection, before: int) -> bool:
    return await advisory_waiters(owner) > before


async def test_navigations_and_writers_interleaved_never_deadlock_and_lose_nothing(
    world: World,
) -> None:
    tenant = await filled(world)
    rng = random.Random(22)
    keys = [("a", "b", "cite"), ("a", "c", "cite"), ("b", "a", "cite")]
    planned: dict[tuple[str, str], float] = {("a", "b"): 0.0, ("a", "c"): 0.0}
    jobs: list[Awaitable[object]] = []
    for i in range(24):
        # Each navigation reinforces its edges in its own order (one of them absent).
        chosen = rng.sample(keys, k=rng.randint(1, 3))
        delta = rng.choice([-1, 1]) * 0.002
        deltas = [EdgeDelta(s, t, e, delta) for s, t, e in chosen]
        for s, t, _ in chosen:
            if (s, t) in planned:
                planned[(s, t)] += delta
        jobs.append(remember(world, tenant, f"s{i % 3}", deltas))
        if i % 4 == 0:
            doc = f"w{i}"
            jobs.append(
                world.write(
                    tenant,
                    [{"id": doc, "tenant_id": "c1", "title": f"w {i}", "body": None}],
                    [
                        {
                            "from_id": doc,
                            "to_id": "a",
                            "etype": "cite",
                            "weight": 0.5,
                            "tenant_id": "c1",
                        }
                    ],
                )
            )
    rng.shuffle(jobs)
    results = await asyncio.wait_for(asyncio.gather(*jobs), 120)
    sequences = sorted(r for r in results if isinstance(r, int))
    assert sequences == sorted([*range(1, 9)] * 3)  # 8 per scope, each once
    weights = await world.weights(tenant)
    # The (a, b) rows of both clients move together; none clamps.
    assert weights[("a", "b", "c1")] == pytest.approx(0.5 + planned[("a", "b")])
    assert weights[("a", "b", "c2")] == pytest.approx(0.5 + planned[("a", "b")])
    assert weights[("a", "c", "c2")] == pytest.approx(0.5 + planned[("a", "c")])
