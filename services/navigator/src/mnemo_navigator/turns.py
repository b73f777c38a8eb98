"""Turns per key: one holder at a time for each key, the others waiting in arrival order.

The navigator queues the memory writes of one scope here, in the process, before each takes a
database connection: a navigation waiting for its scope's turn holds nothing another navigation
needs. (Across processes the database's lock of the scope still decides; here it is then mostly
free when asked.) A key's lock lives only while someone holds or awaits it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Hashable
from contextlib import asynccontextmanager


class KeyedTurns:
    def __init__(self) -> None:
        self._locks: dict[Hashable, tuple[asyncio.Lock, int]] = {}

    def users(self, key: Hashable) -> int:
        """How many hold or await `key`'s turn now (0: no lock is kept for it)."""
        return self._locks.get(key, (None, 0))[1]

    @asynccontextmanager
    async def turn(self, key: Hashable) -> AsyncIterator[None]:
        """Hold `key`'s turn for the block, after those who asked for it before."""
        lock, users = self._locks.get(key, (None, 0))
        if lock is None:
            lock = asyncio.Lock()
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            _, users = self._locks[key]
            if users == 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)
