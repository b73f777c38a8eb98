"""`mnemo tenant create NAME` (prints the new tenant's id) and `mnemo tenant list [--json]`, as the
owner role.

A name follows the one rule `mnemo_store.registry` states (`TENANT_NAME_PATTERN`); it is checked
before connecting, so a bad name is a usage error (exit 2) that says what would be right. A listed
name that predates the rule is shown escaped, so no stored name can forge a line of the listing.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import asyncpg
from mnemo_store import InvalidTenantNameError
from mnemo_store.registry import (
    TENANT_NAME_RULE,
    Tenant,
    check_tenant_name,
    create_tenant,
    is_tenant_name,
    list_tenants,
    shown_name,
)

from mnemo_cli.errors import CliError
from mnemo_cli.owner_connection import with_owner


def register(subparsers: Any) -> None:  # argparse's subparsers action has no public type
    parser = subparsers.add_parser("tenant", help="create and list tenants (owner role)")
    actions = parser.add_subparsers(dest="tenant_command", metavar="ACTION", required=True)
    create = actions.add_parser("create", help="create a tenant and print its id")
    create.add_argument("name", help=f"a unique name: {TENANT_NAME_RULE}")
    create.set_defaults(func=run_create)
    listing = actions.add_parser("list", help="list every tenant: id, creation time, name")
    listing.add_argument(
        "--json",
        action="store_true",
        help="print a JSON array of {tenant_id, name, created_at} objects instead of a table",
    )
    listing.set_defaults(func=run_list)


def run_create(args: argparse.Namespace) -> int:
    try:
        name = check_tenant_name(args.name)
    except InvalidTenantNameError as error:
        raise CliError(str(error)) from None

    async def work(connection: asyncpg.Connection) -> Tenant:
        return await create_tenant(connection, name)

    print(with_owner(work).tenant_id)
    return 0


def run_list(args: argparse.Namespace) -> int:
    tenants = with_owner(list_tenants)
    if args.json:
        print(
            json.dumps(
                [
                    {
                        "tenant_id": str(tenant.tenant_id),
                        "name": tenant.name,
                        "created_at": tenant.created_at.isoformat(),
                    }
                    for tenant in tenants
                ],
                indent=2,
            )
        )
        return 0
    if not tenants:
        print("no tenants yet: create one with `mnemo tenant create NAME`")
        return 0
    print(f"{'TENANT ID':36}  {'CREATED (UTC)':19}  NAME")
    for tenant in tenants:
        created = tenant.created_at.strftime("%Y-%m-%d %H:%M:%S")
        name = tenant.name if is_tenant_name(tenant.name) else shown_name(tenant.name)
        print(f"{tenant.tenant_id!s:36}  {created:19}  {name}")
    return 0
