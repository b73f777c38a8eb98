"""`mnemo tenant create NAME` (prints the new tenant's id), `mnemo tenant list [--json]` and
`mnemo tenant erase T --yes` (every row of the tenant goes, its audit payloads are redacted),
`mnemo tenant export T DIR` and `mnemo tenant import DIR [--as NAME]` (`mnemo_store.tenant_export`),
as the owner role.

A name follows the one rule `mnemo_store.registry` states (`TENANT_NAME_PATTERN`); it is checked
before connecting, so a bad name is a usage error (exit 2) that says what would be right. A listed
name that predates the rule is shown escaped, so no stored name can forge a line of the listing.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import asyncpg
from mnemo_store import InvalidTenantNameError
from mnemo_store.erasure import Erasure, erase_tenant, leftovers, resolve_tenant
from mnemo_store.registry import (
    TENANT_NAME_RULE,
    Tenant,
    check_tenant_name,
    create_tenant,
    is_tenant_name,
    list_tenants,
    shown_name,
)
from mnemo_store.tenant_export import TransferReport, export_tenant, import_tenant

from mnemo_cli.errors import CliError
from mnemo_cli.owner_connection import with_owner

ERASE_DESCRIPTION = """\
Erase tenant T: its rows go from every store and system table of this database, its audit rows
keep their place with their payloads redacted (the chain still verifies), its cached graphs stop
being served, and anything written for it from then on is refused.

Not reached: records already on Kafka. Its persist, forget, navigate and audit events stay on
their topics until the topics' retention drops them (7 days unless MNEMO_KAFKA_RETENTION_MS said
otherwise when the topics were made), its dead letters on the TOPIC.dlt topics until theirs (30
days; MNEMO_KAFKA_DEAD_LETTER_RETENTION_MS). None of them reaches the database again: ingest
refuses a later persist or forget record of the tenant (it is dead-lettered with the reason, so
its content sits on the dead-letter topic too), the audit service links a late audit event
already redacted, and `mnemo dlt replay` refuses to publish the tenant's dead letters again.
To be rid of them sooner, `mnemo dlt list --tenant T` names the dead letters that remain (never
their content), and an operator lowers the retention.ms of the topics concerned with Kafka's own
tools (kafka-configs --alter --add-config retention.ms=...) until they are gone, then restores it.
"""


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
    erase = actions.add_parser(
        "erase",
        help="erase a tenant: delete its rows in every store and system table, redact its audit"
        " payloads (the chain still verifies), refuse its writes from then on",
        description=ERASE_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    erase.add_argument("tenant", help="tenant id or name (an erased tenant: its id)")
    erase.add_argument(
        "--yes", action="store_true", help="confirm: erasing cannot be undone (required)"
    )
    erase.add_argument("--json", action="store_true", help="print what was erased as JSON")
    erase.set_defaults(func=run_erase)
    export = actions.add_parser(
        "export",
        help="write a tenant's declarations, store rows, memory and audit chain as JSON lines"
        " with a manifest (counts, digests) into DIR",
    )
    export.add_argument("tenant", help="tenant id or name")
    export.add_argument("directory", type=Path, help="a new or empty directory")
    export.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    export.set_defaults(func=run_export)
    restore = actions.add_parser(
        "import",
        help="restore an export (checked whole first: a tampered file is refused naming file and"
        " row) as the same tenant, or as a new one with --as",
    )
    restore.add_argument("directory", type=Path, help="a directory `mnemo tenant export` wrote")
    restore.add_argument(
        "--as", dest="as_name", help="create a new tenant of this name (a new id) for the rows"
    )
    restore.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    restore.set_defaults(func=run_import)


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


def run_erase(args: argparse.Namespace) -> int:
    if not args.yes:
        raise CliError(
            f"erasing tenant {args.tenant!r} deletes every row of it and cannot be undone:"
            " run again with --yes to confirm",
            exit_code=2,
        )

    async def work(connection: asyncpg.Connection) -> tuple[Erasure, dict[str, int]]:
        tenant = await resolve_tenant(connection, args.tenant)
        erasure = await erase_tenant(connection, tenant)
        return erasure, await leftovers(connection, tenant)

    erasure, left = with_owner(work)
    if args.json:
        print(
            json.dumps(
                {
                    "tenant_id": str(erasure.tenant),
                    "name": erasure.name,
                    "deleted": erasure.deleted,
                    "audit_rows_redacted": erasure.redacted,
                    "left": left,
                },
                indent=2,
            )
        )
    else:
        was = "" if erasure.name is None else f" ({shown_name(erasure.name)})"
        if erasure.name is None and not erasure.rows and not erasure.redacted:
            print(f"tenant {erasure.tenant} was erased before: nothing of it is left")
        else:
            print(
                f"erased tenant {erasure.tenant}{was}: {erasure.rows} rows deleted,"
                f" {erasure.redacted} audit rows redacted"
            )
            for table, count in sorted(erasure.deleted.items()):
                print(f"  {table}: {count}")
    if left:
        print(
            "rows of the tenant are still there (a writer outside the unit of work?): "
            + ", ".join(f"{table} {count}" for table, count in sorted(left.items()))
            + "; run the erase again",
            file=sys.stderr,
        )
        return 1
    return 0


def _progress(args: argparse.Namespace) -> Callable[[str, int], None] | None:
    if args.quiet:
        return None

    def show(relative: str, rows: int) -> None:
        print(f"  {relative}: {rows} rows", file=sys.stderr, flush=True)

    return show


def _summary(verb: str, report: TransferReport) -> None:
    rows = sum(f.rows for name, f in report.files.items() if name != "declarations.jsonl")
    print(
        f"{verb} tenant {report.tenant} ({shown_name(report.name)}): {rows} rows in"
        f" {len(report.files)} files; audit head seq {report.audit_head_seq}"
        + (f", hash {report.audit_head_hash}" if report.audit_head_hash else "")
    )


def run_export(args: argparse.Namespace) -> int:
    async def work(connection: asyncpg.Connection) -> TransferReport:
        tenant = await resolve_tenant(connection, args.tenant)
        return await export_tenant(connection, tenant, args.directory, _progress(args))

    try:
        report = with_owner(work)
    except OSError as error:
        raise CliError(f"cannot write the export: {error}") from None
    _summary("exported", report)
    return 0


def run_import(args: argparse.Namespace) -> int:
    if args.as_name is not None:
        try:
            check_tenant_name(args.as_name)
        except InvalidTenantNameError as error:
            raise CliError(str(error)) from None

    async def work(connection: asyncpg.Connection) -> TransferReport:
        return await import_tenant(
            connection, args.directory, as_name=args.as_name, progress=_progress(args)
        )

    _summary("imported", with_owner(work))
    return 0
