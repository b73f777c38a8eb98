"""`mnemo apply FILE...`: compile declarations, then create or extend their stores and register corpora.

Runs as the owner role (MNEMO_OWNER_DATABASE_URL). Additive only: a change that would drop or
retype anything is refused, printing the statements an operator would have to run. New corpora are
registered `draft`; existing ones keep their status. `--dry-run` prints the SQL plan and changes
nothing. Applying the same files twice changes nothing the second time.

Route lint findings (an active route scoping an unknown or unpublished corpus) are printed as
warnings on stderr after the apply; they do not fail it, because routes are not declared in the
files and a newly registered corpus is a draft until `mnemo corpus publish`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import asyncpg
from mnemo_axon import check_sources
from mnemo_store import StoreError
from mnemo_store.applier import ApplyReport, apply_deployment

from mnemo_cli.axon_files import print_diagnostics, read_axon_files
from mnemo_cli.errors import CliError

OWNER_URL_VARIABLE = "MNEMO_OWNER_DATABASE_URL"
GATEWAY_URL_VARIABLE = "MNEMO_GATEWAY_URL"
DEFAULT_GATEWAY_URL = "http://127.0.0.1:8080"

_Result = TypeVar("_Result")


def register(subparsers: Any) -> None:  # argparse's subparsers action has no public type
    parser = subparsers.add_parser(
        "apply",
        help="create or extend the declared stores and register the declared corpora",
        description=(
            "Compile .axon files, then (as the owner role, from MNEMO_OWNER_DATABASE_URL) create "
            "or extend every declared store and register every corpus (new ones as draft; a "
            "status is never changed). Additive only: destructive changes are refused with the "
            "statements they would need."
        ),
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help=".axon files of the deployment")
    parser.add_argument("--dry-run", action="store_true", help="print the SQL plan, change nothing")
    parser.add_argument(
        "--gateway-url",
        default=None,
        help=f"base URL of the search gateway registered for each corpus "
        f"(default: ${GATEWAY_URL_VARIABLE} or {DEFAULT_GATEWAY_URL})",
    )
    parser.set_defaults(func=run)


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


def with_owner(work: Callable[[asyncpg.Connection], Awaitable[_Result]]) -> _Result:
    """Run `work` on one owner connection; connection and store errors become one-line CliErrors."""

    async def main() -> _Result:
        dsn = owner_dsn()
        try:
            connection = await asyncpg.connect(dsn)
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, ValueError) as error:
            # ValueError and InterfaceError: a malformed URL (never echoed: it holds a password).
            raise CliError(
                f"cannot connect to the database at {OWNER_URL_VARIABLE} as the owner role: "
                f"{_one_line(error)}; is it running (`make up`) and is the URL right?"
            ) from None
        try:
            return await work(connection)
        except StoreError as error:
            raise CliError(str(error), exit_code=1) from None
        except asyncpg.InsufficientPrivilegeError as error:
            raise CliError(
                f"the role of {OWNER_URL_VARIABLE} may not do this ({_one_line(error)}): operator "
                "commands run as the owner role (mnemo_owner), not the application role",
                exit_code=1,
            ) from None
        except (asyncpg.UndefinedTableError, asyncpg.InvalidSchemaNameError) as error:
            raise CliError(
                f"the database at {OWNER_URL_VARIABLE} has no Mnemo system tables "
                f"({_one_line(error)}): run the migrations first "
                "(`uv run alembic -c migrations/alembic.ini upgrade head`)",
                exit_code=1,
            ) from None
        except asyncpg.PostgresError as error:
            raise CliError(f"the database refused: {_one_line(error)}", exit_code=1) from None
        finally:
            await connection.close()

    return asyncio.run(main())


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split()) or type(error).__name__


def run(args: argparse.Namespace) -> int:
    result = check_sources(read_axon_files(args.files))
    if result.deployment is None:
        print_diagnostics(result.diagnostics, "nothing applied")
        return 1
    deployment = result.deployment
    gateway = args.gateway_url or os.environ.get(GATEWAY_URL_VARIABLE) or DEFAULT_GATEWAY_URL

    async def work(connection: asyncpg.Connection) -> ApplyReport:
        return await apply_deployment(
            connection, deployment, gateway_base_url=gateway, dry_run=args.dry_run
        )

    report = with_owner(work)
    if args.dry_run:
        print(report.sql() or "-- nothing to do: the database already matches the declarations")
    elif not report.changes:
        print("apply: nothing to do, the database already matches the declarations")
    else:
        for line in report.changes:
            print(f"apply: {line}")
    for finding in report.lint:
        print(f"apply: warning: route lint: {finding}", file=sys.stderr)
    return 0
