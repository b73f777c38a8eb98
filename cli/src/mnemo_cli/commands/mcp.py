"""`mnemo mcp serve`: Mnemo as an MCP server over stdio, for desktop agent hosts
(`mnemo_client.mcp_server`). It answers through the navigator's HTTP API at `--url` (default
`MNEMO_NAVIGATOR_URL` or the local stack's) with the token read from the environment variable
`--token-env` names (default `MNEMO_TOKEN`): never from a flag, which any user of the machine can
read in the process list. Stdout carries the protocol; nothing else is printed there.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
from typing import Any

from mnemo_cli.errors import CliError

DEFAULT_URL = "http://127.0.0.1:8080"
_VARIABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def register(subparsers: Any) -> None:  # argparse's subparsers action has no public type
    mcp = subparsers.add_parser("mcp", help="Mnemo as an MCP server for agent hosts")
    commands = mcp.add_subparsers(dest="mcp_command", metavar="COMMAND", required=True)
    serve = commands.add_parser(
        "serve",
        help="serve MCP over stdio: tools navigate, retrieve, list_corpora; corpus resources",
        # No abbreviations: `--token SECRET` must not be taken for `--token-env`.
        allow_abbrev=False,
    )
    serve.add_argument("--url", help="navigator base URL (default MNEMO_NAVIGATOR_URL or local)")
    serve.add_argument(
        "--token-env",
        default="MNEMO_TOKEN",
        metavar="VAR",
        help="the environment variable holding the bearer token (default MNEMO_TOKEN)",
    )
    serve.add_argument(
        "--corpus",
        action="append",
        default=[],
        metavar="ID",
        help="a corpus list_corpora reports (repeat for more)",
    )
    serve.set_defaults(func=run_serve)


def token_from(variable: str) -> str:
    if not _VARIABLE.match(variable):
        raise CliError(
            f"--token-env takes the NAME of an environment variable (letters, digits, _), "
            f"not a token: got {variable[:12]!r}…"
        )
    token = os.environ.get(variable, "").strip()
    if not token:
        raise CliError(
            f"environment variable {variable} is empty or not set: put the bearer token there "
            f"(mint one with `mnemo token --tenant …`)"
        )
    return token


def run_serve(args: argparse.Namespace) -> int:
    token = token_from(args.token_env)
    url = args.url or os.environ.get("MNEMO_NAVIGATOR_URL") or DEFAULT_URL
    # Imported here: the MCP SDK is loaded only by the command that serves it.
    from mnemo_client.mcp_server import serve_stdio

    asyncio.run(serve_stdio(url, token, args.corpus))
    return 0
