"""`mnemo graph epr|navigate`: the MDN engine embedded in the command, no services needed.

`epr` prints `{"epr": {id: x}, "epr_plus": {...}, "epr_minus": {...}, "iterations": n,
"diagnostics"}`; `navigate` prints `{"hits": [...], "trail", "coverage", "diagnostics"}`; both
diagnostics count the edges skipped and the weights clamped (also said on stderr). The graph comes from a JSON file in the
format of `libs/mdn/README.md`; every way a graph can be given is resolved in `_load_graph`. Bad input
is one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from mnemo_corpus import BundledDocsCorpus, CorpusError, DirectoryCorpus, entry_graph
from mnemo_corpus.bundled_docs import CROSS_LINKS_FILE, SUMMARIES_FILE
from mnemo_mdn import (
    CorpusGraph,
    GraphFormatError,
    MdnError,
    MdnParams,
    epr,
    graph_from_json,
    navigate,
)
from mnemo_mdn.graph import MIN_EDGE_WEIGHT

from mnemo_cli.errors import CliError
from mnemo_cli.json_input import read_json_file
from mnemo_cli.query_rule import check_query

_DEFAULTS = MdnParams()


def register(subparsers: Any) -> None:  # argparse's subparsers action has no public type
    parser = subparsers.add_parser(
        "graph",
        help="run the MDN engine on a graph file (EPR, navigation)",
        description="Run the MDN graph engine in this process on a JSON graph file.",
    )
    commands = parser.add_subparsers(dest="graph_command", metavar="COMMAND")
    parser.set_defaults(func=lambda _args: _usage(parser))

    epr_parser = commands.add_parser(
        "epr",
        help="print signed Epistemic PageRank of every document",
        description="Print EPR, EPR⁺ and EPR⁻ of every document and the iteration count.",
    )
    _add_graph_source(epr_parser)
    _add_epr_parameters(epr_parser)
    epr_parser.set_defaults(func=run_epr)

    navigate_parser = commands.add_parser(
        "navigate",
        help="navigate a graph for a query",
        description="Navigate the graph for a query and print hits, trail, coverage, diagnostics.",
    )
    _add_graph_source(navigate_parser)
    navigate_parser.add_argument("--query", "-q", required=True, help="the query text")
    navigate_parser.add_argument(
        "--from",
        dest="seed",
        metavar="SEED",
        help="seed document (id or exact title); default: the most relevant document",
    )
    navigate_parser.add_argument(
        "--budget", type=int, default=5, help="documents to select, seed included (default 5)"
    )
    navigate_parser.add_argument(
        "--mode",
        choices=("mdn", "axon"),
        default="mdn",
        help="mdn: signed, weighted walk with restarts (default); axon: reference parity",
    )
    navigate_parser.add_argument(
        "--direction",
        choices=("out", "both"),
        default="both",
        help="follow edges both ways (default) or from → to only",
    )
    _add_epr_parameters(navigate_parser)
    navigate_parser.set_defaults(func=run_navigate)


def _add_graph_source(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "graph", nargs="?", metavar="GRAPH.json", help="graph file (format: libs/mdn/README.md)"
    )
    parser.add_argument(
        "--dir",
        metavar="ROOT",
        help="instead of GRAPH.json: a folder of markdown, one document per file, links as edges; "
        f"its sidecars {SUMMARIES_FILE} and {CROSS_LINKS_FILE} are read when present",
    )
    parser.add_argument(
        "--bundled-docs",
        action="store_true",
        help="instead of GRAPH.json: Mnemo's own manual, shipped with the mnemo-corpus package",
    )


def _add_epr_parameters(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--damping",
        type=float,
        default=_DEFAULTS.damping,
        metavar="D",
        help=f"EPR damping d in (0, 1) (default {_DEFAULTS.damping})",
    )
    parser.add_argument(
        "--lambda",
        dest="distrust_penalty",
        type=float,
        default=_DEFAULTS.distrust_penalty,
        metavar="L",
        help=f"distrust penalty λ in [0, 1] (default {_DEFAULTS.distrust_penalty})",
    )


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def run_epr(args: argparse.Namespace) -> int:
    graph = _load_graph(args)
    try:
        result = epr(graph, _params(args))
    except MdnError as error:
        raise CliError(str(error)) from None
    _warn_about_edges(graph)
    _print_json({**result.to_json(), "diagnostics": graph.diagnostics.to_json()})
    return 0


def run_navigate(args: argparse.Namespace) -> int:
    check_query(args.query, args.seed)
    graph = _load_graph(args)
    try:
        navigation = navigate(
            graph,
            args.query,
            seed=args.seed,
            budget=args.budget,
            mode=args.mode,
            direction=args.direction,
            params=_params(args),
        )
    except MdnError as error:
        raise CliError(str(error)) from None
    _warn_about_edges(graph)
    _print_json(navigation.to_json())
    return 0


def _load_graph(args: argparse.Namespace) -> CorpusGraph:
    """The graph the arguments name. Every graph source is resolved here, and only here."""
    given = [args.graph is not None, args.dir is not None, args.bundled_docs]
    if sum(given) > 1:
        raise CliError("give one graph source: GRAPH.json, --dir ROOT or --bundled-docs")
    if args.dir is not None or args.bundled_docs:
        return _markdown_graph(args)
    if args.graph is None:
        raise CliError(
            "no graph given: pass GRAPH.json (a file in the format of libs/mdn/README.md), "
            "--dir ROOT (a folder of markdown) or --bundled-docs"
        )
    path = Path(args.graph)
    data = read_json_file(path)
    if not isinstance(data, dict):
        raise CliError(
            f"{path}: a graph must be a JSON object with 'documents' and 'edges', got "
            f"{type(data).__name__}"
        )
    try:
        return graph_from_json(data)
    except GraphFormatError as error:
        raise CliError(f"{path}: {error}") from None


def _markdown_graph(args: argparse.Namespace) -> CorpusGraph:
    """A folder of markdown, or the bundled manual, as a graph (see `mnemo_corpus.entry_graph`)."""
    try:
        corpus = BundledDocsCorpus() if args.bundled_docs else _directory(args.dir)
        graph = entry_graph(corpus)
    except (CorpusError, ValueError) as error:
        raise CliError(str(error)) from None
    # A link that leads nowhere is left out of the graph, so it is reported, never dropped silently.
    for link in graph.unresolved_links:
        print(f"mnemo: warning: unresolved link: {link.describe()}", file=sys.stderr)
    return graph.to_corpus_graph(classify=True)


def _directory(root: str) -> DirectoryCorpus:
    """A markdown folder with its sidecars (summaries, cross-links) when it has them, as the
    bundled manual has; a sidecar that is there but malformed is reported by the corpus."""
    folder = Path(root)
    present = {
        name: name if (folder / name).is_file() else None
        for name in (SUMMARIES_FILE, CROSS_LINKS_FILE)
    }
    return DirectoryCorpus(
        folder,
        summaries_file=present[SUMMARIES_FILE],
        cross_links_file=present[CROSS_LINKS_FILE],
    )


def _params(args: argparse.Namespace) -> MdnParams:
    try:
        return MdnParams(damping=args.damping, distrust_penalty=args.distrust_penalty)
    except MdnError as error:
        raise CliError(str(error)) from None


def _warn_about_edges(graph: CorpusGraph) -> None:
    # Besides the `diagnostics` key of the output, skipped and clamped edges are said on stderr.
    diagnostics = graph.diagnostics
    if diagnostics.skipped_edges:
        print(
            f"mnemo: warning: {diagnostics.skipped_edges} edge(s) skipped "
            f"({diagnostics.unknown_endpoint} unknown endpoint, {diagnostics.unknown_type} "
            f"unknown type, {diagnostics.non_finite_weight} non-finite weight)",
            file=sys.stderr,
        )
    if diagnostics.clamped_weight:
        print(
            f"mnemo: warning: {diagnostics.clamped_weight} edge weight(s) outside "
            f"[{MIN_EDGE_WEIGHT:g}, 1] clamped into it",
            file=sys.stderr,
        )


def _print_json(value: object) -> None:
    print(json.dumps(value, ensure_ascii=False, indent=2))
