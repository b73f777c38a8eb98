"""Graph work runs on the navigator's own bounded threads (`MNEMO_NAVIGATOR_COMPUTE_THREADS`), not
on asyncio's default pool of up to 32: threads beyond the cores only take the interpreter from the
event loop that answers requests and holds each scope's memory write (issue 22)."""

from __future__ import annotations

import asyncio
import threading

import pytest
from mnemo_auth import DEVELOPMENT_SECRET
from mnemo_navigator.app import create_app
from mnemo_navigator.settings import Settings

from tests.integration.navigator.conftest import navigator_dsn

pytestmark = pytest.mark.timeout(60)


async def test_the_navigators_thread_work_runs_on_as_many_threads_as_configured(
    app_dsn: str,
) -> None:
    settings = Settings(
        database_url=navigator_dsn(app_dsn),
        consume_requests=False,
        relay_outbox=False,
        token_secret=DEVELOPMENT_SECRET,
        pool_size=2,
        compute_threads=2,
    )
    loop_pool = vars(asyncio.get_running_loop()).get("_default_executor")
    runtime = create_app(settings, pinned_scopes={})
    await runtime.start()
    try:
        released = threading.Event()
        names: list[str] = []
        lock = threading.Lock()

        def work() -> None:
            with lock:
                names.append(threading.current_thread().name)
            # Held until all eight are submitted: a pool of more threads would start more of
            # them at once, each on a thread of its own.
            assert released.wait(timeout=30)

        # `asyncio.to_thread`'s pool, each job handed to it here and now (no task to schedule).
        loop = asyncio.get_running_loop()
        jobs = [loop.run_in_executor(None, work) for _ in range(8)]
        released.set()
        await asyncio.gather(*jobs)
    finally:
        await runtime.stop()
    assert len(names) == 8
    assert all(name.startswith("mnemo-compute") for name in names), names
    assert len(set(names)) <= 2, sorted(set(names))
    # The loop outlives the service (here, the test session's): its own pool is back.
    assert vars(asyncio.get_running_loop()).get("_default_executor") is loop_pool
