"""SIGUSR1's task dump: every task of the loop, named, with the line it waits on."""

from __future__ import annotations

import asyncio
import os
import signal

from mnemo_telemetry.service import dump_tasks
from structlog.testing import capture_logs


async def test_the_dump_names_each_task_and_where_it_waits() -> None:
    held = asyncio.Event()

    async def waits_for_the_lock() -> None:
        await held.wait()

    task = asyncio.create_task(waits_for_the_lock(), name="stuck-navigation")
    await asyncio.sleep(0)
    with capture_logs() as logs:
        dump_tasks()
    held.set()
    await task
    (entry,) = [e for e in logs if e["event"] == "tasks_dumped"]
    assert entry["tasks"] >= 2  # the test's own task and the stuck one
    assert "--- stuck-navigation" in entry["stacks"]
    assert "await held.wait()" in entry["stacks"]


async def test_sigusr1_dumps_and_the_loop_goes_on() -> None:
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGUSR1, dump_tasks)
    try:
        with capture_logs() as logs:
            os.kill(os.getpid(), signal.SIGUSR1)
            for _ in range(100):
                if logs:
                    break
                await asyncio.sleep(0.01)
        assert [e["event"] for e in logs] == ["tasks_dumped"]
    finally:
        loop.remove_signal_handler(signal.SIGUSR1)
