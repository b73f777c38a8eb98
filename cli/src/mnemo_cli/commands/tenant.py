"""`mnemo tenant create NAME` (prints the new tenant's id) and `mnemo tenant list`, as the owner role."""

from __future__ import annotations

import argparse
from typing import Any

import asyncpg
from mnemo_store.registry import Tenant, create_tenant, list_tenants

from mnemo_cli.commands.apply import with_owner
from mnemo_cli.errors import CliError


def register(subparsers: Any) -> None:  # argparse's subparsers action has no public type
    parser = subparsers.add_parser("tenant", help="create and list tenants (owner role)")
    actions = parser.add_subparsers(dest="tenant_command", metavar="ACTION", required=True)
    create = actions.add_parser("create", help="create a tenant and print its id")
    create.add_argument("name", help="a unique name, 1 to 200 characters")
    create.set_defaults(func=run_create)
    listing = actions.add_parser("list", help="list every tenant: id, name, creation time")
    listing.set_defaults(func=run_list)


def run_create(args: argparse.Namespace) -> int:
    name = args.name.strip()
    if not 1 <= len(name) <= 200:
        raise CliError("a tenant name has 1 to 200 characters (not counting surrounding spaces)")

    async def work(connection: asyncpg.Connection) -> Tenant:
        return await create_tenant(connection, name)

    print(with_owner(work).tenant_id)
    return 0


def run_list(args: argparse.Namespace) -> int:
    tenants = with_owner(list_tenants)
    if not tenants:
        print("no tenants yet: create one with `mnemo tenant create NAME`")
        return 0
    print(f"{'TENANT ID':36}  {'CREATED (UTC)':19}  NAME")
    for tenant in tenants:
        created = tenant.created_at.strftime("%Y-%m-%d %H:%M:%S")
        print(f"{tenant.tenant_id!s:36}  {created:19}  {tenant.name}")
    return 0
