"""`mnemo navigate CORPUS --query …` and `mnemo retrieve CORPUS --query …` against the navigator's
HTTP API (`--url`, default `MNEMO_NAVIGATOR_URL` or the local stack's). The token comes from
`--token` or `MNEMO_TOKEN` (`mnemo token` mints one). Prints the JSON answer.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from mnemo_corpus import MnemoClient, RemoteCorpusError

from mnemo_cli.commands.token import parse_pairs
from mnemo_cli.errors import CliError
from mnemo_cli.http_transport import HttpxTransport

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


def register(subparsers: Any) -> None:  # argparse's subparsers action has no public type
    navigate = subparsers.add_parser("navigate", help="navigate a corpus over the HTTP API")
    _common(navigate)
    navigate.add_argument("--from", dest="seed", help="seed document id or title")
    navigate.add_argument("--budget", type=int, help="documents to select, seed included")
    navigate.add_argument("--mode", choices=("mdn", "axon"), default="mdn")
    navigate.add_argument("--direction", choices=("out", "both"), default="out")
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


def _print(call: Any) -> int:
    try:
        result = call()
    except RemoteCorpusError as error:
        raise CliError(str(error), exit_code=1) from None
    print(json.dumps(result, indent=2, ensure_ascii=False))
    return 0


def run_navigate(args: argparse.Namespace) -> int:
    body = _body(args)
    body.update(mode=args.mode, direction=args.direction)
    if args.seed:
        body["from"] = args.seed
    if args.budget is not None:
        body["budget"] = args.budget
    client = _client(args)
    return _print(lambda: client.navigate(args.corpus, body))


def run_retrieve(args: argparse.Namespace) -> int:
    body = _body(args)
    body["k"] = args.k
    client = _client(args)
    return _print(lambda: client.retrieve(args.corpus, body))
