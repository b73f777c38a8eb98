"""Entry point of the `mnemo` command: builds the argument parser from the command modules."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from mnemo_cli.errors import CliError

# One module per command group under mnemo_cli.commands; each exposes
# `register(subparsers)` and sets `func(args) -> int` on the parsers it adds.
COMMAND_MODULES: tuple[str, ...] = (
    "dev",
    "ingest_dir",
    "persist",
    "forget",
    "dlt",
    "check",
    "explain_where",
    "apply",
    "tenant",
    "corpus",
    "route",
    "graph",
    "audit",
    "token",
    "navigate",
    "mcp",
)


# The module that registers each command, so that a run imports only its command's module (some
# import the graph engine or the Kafka client, seconds on a busy machine). A unit test keeps this
# map equal to what the modules register.
COMMAND_MODULE_OF: dict[str, str] = {
    "dev": "dev",
    "ingest-dir": "ingest_dir",
    "persist": "persist",
    "forget": "forget",
    "dlt": "dlt",
    "check": "check",
    "explain-where": "explain_where",
    "apply": "apply",
    "tenant": "tenant",
    "corpus": "corpus",
    "route": "route",
    "graph": "graph",
    "audit": "audit",
    "token": "token",
    "navigate": "navigate",
    "retrieve": "navigate",
    "mcp": "mcp",
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or only of `command` when a module is known to register it."""
    parser = argparse.ArgumentParser(
        prog="mnemo",
        description="Mnemo: living knowledge graphs for AI agents.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    only = COMMAND_MODULE_OF.get(command or "")
    for name in (only,) if only else COMMAND_MODULES:
        module = importlib.import_module(f"mnemo_cli.commands.{name}")
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    # Text that cannot be encoded (a lone surrogate read from a JSON escape or a non-UTF-8
    # argument) is printed as a backslash escape, never a traceback.
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    arguments = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(arguments[0] if arguments else None)
    args = parser.parse_args(arguments)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        code: int = func(args)
    except CliError as error:
        print(f"mnemo: error: {error}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())
