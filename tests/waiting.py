"""Waiting in tests: poll a condition until it holds, within a deadline; never a bare sleep.

`eventually` (for coroutines) and `eventually_sync` call `condition` every `every` seconds until it
returns something truthy, and return that value. Past `within` seconds they fail with
`NeverHappenedError`, saying what never happened: `what` is a sentence, or a function called only
then (for the latest state, such as a service's log tail). A condition may itself assert (a service
that exited fails at once, not at the deadline).

A test that must show something did NOT happen does not sleep "long enough" either: it sends a
later marker through the same ordered path (the same partition, the same consumer) and waits for
the marker, after which the thing would already have happened.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")

What = str | Callable[[], str]


class NeverHappenedError(AssertionError):
    """A condition a test waited for did not hold within its deadline."""


def _failure(what: What, within: float) -> NeverHappenedError:
    said = what() if callable(what) else what
    return NeverHappenedError(f"not within {within:g} s: {said}")


async def eventually(
    condition: Callable[[], Awaitable[T]], *, within: float, what: What, every: float = 0.1
) -> T:
    """The first truthy value `await condition()` returns, polled every `every` seconds."""
    deadline = time.monotonic() + within
    while True:
        value = await condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise _failure(what, within)
        await asyncio.sleep(every)


def eventually_sync(
    condition: Callable[[], T], *, within: float, what: What, every: float = 0.1
) -> T:
    """The first truthy value `condition()` returns, polled every `every` seconds (blocking)."""
    deadline = time.monotonic() + within
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise _failure(what, within)
        time.sleep(every)
