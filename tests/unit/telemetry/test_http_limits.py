"""The HTTP server limits every service runs with: failed accepts and shed connections are counted
and logged as one line per interval (an `EMFILE` accept loop once logged a traceback per failed
accept: 266,239 in 25 s), and the connection cap leaves the descriptors accept() needs."""

from __future__ import annotations

import asyncio
import errno
from typing import Any

import pytest
from mnemo_telemetry.http_limits import (
    ACCEPT_FAILED,
    RESERVED_DESCRIPTORS,
    PressureLog,
    connection_cap,
)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_ten_thousand_failed_accepts_in_one_interval_are_one_log_line() -> None:
    clock = Clock()
    pressure = PressureLog(interval=10.0, clock=clock)
    passed_on: list[dict[str, Any]] = []
    handler = pressure.loop_exception_handler(lambda _loop, context: passed_on.append(context))
    loop = asyncio.new_event_loop()
    try:
        for _ in range(10_000):
            handler(loop, {"message": ACCEPT_FAILED, "exception": OSError(errno.EMFILE, "")})
        assert pressure.lines == 1
        clock.now += 10.0
        handler(loop, {"message": ACCEPT_FAILED, "exception": OSError(errno.EMFILE, "")})
        assert pressure.lines == 2
        handler(loop, {"message": "something else went wrong"})
        assert passed_on == [{"message": "something else went wrong"}]
    finally:
        loop.close()


def test_the_counts_of_a_quiet_period_are_flushed_with_its_next_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    clock = Clock()
    pressure = PressureLog(interval=1.0, clock=clock)
    pressure.note("header_timeout")
    for _ in range(5):
        pressure.note("idle_closed_at_cap")
    clock.now += 1.5
    pressure.note("header_timeout")
    assert pressure.lines == 2
    lines = [line for line in capsys.readouterr().out.splitlines() if "http_pressure" in line]
    assert "idle_closed_at_cap" in lines[-1]
    assert "5" in lines[-1]


@pytest.mark.parametrize(
    ("configured", "batch", "limit", "expected"),
    [
        (1000, 32, 20_000, 1000),
        (1000, 32, 1024, 1024 - RESERVED_DESCRIPTORS - 128),
        (1000, 32, 512, 512 - RESERVED_DESCRIPTORS - 128),
        (1000, 32, 100, 16),
        (50, 32, 20_000, 50),
        (1000, 32, -1, 1000),
    ],
)
def test_the_connection_cap_leaves_room_for_accept_batches_below_the_descriptor_limit(
    configured: int, batch: int, limit: int, expected: int
) -> None:
    assert connection_cap(configured, batch, limit) == expected
