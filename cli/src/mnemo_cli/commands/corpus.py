"""`mnemo corpus list | publish ID | deprecate ID`: the corpus registry's lifecycle, as the owner role.

`apply` registers corpora as draft; only these explicit commands change a status, and only
published corpora are served.
"""

from __future__ import annotations

import argparse
from collections import Counter
from typing import Any

import asyncpg
from mnemo_store.registry import STATUSES, Status, StatusChange, list_corpora, set_corpus_status

from mnemo_cli.commands.apply import with_owner


def register(subparsers: Any) -> None:  # argparse's subparsers action has no public type
    parser = subparsers.add_parser("corpus", help="list, publish and deprecate registered corpora")
    actions = parser.add_subparsers(dest="corpus_command", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="status counts, then one row per corpus")
    listing.set_defaults(func=run_list)
    for action, status in (("publish", "published"), ("deprecate", "deprecated")):
        command = actions.add_parser(action, help=f"mark a corpus {status}")
        command.add_argument("corpus_id", metavar="ID", help="the corpus id (its declared name)")
        command.set_defaults(func=run_status, status=status)


def run_list(args: argparse.Namespace) -> int:
    rows = with_owner(list_corpora)
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


def run_status(args: argparse.Namespace) -> int:
    status: Status = args.status

    async def work(connection: asyncpg.Connection) -> StatusChange:
        return await set_corpus_status(connection, args.corpus_id, status)

    change = with_owner(work)
    if change.changed:
        print(f"corpus {change.corpus_id}: {change.before} → {change.after}")
    else:
        print(f"corpus {change.corpus_id} is already {change.after}; nothing changed")
    return 0
