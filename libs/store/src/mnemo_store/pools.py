"""Connection pools of the store's roles: one way to open them, and what a connection needs when it
goes back.

    pool = await open_pool(dsn, max_size=10, init=trace_queries)

asyncpg's default reset runs `SELECT pg_advisory_unlock_all(); CLOSE ALL; UNLISTEN *; RESET ALL`
on every release: one more round trip per transaction, in every service, for session state Mnemo
never makes. Its tenant is set for the transaction only (`set_config('mnemo.tenant', …, true)`),
its advisory locks are the transaction's (`pg_advisory_xact_lock`), its settings `SET LOCAL`, and
it neither listens nor keeps cursors past a transaction. So a released connection gets only what
asyncpg does before any reset: a transaction left open is rolled back and its listeners dropped.
`tests/integration/store/test_pool_release.py` holds the session clean over every kind of
transaction the store opens, and tenants apart on one reused connection.
"""

from __future__ import annotations

from typing import Any

import asyncpg


async def keep_session(connection: asyncpg.Connection) -> None:
    """The pool's reset: nothing past asyncpg's own rollback of an open transaction (see above)."""


async def open_pool(dsn: str, *, min_size: int = 1, max_size: int = 10, **kw: Any) -> asyncpg.Pool:
    """A pool whose released connections cost no reset round trip (`keep_session`)."""
    pool: asyncpg.Pool = await asyncpg.create_pool(
        dsn, min_size=min_size, max_size=max_size, reset=keep_session, **kw
    )
    return pool
