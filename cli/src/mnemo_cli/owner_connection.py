"""The owner role's database connection, for the operator commands (`apply`, `tenant`, `corpus`).

The URL comes from MNEMO_OWNER_DATABASE_URL; connecting gives up after MNEMO_CONNECT_TIMEOUT
seconds (default 10), so a server that accepts and never answers is one line, not a hang. Every
connection, privilege and store error becomes a one-line CliError (exit 1; a missing or malformed
setting, exit 2). The URL is never echoed: it holds a password.
"""

from __future__ import annotations

import asyncio
import math
import os
from collections.abc import Awaitable, Callable
from typing import Final, TypeVar

import asyncpg
from mnemo_store import StoreError

from mnemo_cli.errors import CliError

OWNER_URL_VARIABLE: Final = "MNEMO_OWNER_DATABASE_URL"
CONNECT_TIMEOUT_VARIABLE: Final = "MNEMO_CONNECT_TIMEOUT"
DEFAULT_CONNECT_TIMEOUT: Final = 10.0

_Result = TypeVar("_Result")


def owner_dsn() -> str:
    """The owner role's database URL, or a CliError saying how to provide it."""
    dsn = os.environ.get(OWNER_URL_VARIABLE, "").strip()
    if not dsn:
        raise CliError(
            f"{OWNER_URL_VARIABLE} is not set: this command runs as the owner role, e.g. "
            f"{OWNER_URL_VARIABLE}=postgresql://mnemo_owner:PASSWORD@127.0.0.1:25432/mnemo "
            "(`make up` exports it for the local stack)"
        )
    return dsn


def connect_timeout() -> float:
    """Seconds to wait for the database to answer a connection (MNEMO_CONNECT_TIMEOUT)."""
    text = os.environ.get(CONNECT_TIMEOUT_VARIABLE, "").strip()
    if not text:
        return DEFAULT_CONNECT_TIMEOUT
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and 0 < seconds <= 3600):
        raise CliError(
            f"{CONNECT_TIMEOUT_VARIABLE}={text[:40]!r} is not a number of seconds: write a number "
            f"above 0 and at most 3600, e.g. {CONNECT_TIMEOUT_VARIABLE}=10 (the default)"
        )
    return seconds


async def connect_owner() -> asyncpg.Connection:
    """A connection as the owner role, or a one-line CliError saying why there is none."""
    dsn = owner_dsn()
    timeout = connect_timeout()
    try:
        return await asyncpg.connect(dsn, timeout=timeout)
    except TimeoutError:
        raise CliError(
            f"the database at {OWNER_URL_VARIABLE} did not answer within {timeout:g} s "
            f"({CONNECT_TIMEOUT_VARIABLE}): is it running (`make up`) and is the URL right?",
            exit_code=1,
        ) from None
    except (ValueError, asyncpg.InterfaceError) as error:
        # A malformed URL: the message names the problem, never the URL itself.
        raise CliError(
            f"{OWNER_URL_VARIABLE} is not a usable PostgreSQL URL ({one_line(error)}): write "
            "postgresql://USER:PASSWORD@HOST:PORT/DATABASE"
        ) from None
    except (OSError, asyncpg.PostgresError) as error:
        raise CliError(
            f"cannot connect to the database at {OWNER_URL_VARIABLE} as the owner role: "
            f"{one_line(error)}; is it running (`make up`) and is the URL right?",
            exit_code=1,
        ) from None


def with_owner(work: Callable[[asyncpg.Connection], Awaitable[_Result]]) -> _Result:
    """Run `work` on one owner connection; connection and store errors become one-line CliErrors."""

    async def main() -> _Result:
        connection = await connect_owner()
        try:
            return await work(connection)
        except StoreError as error:
            raise CliError(str(error), exit_code=1) from None
        except asyncpg.InsufficientPrivilegeError as error:
            raise CliError(
                f"the role of {OWNER_URL_VARIABLE} may not do this ({one_line(error)}): operator "
                "commands run as the owner role (mnemo_owner), not the application role",
                exit_code=1,
            ) from None
        except (asyncpg.UndefinedTableError, asyncpg.InvalidSchemaNameError) as error:
            raise CliError(
                f"the database at {OWNER_URL_VARIABLE} has no Mnemo system tables "
                f"({one_line(error)}): run the migrations first (`make migrate`)",
                exit_code=1,
            ) from None
        except asyncpg.PostgresError as error:
            raise CliError(f"the database refused: {one_line(error)}", exit_code=1) from None
        except (OSError, asyncpg.InterfaceError) as error:
            raise CliError(
                f"lost the connection to the database: {one_line(error)}", exit_code=1
            ) from None
        finally:
            await connection.close(timeout=5)

    return asyncio.run(main())


def one_line(error: BaseException) -> str:
    """An error's message on one line (or its type's name when it has none)."""
    return " ".join(str(error).split()) or type(error).__name__
