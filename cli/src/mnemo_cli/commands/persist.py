"""`mnemo persist --store NAME --tenant T [FILE|-]`: JSON lines of row values → persist events.

Each line is one row's values (`{"id": …, "title": …}`) for store NAME. The tenant and the store
are checked first (the tenant must exist; a registered store corpus must read the store), then
every row is published to `mnemo.persist.v1`, keyed by the tenant. A line that is not a JSON
object counts as failed, with its line number; the summary says how many were sent and failed.
Ingest writes what arrives, and dead-letters rows it refuses to `mnemo.persist.v1.dlt`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import uuid
from collections.abc import Iterator
from typing import Any, TextIO

import asyncpg
from mnemo_events import PersistRow
from pydantic import ValidationError

from mnemo_cli.errors import CliError
from mnemo_cli.owner_connection import with_owner
from mnemo_cli.publishing import publish_rows


def register(subparsers: Any) -> None:  # argparse's subparsers action has no public type
    parser = subparsers.add_parser(
        "persist", help="publish JSON-lines rows of one store as persist events"
    )
    parser.add_argument("--store", required=True, help="the declared store (axonstore) name")
    parser.add_argument("--tenant", required=True, help="the tenant id (uuid)")
    parser.add_argument("file", nargs="?", default="-", help="JSON lines, one row each (- = stdin)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(func=persist_command)


def _tenant(text: str) -> uuid.UUID:
    try:
        return uuid.UUID(text.strip())
    except ValueError:
        raise CliError(
            f"--tenant {text[:80]!r} is not a tenant id: give the uuid `mnemo tenant create` "
            "printed (`mnemo tenant list` shows them)"
        ) from None


async def _check(connection: asyncpg.Connection, tenant: uuid.UUID, store: str) -> None:
    if not await connection.fetchval("SELECT true FROM mnemo.tenants WHERE tenant_id = $1", tenant):
        raise CliError(f"no tenant {tenant}: `mnemo tenant list` shows the tenants")
    stores = await connection.fetch(
        "SELECT DISTINCT s->>'name' AS name FROM mnemo.corpora,"
        " jsonb_array_elements(definition->'stores') AS s WHERE kind = 'store_graph'"
    )
    names = sorted(row["name"] for row in stores)
    if store not in names:
        raise CliError(
            f"no registered corpus reads a store named {store[:80]!r} (declare it and run "
            f"`mnemo apply`); stores: {', '.join(names) or 'none'}"
        )


def _lines(stream: TextIO, store: str, failures: list[str]) -> Iterator[PersistRow]:
    for number, line in enumerate(stream, start=1):
        if not line.strip():
            continue
        try:
            values = json.loads(line)
            if not isinstance(values, dict):
                raise ValueError(f"a JSON object is needed, got {type(values).__name__}")
            yield PersistRow(store=store, values=values)
        except (ValueError, ValidationError) as error:
            failures.append(f"line {number}: {str(error).splitlines()[0][:200]}")


class _Progress:
    def __init__(self, quiet: bool) -> None:
        self._quiet = quiet or not sys.stderr.isatty()

    def __call__(self, sent: int, failed: int) -> None:
        if self._quiet or (sent + failed) % 50:
            return
        bar = "#" * min(30, (sent + failed) // 100)
        print(f"\rpersist [{bar:<30}] sent {sent}  failed {failed}", end="", file=sys.stderr)


def persist_command(args: argparse.Namespace) -> int:
    tenant = _tenant(args.tenant)
    with_owner(lambda connection: _check(connection, tenant, args.store))
    failures: list[str] = []
    try:
        stream: TextIO = sys.stdin if args.file == "-" else open(args.file, encoding="utf-8")  # noqa: SIM115 (closed below)
    except OSError as error:
        raise CliError(f"{error.strerror or error}: {args.file}") from None
    try:
        result = asyncio.run(
            publish_rows(
                _lines(stream, args.store, failures), tenant, on_progress=_Progress(args.quiet)
            )
        )
    except UnicodeDecodeError as error:
        raise CliError(f"{args.file} is not UTF-8 text: {error.reason}") from None
    finally:
        if stream is not sys.stdin:
            stream.close()
    if not args.quiet and sys.stderr.isatty():
        print(file=sys.stderr)
    for failure in failures[:20] + list(result.errors):
        print(f"failed: {failure}", file=sys.stderr)
    failed = result.failed + len(failures)
    print(f"persist {args.store} (tenant {tenant}): sent {result.sent}, failed {failed}")
    return 0 if failed == 0 else 1
