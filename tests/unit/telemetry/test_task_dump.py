"""SIGUSR1's task dump: the loop's tasks grouped by the stack they wait in."""

from __future__ import annotations

import asyncio
import os
import signal

from mnemo_telemetry.service import dump_tasks
from structlog.testing import capture_logs


async def test_the_dump_groups_tasks_by_where_they_wait() -> None:
    held, all_waiting = asyncio.Event(), asyncio.Event()
    waiting = 0

    async def waits_for_the_lock() -> None:
        nonlocal waiting
        waiting += 1
        if waiting == 3:
            all_waiting.set()
        await held.wait()  # no suspension since the count: each task is in here when counted

    tasks = [asyncio.create_task(waits_for_the_lock()) for _ in range(3)]
    await all_waiting.wait()
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
    dumped = asyncio.Event()

    def on_signal() -> None:
        dump_tasks()
        dumped.set()

    loop.add_signal_handler(signal.SIGUSR1, on_signal)
    try:
        with capture_logs() as logs:
            os.kill(os.getpid(), signal.SIGUSR1)
            await asyncio.wait_for(dumped.wait(), 5)
        assert [e["event"] for e in logs] == ["tasks_dumped"]
    finally:
        loop.remove_signal_handler(signal.SIGUSR1)
