"""SIGUSR1's task dump: the loop's tasks grouped by the stack they wait in."""

from __future__ import annotations

import asyncio
import os
import signal

from mnemo_telemetry.service import dump_tasks
from structlog.testing import capture_logs


async def test_the_dump_groups_tasks_by_where_they_wait() -> None:
    held = asyncio.Event()

    async def waits_for_the_lock() -> None:
        await held.wait()

    tasks = [asyncio.create_task(waits_for_the_lock()) for _ in range(3)]
    await asyncio.sleep(0)
    with capture_logs() as logs:
        dump_tasks()
    held.set()
    await asyncio.gather(*tasks)
    (entry,) = [e for e in logs if e["event"] == "tasks_dumped"]
    assert entry["tasks"] >= 4  # the test's own task and the three waiting ones
    first, _ = entry["stacks"].split("\n", 1)
    assert first == "--- 3 task(s)"  # the largest group first, counted once
    stack = entry["stacks"].split("--- ")[1]
    assert "in waits_for_the_lock" in stack
    assert "await held.wait()" in stack


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
