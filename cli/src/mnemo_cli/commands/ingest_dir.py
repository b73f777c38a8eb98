"""`mnemo ingest-dir ROOT --corpus NAME --tenant T`: a folder of markdown as persist commands.

Every markdown file becomes one document row and every link one edge row (see
`mnemo_corpus.entry_graph`), published as `mnemo.persist.v1` commands, documents first. A link
that leads nowhere is reported on stderr, never dropped silently. `--dry-run` prints the
commands, one JSON line each, instead of publishing them. Before publishing, the tenant and the
corpus are checked (as the owner role): the tenant must exist, and the corpus must be a registered
store corpus reading the documents and edges stores the commands name.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import uuid
from pathlib import Path
from typing import Any

from mnemo_corpus import (
    CorpusError,
    DirectoryCorpus,
    DocumentsStore,
    EdgesStore,
    IngestPlan,
    LinkOptions,
    entry_graph,
    plan_ingest,
)
from mnemo_corpus.directory import DEFAULT_GLOB
from mnemo_corpus.entry_graph import (
    DEFAULT_RELATED_ETYPE,
    DEFAULT_RELATED_WEIGHT,
    DEFAULT_WIKI_LINK_ETYPE,
    DEFAULT_WIKI_LINK_WEIGHT,
)
from mnemo_corpus.persist_commands import DEFAULT_DOCUMENTS_STORE, DEFAULT_EDGES_STORE
from mnemo_mdn import RELATION_TYPES
from mnemo_store.registry import read_corpus

from mnemo_cli.errors import CliError
from mnemo_cli.json_input import read_json_file
from mnemo_cli.owner_connection import with_owner
from mnemo_cli.publishing import persist_row, publish_rows

PERSIST_EVENT_TYPE = "mnemo.persist.v1"
_UUID = re.compile("[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_CORPUS_NAME = re.compile("[A-Za-z_][A-Za-z0-9_]{0,199}")


def ingest_dir_command(args: argparse.Namespace) -> int:
    plan = build_plan(args)
    if not args.dry_run:
        return _publish(args, plan)
    for command in plan.commands:
        line = {
            "type": PERSIST_EVENT_TYPE,
            "tenant": args.tenant,
            "corpus": args.corpus,
            "data": command.as_data(),
        }
        print(json.dumps(line))
    print(
        f"ingest-dir {args.root} (corpus {args.corpus}, tenant {args.tenant}): "
        f"{plan.summary()}; dry run, nothing published",
        file=sys.stderr,
    )
    for link in plan.unresolved_links:
        print(f"unresolved link: {link.describe()}", file=sys.stderr)
    return 0


def _publish(args: argparse.Namespace, plan: IngestPlan) -> int:
    tenant = uuid.UUID(args.tenant)
    with_owner(lambda connection: _check_target(connection, tenant, args))
    result = asyncio.run(publish_rows([persist_row(c) for c in plan.commands], tenant))
    for link in plan.unresolved_links:
        print(f"unresolved link: {link.describe()}", file=sys.stderr)
    for error in result.errors:
        print(f"failed: {error}", file=sys.stderr)
    print(
        f"ingest-dir {args.root} (corpus {args.corpus}, tenant {args.tenant}): "
        f"{plan.summary()}; sent {result.sent}, failed {result.failed}",
        file=sys.stderr,
    )
    return 0 if result.failed == 0 else 1


async def _check_target(connection: Any, tenant: uuid.UUID, args: argparse.Namespace) -> None:
    """The tenant exists; the corpus is a registered store corpus reading the named stores."""
    if not await connection.fetchval("SELECT true FROM mnemo.tenants WHERE tenant_id = $1", tenant):
        raise CliError(f"no tenant {tenant}: `mnemo tenant list` shows the tenants", exit_code=1)
    row = await read_corpus(connection, args.corpus)
    if row is None:
        raise CliError(
            f"no corpus {args.corpus!r}: declare it and run `mnemo apply` "
            "(`mnemo corpus list` shows the corpora)",
            exit_code=1,
        )
    if row.kind != "store_graph":
        raise CliError(
            f"corpus {args.corpus!r} is a {row.kind} corpus; ingest-dir writes to a store "
            "corpus (`corpus … from axonstore`)",
            exit_code=1,
        )
    corpus = row.definition.get("corpus") or {}
    for option, given, declared in (
        ("--documents-store", args.documents_store, _store_of(corpus, "documents_store")),
        ("--edges-store", args.edges_store, _store_of(corpus, "relations_store")),
    ):
        if declared is not None and given != declared:
            raise CliError(
                f"corpus {args.corpus!r} reads {declared!r}, not {given!r}: "
                f"pass {option} {declared}",
                exit_code=1,
            )


def _store_of(corpus: dict[str, Any], mapping: str) -> str | None:
    """The store a registered corpus definition names for `mapping` (None when it names none)."""
    store = (corpus.get(mapping) or {}).get("store")
    return None if store is None else str(store)


def build_plan(args: argparse.Namespace) -> IngestPlan:
    """Read the folder and turn it into commands; every user error becomes a one-line CliError."""
    tenant = _tenant(args.tenant)
    if _CORPUS_NAME.fullmatch(args.corpus) is None:
        raise CliError(
            f"--corpus {args.corpus[:80]!r} is not a corpus name: a declared name, 1 to 200 "
            "letters, digits and '_', not starting with a digit (e.g. Handbook)"
        )
    args.tenant = tenant
    _check_named_files(args)
    documents_store = _documents_store(args.documents_store, args.document_columns)
    edges_store = _edges_store(args.edges_store, args.edge_columns)
    try:
        options = LinkOptions(
            related_etype=args.link_etype,
            related_weight=args.link_weight,
            wiki_link_etype=args.wiki_link_etype,
            wiki_link_weight=args.wiki_link_weight,
        )
        corpus = DirectoryCorpus(
            Path(args.root),
            summaries_file=args.summaries_file,
            cross_links_file=args.cross_links_file,
            extra_aliases_file=args.extra_aliases_file,
            glob=args.glob,
        )
        graph = entry_graph(corpus, options)
    except OSError as error:
        name = str(error.filename)
        shown = name if len(name) <= 120 else name[:117] + "..."
        raise CliError(f"{error.strerror or error}: {shown}") from None
    except (CorpusError, ValueError) as error:
        raise CliError(str(error)) from error
    return plan_ingest(graph, documents_store, edges_store)


def _tenant(text: str) -> str:
    """`--tenant`: a tenant id (the uuid `mnemo tenant create` prints), in canonical form."""
    try:
        if _UUID.fullmatch(text.strip()) is None:
            raise ValueError(text)
        return str(uuid.UUID(text.strip()))
    except ValueError:
        raise CliError(
            f"--tenant {text[:80]!r} is not a tenant id: give the uuid `mnemo tenant create` "
            "printed (`mnemo tenant list` shows them), e.g. 4b1c0b8e-35d5-4a5f-9c69-0d3f7fd0a5b8"
        ) from None


def _check_named_files(args: argparse.Namespace) -> None:
    """A sidecar file the user names must exist and hold a JSON object: the library would skip it
    with a warning, but a file named on the command line and then ignored is an error here."""
    root = Path(args.root)
    try:
        if not root.is_dir():
            return  # the corpus says so, in its own words
    except (OSError, ValueError):
        return
    for option, value in (
        ("--summaries-file", args.summaries_file),
        ("--cross-links-file", args.cross_links_file),
        ("--extra-aliases-file", args.extra_aliases_file),
    ):
        if value is None:
            continue
        path = root / value
        if not path.is_file():
            raise CliError(
                f"{option} {value}: no such file {path} (sidecar files are relative to ROOT)"
            )
        data = read_json_file(path, f"{option} {value}")
        if not isinstance(data, dict):
            raise CliError(
                f"{option} {value} must hold a JSON object ({{path: ...}}), got "
                f"{type(data).__name__}"
            )


def _columns(option: str, value: str, expected: str, counts: tuple[int, ...]) -> list[str]:
    columns = [column.strip() for column in value.split(",")]
    if len(columns) not in counts or not all(columns):
        raise CliError(f"{option} takes {expected} (comma-separated), got {value!r}")
    return columns


def _documents_store(name: str, columns_option: str) -> DocumentsStore:
    columns = _columns("--document-columns", columns_option, "ID,TITLE or ID,TITLE,BODY", (2, 3))
    body_column = columns[2] if len(columns) == 3 else None
    try:
        return DocumentsStore(name, columns[0], columns[1], body_column)
    except ValueError as error:
        raise CliError(str(error)) from error


def _edges_store(name: str, columns_option: str) -> EdgesStore:
    columns = _columns("--edge-columns", columns_option, "FROM,TO,ETYPE,WEIGHT", (4,))
    try:
        return EdgesStore(name, *columns)
    except ValueError as error:
        raise CliError(str(error)) from error


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "ingest-dir",
        help="publish a folder of markdown as a corpus's documents and edges",
        description=(
            "Turn every markdown file under ROOT into a document row and every link into an "
            "edge row, as mnemo.persist.v1 commands (documents first). Links that lead nowhere "
            "are reported on stderr."
        ),
    )
    parser.add_argument("root", metavar="ROOT", help="the folder to ingest")
    parser.add_argument("--corpus", required=True, metavar="NAME", help="the corpus it feeds")
    parser.add_argument(
        "--tenant", required=True, metavar="TENANT", help="the tenant it belongs to"
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print one JSON line per persist command and a summary on stderr; publish nothing",
    )
    stores = parser.add_argument_group("stores and columns")
    stores.add_argument("--documents-store", default=DEFAULT_DOCUMENTS_STORE, metavar="STORE")
    stores.add_argument("--document-columns", default="id,title,body", metavar="ID,TITLE[,BODY]")
    stores.add_argument("--edges-store", default=DEFAULT_EDGES_STORE, metavar="STORE")
    stores.add_argument(
        "--edge-columns", default="from_id,to_id,etype,weight", metavar="FROM,TO,ETYPE,WEIGHT"
    )
    links = parser.add_argument_group("links as edges")
    etypes = sorted(RELATION_TYPES)
    links.add_argument(
        "--link-etype",
        default=DEFAULT_RELATED_ETYPE,
        choices=etypes,
        help="edge type of a cross-link (default: %(default)s)",
    )
    links.add_argument(
        "--link-weight",
        type=float,
        default=DEFAULT_RELATED_WEIGHT,
        help="weight of a cross-link edge, in (0, 1] (default: %(default)s)",
    )
    links.add_argument(
        "--wiki-link-etype",
        default=DEFAULT_WIKI_LINK_ETYPE,
        choices=etypes,
        help="edge type of a [[alias]] wiki-link (default: %(default)s)",
    )
    links.add_argument(
        "--wiki-link-weight",
        type=float,
        default=DEFAULT_WIKI_LINK_WEIGHT,
        help="weight of a wiki-link edge, in (0, 1] (default: %(default)s)",
    )
    sources = parser.add_argument_group("folder layout (files relative to ROOT)")
    sources.add_argument("--summaries-file", metavar="FILE", help="JSON {path: summary}")
    sources.add_argument("--cross-links-file", metavar="FILE", help="JSON {path: [paths]}")
    sources.add_argument("--extra-aliases-file", metavar="FILE", help="JSON {path: [aliases]}")
    sources.add_argument("--glob", default=DEFAULT_GLOB, help="which files (default: %(default)s)")
    parser.set_defaults(func=ingest_dir_command)
