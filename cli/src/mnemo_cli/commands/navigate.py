"""`mnemo navigate CORPUS --query …` and `mnemo retrieve CORPUS --query …` against the navigator's
HTTP API (`--url`, default `MNEMO_NAVIGATOR_URL` or the local stack's). The token comes from
`--token` or `MNEMO_TOKEN` (`mnemo token` mints one). Prints the JSON answer, or with `--brief`
one line per hit (score and title; what it contradicts, the document it was reached from) and the
trail.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable
from typing import Any

from mnemo_corpus import MnemoClient, RemoteCorpusError

from mnemo_cli.commands.token import parse_pairs
from mnemo_cli.errors import CliError
from mnemo_cli.http_transport import HttpxTransport
from mnemo_cli.query_rule import check_query

DEFAULT_URL = "http://127.0.0.1:8080"


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("corpus", help="the corpus id")
    parser.add_argument("--query", required=True, help="what to look for")
    parser.add_argument("--where", help="a where: filter (ANDed to any pinned scope)")
    parser.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a ${KEY} value for --where",
    )
    parser.add_argument("--url", help="navigator base URL (default MNEMO_NAVIGATOR_URL or local)")
    parser.add_argument("--token", help="bearer token (default MNEMO_TOKEN)")
    parser.add_argument(
        "--brief", action="store_true", help="one line per hit instead of the JSON answer"
    )


def register(subparsers: Any) -> None:  # argparse's subparsers action has no public type
    navigate = subparsers.add_parser("navigate", help="navigate a corpus over the HTTP API")
    _common(navigate)
    navigate.add_argument("--from", dest="seed", help="seed document id or title")
    navigate.add_argument("--budget", type=int, help="documents to select, seed included")
    navigate.add_argument("--mode", choices=("mdn", "axon"), default="mdn")
    navigate.add_argument(
        "--direction",
        choices=("out", "both"),
        default="both",
        help="follow edges both ways (default) or from → to only",
    )
    navigate.set_defaults(func=run_navigate)
    retrieve = subparsers.add_parser("retrieve", help="top-k full-text retrieval over the HTTP API")
    _common(retrieve)
    retrieve.add_argument("-k", type=int, default=5, help="how many items (default 5)")
    retrieve.set_defaults(func=run_retrieve)


def _client(args: argparse.Namespace) -> MnemoClient:
    token = args.token or os.environ.get("MNEMO_TOKEN")
    if not token:
        raise CliError("no token: pass --token or set MNEMO_TOKEN (mint one with `mnemo token`)")
    url = args.url or os.environ.get("MNEMO_NAVIGATOR_URL") or DEFAULT_URL
    return MnemoClient(url, token, HttpxTransport())


def _body(args: argparse.Namespace) -> dict[str, Any]:
    body: dict[str, Any] = {"query": args.query}
    if args.where:
        body["where"] = args.where
    if args.param:
        body["params"] = parse_pairs(args.param, "--param")
    return body


def _print(call: Any, brief: Callable[[Any], list[str]] | None = None) -> int:
    try:
        result = call()
    except RemoteCorpusError as error:
        raise CliError(str(error), exit_code=1) from None
    if brief is None:
        print(json.dumps(result, indent=2, ensure_ascii=False))
    else:
        print("\n".join(brief(result)))
    return 0


def brief_navigation(corpus: str, answer: Any) -> list[str]:
    """A navigate answer as lines: a summary, one line per hit, the trail."""
    hits = answer.get("hits", [])
    titles = {hit["id"]: hit.get("title") or hit["id"] for hit in hits}
    diagnostics = answer.get("diagnostics", {})
    lines = [
        f"navigate {corpus}: {len(hits)} hits, revision {answer.get('revision')}, "
        f"graph cache {diagnostics.get('cache', '?')}, {diagnostics.get('epr_iterations', '?')} "
        "EPR iterations"
    ]
    for hit in hits:
        line = f"  {hit.get('score', 0.0):7.3f}  {titles[hit['id']]}"
        via = hit.get("via")
        if isinstance(via, dict) and via.get("from"):
            origin = titles.get(via["from"], via["from"])
            line += f"  (via {via.get('etype', 'an edge')} from {origin})"
        if hit.get("contradicts"):
            names = ", ".join(titles.get(other, other) for other in hit["contradicts"])
            line += f"  [contradicts: {names}]"
        lines.append(line)
    lines.append(f"trail: {answer.get('trail') or '(empty)'}")
    return lines


def brief_retrieval(corpus: str, answer: Any) -> list[str]:
    """A retrieve answer as lines: a summary, one line per item (similarity and title)."""
    items = answer.get("items", [])
    lines = [f"retrieve {corpus}: {len(items)} items"]
    lines += [
        f"  {item.get('similarity', 0.0):5.3f}  {item.get('title') or item['id']}" for item in items
    ]
    return lines


def run_navigate(args: argparse.Namespace) -> int:
    check_query(args.query, args.seed)
    body = _body(args)
    body.update(mode=args.mode, direction=args.direction)
    if args.seed:
        body["from"] = args.seed
    if args.budget is not None:
        body["budget"] = args.budget
    client = _client(args)
    brief = (lambda answer: brief_navigation(args.corpus, answer)) if args.brief else None
    return _print(lambda: client.navigate(args.corpus, body), brief)


def run_retrieve(args: argparse.Namespace) -> int:
    check_query(args.query)
    body = _body(args)
    body["k"] = args.k
    client = _client(args)
    brief = (lambda answer: brief_retrieval(args.corpus, answer)) if args.brief else None
    return _print(lambda: client.retrieve(args.corpus, body), brief)
