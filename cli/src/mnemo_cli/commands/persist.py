"""`mnemo persist --store NAME --tenant T [FILE|-]`: JSON lines of row values → persist events.

Each line is one row's values (`{"id": …, "title": …}`) for store NAME. The tenant and the store
are checked first (the tenant must exist; a registered store corpus must read the store), then
every row is published to `mnemo.persist.v1`, keyed by the tenant. A line that is not a JSON
object counts as failed, with its line number; the summary says how many were sent and failed.
Ingest writes what arrives, and dead-letters rows it refuses to `mnemo.persist.v1.dlt`.

With `--wait SECONDS`, the command then waits until ingest has written every sent row (its inbox
holds the event ids), showing how many have landed; exit 1 if some have not within SECONDS (they
are still in flight, or dead-lettered). A progress bar shows on a terminal; with a FILE it knows
the total.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
import uuid
from collections.abc import Iterator
from typing import Any, TextIO

import asyncpg
from mnemo_events import PersistRow
from mnemo_store.registry import list_corpora
from pydantic import ValidationError

from mnemo_cli.errors import CliError
from mnemo_cli.owner_connection import with_owner
from mnemo_cli.publishing import publish_rows
from mnemo_cli.tenant_option import tenant_id


def register(subparsers: Any) -> None:  # argparse's subparsers action has no public type
    parser = subparsers.add_parser(
        "persist", help="publish JSON-lines rows of one store as persist events"
    )
    parser.add_argument("--store", required=True, help="the declared store (axonstore) name")
    parser.add_argument("--tenant", required=True, help="the tenant id (uuid)")
    parser.add_argument("file", nargs="?", default="-", help="JSON lines, one row each (- = stdin)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument(
        "--wait",
        type=float,
        metavar="SECONDS",
        help="then wait up to SECONDS until ingest has written every sent row (exit 1 if not)",
    )
    parser.set_defaults(func=persist_command)


async def _check(connection: asyncpg.Connection, tenant: uuid.UUID, store: str) -> None:
    if not await connection.fetchval("SELECT true FROM mnemo.tenants WHERE tenant_id = $1", tenant):
        raise CliError(f"no tenant {tenant}: `mnemo tenant list` shows the tenants")
    corpora = await list_corpora(connection, kind="store_graph")
    names = sorted(
        {
            str(s["name"])
            for row in corpora
            for s in row.definition.get("stores") or ()
            if isinstance(s, dict) and s.get("name") is not None
        }
    )
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
    """A one-line bar on stderr when it is a terminal: `label [####....] done/total …`."""

    def __init__(self, quiet: bool, label: str, total: int | None) -> None:
        self._quiet = quiet or not sys.stderr.isatty()
        self._label = label
        self._total = total
        self.shown = False

    def __call__(self, sent: int, failed: int) -> None:
        done = sent + failed
        if self._quiet or (done % 50 and done != self._total):
            return
        if self._total:
            bar = "#" * (30 * min(done, self._total) // self._total)
            count = f"{done}/{self._total}"
        else:
            bar = "#" * min(30, done // 100)
            count = str(done)
        extra = f"  failed {failed}" if failed else ""
        print(f"\r{self._label} [{bar:<30}] {count}{extra}", end="", file=sys.stderr, flush=True)
        self.shown = True

    def end(self) -> None:
        if self.shown:
            print(file=sys.stderr)
            self.shown = False


def _count_lines(path: str) -> int | None:
    if path == "-":
        return None
    try:
        with open(path, "rb") as source:
            return sum(1 for line in source if line.strip())
    except OSError:
        return None


async def _landed(connection: asyncpg.Connection, tenant: uuid.UUID, ids: list[uuid.UUID]) -> int:
    """How many of `ids` ingest has processed (its inbox, read in the tenant's row-level scope)."""
    async with connection.transaction():
        await connection.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
        count = await connection.fetchval(
            "SELECT count(*) FROM mnemo.inbox WHERE consumer = 'mnemo.ingest'"
            " AND event_id = ANY($1::uuid[])",
            ids,
        )
    return int(count)


def _wait(tenant: uuid.UUID, ids: tuple[uuid.UUID, ...], seconds: float, quiet: bool) -> int:
    """Poll until ingest has written every event of `ids` or `seconds` pass; the landed count."""
    progress = _Progress(quiet, "landed ", len(ids))
    wanted = list(ids)

    async def work(connection: asyncpg.Connection) -> int:
        deadline = time.monotonic() + seconds
        delay = 0.1
        while True:
            landed = await _landed(connection, tenant, wanted)
            progress(landed, 0)
            if landed >= len(wanted) or time.monotonic() >= deadline:
                return landed
            await asyncio.sleep(min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(delay * 2, 1.0)

    try:
        return with_owner(work)
    finally:
        progress.end()


def persist_command(args: argparse.Namespace) -> int:
    tenant = tenant_id(args.tenant)
    with_owner(lambda connection: _check(connection, tenant, args.store))
    failures: list[str] = []
    progress = _Progress(args.quiet, "persist", _count_lines(args.file))
    try:
        stream: TextIO = sys.stdin if args.file == "-" else open(args.file, encoding="utf-8")  # noqa: SIM115 (closed below)
    except OSError as error:
        raise CliError(f"{error.strerror or error}: {args.file}") from None
    try:
        result = asyncio.run(
            publish_rows(_lines(stream, args.store, failures), tenant, on_progress=progress)
        )
    except UnicodeDecodeError as error:
        raise CliError(f"{args.file} is not UTF-8 text: {error.reason}") from None
    finally:
        if stream is not sys.stdin:
            stream.close()
    progress.end()
    for failure in failures[:20] + list(result.errors):
        print(f"failed: {failure}", file=sys.stderr)
    failed = result.failed + len(failures)
    print(f"persist {args.store} (tenant {tenant}): sent {result.sent}, failed {failed}")
    if args.wait is None:
        return 0 if failed == 0 else 1
    started = time.monotonic()
    landed = _wait(tenant, result.event_ids, args.wait, args.quiet)
    took = time.monotonic() - started
    if landed < len(result.event_ids):
        print(
            f"persist {args.store}: landed {landed} of {len(result.event_ids)} within {args.wait:g} s;"
            f" the rest are in flight or dead-lettered (mnemo.persist.v1.dlt)"
        )
        return 1
    print(f"persist {args.store}: ingest wrote all {landed} in {took:.1f} s")
    return 0 if failed == 0 else 1
