"""`KeyedTurns`: one holder per key, in arrival order; other keys never wait; nothing kept after."""

from __future__ import annotations

import asyncio

import pytest
from mnemo_navigator.turns import KeyedTurns


async def test_one_key_is_held_once_at_a_time_in_arrival_order() -> None:
    turns = KeyedTurns()
    order: list[int] = []
    inside = 0
    peak = 0

    async def take(i: int) -> None:
        nonlocal inside, peak
        async with turns.turn("scope"):
            inside += 1
            peak = max(peak, inside)
            order.append(i)
            await asyncio.sleep(0)  # a scheduling point inside the turn, not a wait for time
            inside -= 1

    await asyncio.gather(*(take(i) for i in range(6)))
    assert (peak, order) == (1, list(range(6)))
    assert turns.users("scope") == 0


async def test_another_key_takes_its_turn_while_one_is_held() -> None:
    turns = KeyedTurns()
    release = asyncio.Event()
    entered = asyncio.Event()

    async def hold() -> None:
        async with turns.turn("a"):
            entered.set()
            await release.wait()

    holder = asyncio.create_task(hold())
    await entered.wait()
    async with turns.turn("b"):
        assert (turns.users("a"), turns.users("b")) == (1, 1)
    release.set()
    await holder
    assert (turns.users("a"), turns.users("b")) == (0, 0)


async def test_a_waiter_cancelled_or_a_holder_failing_leaves_nothing_behind() -> None:
    turns = KeyedTurns()
    release = asyncio.Event()
    entered = asyncio.Event()

    async def hold() -> None:
        async with turns.turn("k"):
            entered.set()
            await release.wait()
            raise RuntimeError("the holder fails")

    holder = asyncio.create_task(hold())
    await entered.wait()

    async def wait_for_turn() -> None:
        async with turns.turn("k"):
            pytest.fail("a cancelled waiter never gets the turn")

    waiter = asyncio.create_task(wait_for_turn())
    await asyncio.sleep(0)  # one scheduling step: the waiter runs until it waits for the lock
    assert turns.users("k") == 2
    waiter.cancel()
    release.set()
    with pytest.raises(RuntimeError, match="the holder fails"):
        await holder
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert turns.users("k") == 0
    async with turns.turn("k"):  # and the key is free
        assert turns.users("k") == 1
