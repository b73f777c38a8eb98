"""`mnemo check FILE...`: compile `.axon` declarations and report every problem, compiler-style.

Problems go to stderr as `file:line:col: error: message` (all of them, then a count) and the exit
status is 1. On success one line says what was declared, or `--json` prints the IR.
"""

from __future__ import annotations

import argparse
from typing import Any

from mnemo_axon import CheckResult, Deployment, check_sources

from mnemo_cli.axon_files import (
    add_documents_option,
    document_directory,
    print_diagnostics,
    read_axon_files,
)


def register(subparsers: Any) -> None:  # argparse's subparsers action has no public type
    parser = subparsers.add_parser(
        "check",
        help="check .axon declarations and report every problem",
        description=(
            "Parse and check .axon files as one deployment (axonstore, corpus and document "
            "declarations; flow, step and for blocks are skipped). Prints "
            "file:line:col: error: message for every problem and exits 1, or a one-line "
            "summary (or the IR with --json) and exits 0."
        ),
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help=".axon files of the deployment")
    add_documents_option(parser)
    parser.add_argument("--json", action="store_true", help="print the IR as JSON on success")
    parser.set_defaults(func=run)


def _count(number: int, singular: str, plural: str) -> str:
    return f"{number} {singular if number == 1 else plural}"


def summary_line(result: CheckResult, deployment: Deployment, file_count: int) -> str:
    """One line naming what the files declared (and how many flow blocks were skipped)."""
    parts = [
        _count(len(deployment.stores), "axonstore", "axonstores")
        + (f" ({', '.join(s.name for s in deployment.stores)})" if deployment.stores else ""),
        _count(len(deployment.corpora), "corpus", "corpora")
        + (
            f" ({', '.join(f'{c.name}: {c.kind.value}' for c in deployment.corpora)})"
            if deployment.corpora
            else ""
        ),
        _count(len(deployment.documents), "document", "documents"),
    ]
    line = f"ok: {', '.join(parts)} declared in {_count(file_count, 'file', 'files')}"
    if result.skipped:
        line += (
            f"; {_count(len(result.skipped), 'flow block', 'flow blocks')} skipped "
            "(flows are not compiled)"
        )
    return line


def run(args: argparse.Namespace) -> int:
    sources = read_axon_files(args.files)
    result = check_sources(sources, document_directory(args.documents))
    if result.deployment is None:
        print_diagnostics(result.diagnostics)
        return 1
    if args.json:
        print(result.deployment.to_json(indent=2))
    else:
        print(summary_line(result, result.deployment, len(sources)))
    return 0
