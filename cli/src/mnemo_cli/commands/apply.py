"""`mnemo apply FILE...`: compile declarations, then create or extend their stores and register corpora.

Runs as the owner role (MNEMO_OWNER_DATABASE_URL). Additive only: a change that would drop or
retype anything is refused, printing the statements an operator would have to run. New corpora are
registered `draft`; existing ones keep their status. `--dry-run` prints the SQL plan and changes
nothing. Applying the same files twice changes nothing the second time.

The documents of inline (form a) and declared-graph (form c) corpora are stored with the corpus
version they belong to (`mnemo_store.corpus_documents`): declared ones from the files, the others
from the `--documents` folder.

Route lint findings (an active route scoping an unknown or unpublished corpus) are printed as
warnings on stderr after the apply; they do not fail it, because routes are not declared in the
files and a newly registered corpus is a draft until `mnemo corpus publish`.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from typing import Any

import asyncpg
from mnemo_axon import check_sources
from mnemo_store.applier import DEFAULT_LOCK_TIMEOUT, ApplyReport, apply_deployment

from mnemo_cli.axon_files import (
    add_documents_option,
    document_directory,
    print_diagnostics,
    read_axon_files,
)
from mnemo_cli.declared_documents import corpus_documents, store_documents
from mnemo_cli.owner_connection import with_owner

GATEWAY_URL_VARIABLE = "MNEMO_GATEWAY_URL"
DEFAULT_GATEWAY_URL = "http://127.0.0.1:8080"


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
    add_documents_option(parser)
    parser.add_argument("--dry-run", action="store_true", help="print the SQL plan, change nothing")
    parser.add_argument(
        "--lock-timeout",
        type=_seconds,
        default=DEFAULT_LOCK_TIMEOUT,
        metavar="SECONDS",
        help=f"give up (changing nothing, naming who holds it) when a lock is not granted within "
        f"SECONDS, so readers of a store never queue behind apply (default {DEFAULT_LOCK_TIMEOUT:g})",
    )
    parser.add_argument(
        "--gateway-url",
        default=None,
        help=f"base URL of the search gateway registered for each corpus "
        f"(default: ${GATEWAY_URL_VARIABLE} or {DEFAULT_GATEWAY_URL})",
    )
    parser.set_defaults(func=run)


def _seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and 0 < seconds <= 3600):
        raise argparse.ArgumentTypeError(
            f"{text[:40]!r} is not a number of seconds above 0 and at most 3600"
        )
    return seconds


def run(args: argparse.Namespace) -> int:
    result = check_sources(read_axon_files(args.files), document_directory(args.documents))
    if result.deployment is None:
        print_diagnostics(result.diagnostics, "nothing applied")
        return 1
    deployment = result.deployment
    gateway = args.gateway_url or os.environ.get(GATEWAY_URL_VARIABLE) or DEFAULT_GATEWAY_URL
    documents = corpus_documents(deployment, args.documents)
    stored: list[str] = []

    async def work(connection: asyncpg.Connection) -> ApplyReport:
        report = await apply_deployment(
            connection,
            deployment,
            gateway_base_url=gateway,
            dry_run=args.dry_run,
            lock_timeout=args.lock_timeout,
        )
        if not args.dry_run:
            stored.extend(await store_documents(connection, documents))
        return report

    report = with_owner(work)
    if args.dry_run:
        print(report.sql() or "-- nothing to do: the database already matches the declarations")
    elif not report.changes:
        print("apply: nothing to do, the database already matches the declarations")
    else:
        for line in report.changes:
            print(f"apply: {line}")
    for line in stored:
        print(f"apply: {line}")
    for finding in report.lint:
        print(f"apply: warning: route lint: {finding}", file=sys.stderr)
    return 0
