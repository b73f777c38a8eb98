"""`mnemo audit verify --tenant T` and `mnemo audit tail --tenant T`: the audit chain, read straight
from Postgres as the audit role or the owner role.

`verify` recomputes the tenant's chain (`mnemo_store.audit_chain`) and names the first seq that is
missing, reordered or altered (exit 1), or prints the verified head (exit 0). With `--checkpoints`
it also compares the chain with the tenant's latest checkpoint on the compacted Kafka topic the
audit service publishes (`mnemo_events.audit_checkpoints`): a chain that ends before the
checkpoint's seq was truncated, one whose row at that seq has another hash was rewritten (exit 1). `tail` prints rows as
they are appended until Ctrl-C (exit 0), or with `--no-follow` the rows there are and exits; a row
that carries a W3C trace context shows its trace id. The database URL comes from `--database-url`, else
`MNEMO_AUDIT_DATABASE_URL`, else `MNEMO_OWNER_DATABASE_URL`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
import uuid
from dataclasses import replace
from typing import Any

import asyncpg
from mnemo_events.audit_checkpoints import (
    CHECKPOINTS,
    Checkpoint,
    CheckpointReadError,
    read_checkpoints,
)
from mnemo_events.settings import KafkaSettings
from mnemo_store.audit_chain import ChainReport, ChainRow, check_against_checkpoint
from mnemo_store.audit_log import AuditLog
from mnemo_store.shown_text import shown_text

from mnemo_cli.errors import CliError

URL_VARIABLES = ("MNEMO_AUDIT_DATABASE_URL", "MNEMO_OWNER_DATABASE_URL")


def register(subparsers: Any) -> None:  # argparse's subparsers action has no public type
    parser = subparsers.add_parser("audit", help="verify and follow a tenant's audit chain")
    actions = parser.add_subparsers(dest="audit_command", metavar="ACTION", required=True)
    for name, func, text in (
        ("verify", run_verify, "verify the chain; exit 1 naming the first bad seq"),
        ("tail", run_tail, "print new audit rows as they arrive (Ctrl-C to stop)"),
    ):
        action = actions.add_parser(name, help=text)
        action.add_argument("--tenant", required=True, help="tenant id or name")
        action.add_argument(
            "--database-url",
            help="Postgres URL of the audit or owner role (default: "
            + ", else ".join(f"${v}" for v in URL_VARIABLES)
            + ")",
        )
        action.add_argument("--json", action="store_true", help="print JSON instead of text")
        action.set_defaults(func=func)
        if name == "verify":
            action.add_argument(
                "--checkpoints",
                action="store_true",
                help="also compare the chain with its latest checkpoint on Kafka"
                " (MNEMO_KAFKA_BOOTSTRAP): a truncated or rewritten tail fails",
            )
            action.add_argument(
                "--checkpoint-topic", default=CHECKPOINTS, help=f"default {CHECKPOINTS}"
            )
        if name == "tail":
            action.add_argument(
                "--after-seq",
                type=int,
                default=None,
                help="start after this seq (default: the current head, so only new rows)",
            )
            action.add_argument(
                "--interval", type=float, default=0.5, help="seconds between polls (default 0.5)"
            )
            action.add_argument(
                "--no-follow",
                dest="follow",
                action="store_false",
                help="print the rows after --after-seq that exist now, then exit",
            )


def _url(args: argparse.Namespace) -> str:
    url: str | None = args.database_url or next(
        (os.environ[v] for v in URL_VARIABLES if os.environ.get(v)), None
    )
    if not url:
        raise CliError(
            "no database URL: pass --database-url or set MNEMO_AUDIT_DATABASE_URL (audit role) "
            "or MNEMO_OWNER_DATABASE_URL (owner role)"
        )
    return url


async def _open(args: argparse.Namespace) -> tuple[AuditLog, uuid.UUID]:
    try:
        log = await asyncio.wait_for(AuditLog.connect(_url(args), max_size=2), 15)
    except (OSError, TimeoutError, asyncpg.PostgresError) as error:
        raise CliError(f"cannot connect to Postgres: {error}", exit_code=2) from None
    try:
        tenant = await _tenant(log, args.tenant)
    except BaseException:
        await log.close()
        raise
    return log, tenant


async def _tenant(log: AuditLog, given: str) -> uuid.UUID:
    try:
        return uuid.UUID(given)
    except ValueError:
        pass
    found = await log.tenant_id_by_name(given)
    if found is None:
        raise CliError(
            f"unknown tenant {given!r}: give a tenant id or a name `mnemo tenant list` shows"
        )
    return found


def _row_json(row: ChainRow) -> dict[str, Any]:
    return {
        "seq": row.seq,
        "event_id": str(row.event_id),
        "kind": row.kind,
        "occurred_at": row.occurred_at.isoformat(),
        "producer": row.producer,
        "trace": row.trace,
        "payload": dict(row.payload),
        "prev_hash": row.prev_hash.hex(),
        "hash": row.hash.hex(),
        "payload_sha256": None if row.payload_digest is None else row.payload_digest.hex(),
        "redacted_at": None if row.redacted_at is None else row.redacted_at.isoformat(),
    }


def trace_id(traceparent: str | None) -> str | None:
    """The trace id of a W3C `traceparent` (`00-<32 hex>-<16 hex>-<2 hex>`), else None."""
    parts = (traceparent or "").split("-")
    if len(parts) == 4 and len(parts[1]) == 32 and parts[1].strip("0"):
        return parts[1]
    return None


def _row_text(row: ChainRow) -> str:
    """One line per row. Its text (action, producer, principal with client, trace) is callers', so
    the line is escaped (`mnemo_store.shown_text`): a newline in a token's `sub` cannot forge a
    row, an ANSI escape cannot colour the terminal."""
    if row.redacted:
        return shown_text(
            f"{row.seq:>8}  {row.occurred_at.isoformat()}  {row.kind}  producer={row.producer}"
            f"  event={row.event_id}  hash={row.hash.hex()[:16]}  REDACTED"
        )
    action = row.payload.get("action", row.kind)
    trace = trace_id(row.trace)
    return shown_text(
        f"{row.seq:>8}  {row.occurred_at.isoformat()}  {action}  producer={row.producer}"
        f"  event={row.event_id}  hash={row.hash.hex()[:16]}"
        + (f"  by={row.payload['principal']}" if row.payload.get("principal") else "")
        + (f"  trace={trace}" if trace else "")
    )


def _report_json(tenant: uuid.UUID, report: ChainReport) -> dict[str, Any]:
    broken = report.broken
    return {
        "tenant": str(tenant),
        "ok": report.ok,
        "rows": report.rows,
        "head_seq": report.head_seq,
        "head_hash": report.head_hash.hex(),
        "redacted": report.redacted,
        "broken": None
        if broken is None
        else {"seq": broken.seq, "problem": broken.problem, "detail": broken.detail},
    }


def run_verify(args: argparse.Namespace) -> int:
    async def work() -> tuple[uuid.UUID, ChainReport, Checkpoint | None]:
        log, tenant = await _open(args)
        try:
            report = await log.verify(tenant)
            if not args.checkpoints:
                return tenant, report, None
            try:
                latest = await asyncio.wait_for(
                    read_checkpoints(KafkaSettings(), args.checkpoint_topic), 60
                )
            except CheckpointReadError as error:
                raise CliError(str(error)) from None
            except TimeoutError:
                raise CliError("cannot read the checkpoints from Kafka within 60 s") from None
            checkpoint = latest.get(tenant)
            if checkpoint is None:
                return tenant, report, None
            hash_at = await log.hash_at(tenant, checkpoint.seq)
            broken = check_against_checkpoint(report, checkpoint.seq, checkpoint.hash, hash_at)
            if broken is not report.broken:
                report = replace(report, broken=broken)
            return tenant, report, checkpoint
        finally:
            await log.close()

    tenant, report, checkpoint = asyncio.run(work())
    if args.json:
        body = _report_json(tenant, report)
        if args.checkpoints:
            body["checkpoint"] = (
                None
                if checkpoint is None
                else {
                    "seq": checkpoint.seq,
                    "hash": checkpoint.hash.hex(),
                    "at": checkpoint.at.isoformat(),
                }
            )
        print(json.dumps(body))
    elif report.broken is None:
        print(
            f"audit chain of tenant {tenant}: {report.rows} rows verify"
            + (
                f" ({report.redacted} redacted: links verified, payloads gone)"
                if report.redacted
                else ""
            )
            + f"; head seq {report.head_seq}, hash {report.head_hash.hex()}"
        )
        if args.checkpoints:
            print(
                "no checkpoint of this tenant on Kafka yet: a cut tail cannot be ruled out"
                if checkpoint is None
                else f"agrees with the checkpoint of {checkpoint.at.isoformat()} (seq {checkpoint.seq})"
            )
    else:
        b = report.broken
        print(
            f"audit chain of tenant {tenant} is BROKEN at seq {b.seq} ({b.problem}): {shown_text(b.detail)};"
            f" rows 1..{report.head_seq} verify",
            file=sys.stderr,
        )
    return 0 if report.ok else 1


def run_tail(args: argparse.Namespace) -> int:
    async def work() -> None:
        # Ctrl-C (or SIGTERM) asks the loop to stop between pages: a signal that cancelled a query
        # in flight could leave the pool's close waiting on that connection, and tail never exit.
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        log, tenant = await _open(args)
        try:
            after = args.after_seq
            if after is None:
                after = await log.head_seq(tenant)
            while not stop.is_set():
                rows = await log.page(tenant, after_seq=after, limit=500)
                for row in rows:
                    print(json.dumps(_row_json(row)) if args.json else _row_text(row), flush=True)
                    after = row.seq
                if len(rows) < 500:
                    if not args.follow:
                        return
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(stop.wait(), args.interval)
        finally:
            await log.close()

    try:
        asyncio.run(work())
    except KeyboardInterrupt:
        return 0
    return 0
