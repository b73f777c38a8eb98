"""The broker, then the database, stopped and started again (by deploy/local's own scripts) while
ingest works through a stream: the service stays up, readiness goes false then true, and every
event lands exactly once. On a private Kafka and Postgres: the shared stack is never touched."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.chaos.conftest import Service, Stack, World, make_world, remove_world
from tests.chaos.streams import Stream, assert_exactly_once, record_row
from tests.chaos.summary import Summary
from tests.waiting import eventually

pytestmark = pytest.mark.timeout(600)


@pytest.fixture
async def private_world(private_stack: Stack, tmp_path: Path) -> AsyncIterator[World]:
    created = await make_world(private_stack, tmp_path)
    try:
        yield created
    finally:
        await remove_world(created)


async def _readiness_becomes(service: Service, ready: bool, wait: float) -> float:
    """Seconds until /readyz answers 200 (ready) or anything else (not ready)."""
    started = time.monotonic()

    async def became() -> bool:
        assert service.process is not None
        assert service.process.poll() is None, f"the service exited: {service.tail()}"
        return (await service.readiness() == 200) == ready

    await eventually(became, within=wait, every=0.2, what=f"readiness never became {ready}")
    return time.monotonic() - started


@pytest.mark.parametrize("component", ["kafka", "postgres"])
async def test_a_restart_during_a_stream_is_recovered_without_a_manual_step(
    private_world: World, component: str, summary: Summary
) -> None:
    world = private_world
    ingest = world.ingest(f"ingest-{component}")
    ingest.start()
    await ingest.ready()
    stream = Stream(world, 1_200)  # and 4,780 edges
    await world.produce(stream.records)

    async def some_rows() -> bool:
        return await stream.landed() >= 250

    await world.until(some_rows, wait=120, every=0.05)
    world.stack.script(component, "down")
    went_down = await _readiness_becomes(ingest, ready=False, wait=30)
    world.stack.script(component, "up")
    came_back = await _readiness_becomes(ingest, ready=True, wait=120)
    await world.until(stream.all_landed, wait=240)
    result = await assert_exactly_once(stream, classified=False)
    assert ingest.process is not None
    assert ingest.process.poll() is None
    await record_row(
        summary,
        stream,
        result,
        f"{component} stopped and restarted",
        f"not ready after {went_down:.1f} s, ready again {came_back:.1f} s after the restart; ",
    )
