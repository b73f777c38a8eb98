"""`mnemo corpus list [--json] | publish ID | deprecate ID | add-external ID --url URL`: the corpus
registry's lifecycle, as the owner role.

`add-external` registers someone else's search gateway (`kind = external`) as a draft, or updates
its url, collection and labels keeping its status; publish it like any corpus.

`apply` registers corpora as draft; only these explicit commands change a status, and only
published corpora are served. Deprecating a corpus that an active route scopes is refused, naming
the routes (their lint would fail), unless `--force`. After a change, the lint findings of the
routes naming the corpus are printed as warnings on stderr.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections import Counter
from typing import Any

import asyncpg
from mnemo_store.registry import (
    STATUSES,
    CorpusRow,
    ExternalCorpus,
    Status,
    StatusChange,
    lint_routes,
    list_corpora,
    list_routes,
    read_statuses,
    register_external_corpus,
    set_corpus_status,
)

from mnemo_cli.owner_connection import with_owner


def register(subparsers: Any) -> None:  # argparse's subparsers action has no public type
    parser = subparsers.add_parser("corpus", help="list, publish and deprecate registered corpora")
    actions = parser.add_subparsers(dest="corpus_command", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="status counts, then one row per corpus")
    listing.add_argument(
        "--json",
        action="store_true",
        help="print a JSON array of registry rows (every column, the definition included)",
    )
    listing.set_defaults(func=run_list)
    for action, status in (("publish", "published"), ("deprecate", "deprecated")):
        command = actions.add_parser(action, help=f"mark a corpus {status}")
        command.add_argument("corpus_id", metavar="ID", help="the corpus id (its declared name)")
        if action == "deprecate":
            command.add_argument(
                "--force",
                action="store_true",
                help="deprecate even when active routes scope the corpus (they then fail lint)",
            )
        command.set_defaults(func=run_status, status=status, force=False)
    external = actions.add_parser(
        "add-external", help="register (as draft) or update a corpus served by another gateway"
    )
    external.add_argument("corpus_id", metavar="ID", help="the corpus id routes name")
    external.add_argument("--url", required=True, help="the gateway's search endpoint (POST)")
    external.add_argument("--collection", default="", help="sent as `collection` (default: ID)")
    external.add_argument("--display-name", default="", help="the label (default: ID)")
    external.add_argument("--owner", default="", help="the owning team")
    external.add_argument("--region", default=None, help="optional")
    external.set_defaults(func=run_add_external)


def run_list(args: argparse.Namespace) -> int:
    rows = with_owner(list_corpora)
    if args.json:
        print(json.dumps([_row_json(row) for row in rows], indent=2))
        return 0
    counts = Counter(row.status for row in rows)
    print("  ".join(f"{status}: {counts.get(status, 0)}" for status in STATUSES))
    if not rows:
        print("no corpora registered: `mnemo apply FILE...` registers declared corpora")
        return 0
    width = max(len("ID"), *(len(row.corpus_id) for row in rows))
    print(f"{'ID':{width}}  {'STATUS':10}  {'KIND':11}  {'VERSION':16}  {'UPDATED (UTC)':19}  URL")
    for row in rows:
        updated = row.updated_at.strftime("%Y-%m-%d %H:%M:%S")
        print(
            f"{row.corpus_id:{width}}  {row.status:10}  {row.kind:11}  {row.version:16}  "
            f"{updated:19}  {row.url}"
        )
    return 0


def _row_json(row: CorpusRow) -> dict[str, object]:
    data = dataclasses.asdict(row)
    data["updated_at"] = row.updated_at.isoformat()
    return data


def run_status(args: argparse.Namespace) -> int:
    status: Status = args.status

    async def work(connection: asyncpg.Connection) -> tuple[StatusChange, list[str]]:
        change = await set_corpus_status(connection, args.corpus_id, status, force=args.force)
        using = [
            route for route in await list_routes(connection) if change.corpus_id in route.scope
        ]
        return change, lint_routes(using, await read_statuses(connection)) if using else []

    change, findings = with_owner(work)
    if change.changed:
        print(f"corpus {change.corpus_id}: {change.before} → {change.after}")
    else:
        print(f"corpus {change.corpus_id} is already {change.after}; nothing changed")
    for finding in findings:
        print(f"corpus: warning: route lint: {finding}", file=sys.stderr)
    return 0


def run_add_external(args: argparse.Namespace) -> int:
    corpus = ExternalCorpus(
        corpus_id=args.corpus_id,
        url=args.url,
        display_name=args.display_name,
        collection=args.collection,
        owner=args.owner,
        region=args.region,
    )

    async def work(connection: asyncpg.Connection) -> bool:
        return await register_external_corpus(connection, corpus)

    created = with_owner(work)
    if created:
        print(
            f"corpus {corpus.corpus_id}: registered as draft (external gateway {corpus.url}); "
            f"`mnemo corpus publish {corpus.corpus_id}` serves it"
        )
    else:
        print(f"corpus {corpus.corpus_id}: updated (external gateway {corpus.url}); status kept")
    return 0
