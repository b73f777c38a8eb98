"""`mnemo route apply FILE | list [--json]`: routes as data, written as the owner role.

A route file is YAML or JSON: one route, a list of routes, or `{routes: [...]}`; each route has
`route_id`, `route_version` (text), `mode` (`deterministic_prefetch` or `tool`), `scope` (a list of
corpus ids) and optionally `active` (default true). The lint runs before anything is written and
blocks: a scoped id that is not a registered, published corpus fails the whole apply, naming route,
version and corpus (`mnemo_store.registry.apply_routes`).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import asyncpg
import yaml
from mnemo_store.registry import Route, RouteChange, apply_routes, list_routes, parse_routes

from mnemo_cli.errors import CliError
from mnemo_cli.owner_connection import with_owner

MAX_FILE_BYTES = 1_000_000


def register(subparsers: Any) -> None:  # argparse's subparsers action has no public type
    parser = subparsers.add_parser("route", help="apply and list routes (the registry's routes)")
    actions = parser.add_subparsers(dest="route_command", metavar="ACTION", required=True)
    applying = actions.add_parser(
        "apply", help="lint, then write the routes of a YAML or JSON file (nothing when lint fails)"
    )
    applying.add_argument("file", metavar="FILE", type=Path, help="a .yaml, .yml or .json file")
    applying.set_defaults(func=run_apply)
    listing = actions.add_parser("list", help="every version of every route")
    listing.add_argument("--json", action="store_true", help="print a JSON array of routes")
    listing.set_defaults(func=run_list)


def read_document(path: Path) -> object:
    """The parsed route file: JSON for `.json`, YAML otherwise (YAML reads JSON too)."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise CliError(f"{path}: {size} bytes; a route file is at most {MAX_FILE_BYTES}")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise CliError(f"cannot read the route file {path}: {error}") from None
    try:
        if path.suffix.lower() == ".json":
            return json.loads(text)
        return yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as error:
        kind = "JSON" if path.suffix.lower() == ".json" else "YAML"
        message = " ".join(str(error).split())
        raise CliError(f"{path} is not valid {kind}: {message}") from None


def run_apply(args: argparse.Namespace) -> int:
    try:
        routes = parse_routes(read_document(args.file))
    except ValueError as error:
        raise CliError(f"{args.file}: {error}") from None

    async def work(connection: asyncpg.Connection) -> list[RouteChange]:
        return await apply_routes(connection, routes)

    for change in with_owner(work):
        route = change.route
        state = "active" if route.active else "inactive"
        verb = "created" if change.created else "updated"
        print(f"route {route.key}: {verb} ({route.mode}, {state}, scope {list(route.scope)})")
        for other in change.deactivated:
            print(f"route {other}: made inactive ({route.key} is the active version)")
    return 0


def route_json(route: Route) -> dict[str, object]:
    return {
        "route_id": route.route_id,
        "route_version": route.route_version,
        "mode": route.mode,
        "scope": list(route.scope),
        "active": route.active,
        "updated_at": None if route.updated_at is None else route.updated_at.isoformat(),
    }


def run_list(args: argparse.Namespace) -> int:
    routes = with_owner(list_routes)
    if args.json:
        print(json.dumps([route_json(route) for route in routes], indent=2))
        return 0
    if not routes:
        print("no routes: `mnemo route apply FILE` writes them")
        return 0
    width = max(len("ROUTE"), *(len(route.key) for route in routes))
    print(f"{'ROUTE':{width}}  {'MODE':22}  {'ACTIVE':6}  SCOPE")
    for route in routes:
        scope = ", ".join(str(c) for c in route.scope)
        print(f"{route.key:{width}}  {route.mode:22}  {'yes' if route.active else 'no':6}  {scope}")
    return 0
