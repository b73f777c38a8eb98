"""`mnemo forget --store NAME --tenant T ID`: forget one document, through ingest.

The tenant must exist and a registered store corpus must read NAME as its documents; the document
must be there for the tenant (read as the owner role under the tenant's row-level security), or the
command stops (exit 1) and sends nothing. Then one forget command goes to `mnemo.forget.v1`, keyed
by the tenant: ingest removes the document, every edge touching it, its parked edges and the
navigation outcomes naming it, moves the graph revision and records `store:NAME:delete` in the
audit log. With `--wait SECONDS` the command waits until ingest has carried it out (exit 1 if not
within SECONDS: it is still in flight, or dead-lettered to `mnemo.forget.v1.dlt` with the reason).
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid
from typing import Any

import asyncpg
from mnemo_events import new_envelope
from mnemo_events.broker import create_broker, publish
from mnemo_events.models import ForgetRow
from mnemo_events.settings import KafkaSettings
from mnemo_events.topics import FORGET
from mnemo_store import StoreCorpus, StoreError
from mnemo_store.forgetting import document_condition
from mnemo_store.identifiers import store_table
from mnemo_store.registry import list_corpora

from mnemo_cli.errors import CliError
from mnemo_cli.owner_connection import with_owner
from mnemo_cli.publishing import PRODUCER
from mnemo_cli.tenant_option import tenant_id

_SET_TENANT = "SELECT set_config('mnemo.tenant', $1, true)"


def register(subparsers: Any) -> None:  # argparse's subparsers action has no public type
    parser = subparsers.add_parser(
        "forget", help="forget one document (with its edges and outcomes), through ingest"
    )
    parser.add_argument("--store", required=True, help="the documents store (axonstore) name")
    parser.add_argument("--tenant", required=True, help="the tenant id (uuid)")
    parser.add_argument("id", help="the document's id")
    parser.add_argument(
        "--wait",
        type=float,
        metavar="SECONDS",
        help="then wait up to SECONDS until ingest has forgotten it (exit 1 if not)",
    )
    parser.set_defaults(func=forget_command)


async def _find(
    connection: asyncpg.Connection, tenant: uuid.UUID, store: str, document_id: str
) -> None:
    """Stop unless the tenant exists, `store` is a documents store and the document is there."""
    if not await connection.fetchval("SELECT true FROM mnemo.tenants WHERE tenant_id = $1", tenant):
        raise CliError(f"no tenant {tenant}: `mnemo tenant list` shows the tenants", exit_code=1)
    readers: list[StoreCorpus] = []
    for row in await list_corpora(connection, kind="store_graph"):
        try:
            corpus = StoreCorpus.from_definition(row.definition)
        except (StoreError, ValueError, KeyError, TypeError):
            continue
        if corpus.documents.name == store:
            readers.append(corpus)
    if not readers:
        raise CliError(
            f"no registered corpus reads a store named {store[:80]!r} as its documents (forget "
            "names a document by its id in a documents store)",
            exit_code=1,
        )
    where, values = document_condition(readers[0].documents, readers[0].id_column, document_id, {})
    async with connection.transaction(readonly=True):
        await connection.execute(_SET_TENANT, str(tenant))
        found = await connection.fetchval(
            f"SELECT EXISTS (SELECT FROM {store_table(store)} WHERE {where})", *values
        )
    if not found:
        raise CliError(
            f"no document {document_id[:200]!r} in store {store!r} for tenant {tenant}; "
            "nothing sent",
            exit_code=1,
        )


async def _send(tenant: uuid.UUID, command: ForgetRow) -> uuid.UUID:
    envelope = new_envelope(command, tenant=tenant, producer=PRODUCER, event_type=FORGET)
    broker = create_broker(KafkaSettings(), client_id=PRODUCER)
    await broker.connect()
    try:
        await publish(broker, FORGET, envelope)  # type: ignore[arg-type]  # Envelope is covariant in use
    finally:
        await broker.stop()
    return envelope.event_id


async def _processed(
    connection: asyncpg.Connection, tenant: uuid.UUID, event_id: uuid.UUID, seconds: float
) -> bool:
    deadline = time.monotonic() + seconds
    delay = 0.1
    while True:
        async with connection.transaction(readonly=True):
            await connection.execute(_SET_TENANT, str(tenant))
            done = await connection.fetchval(
                "SELECT true FROM mnemo.inbox WHERE consumer = 'mnemo.ingest' AND event_id = $1",
                event_id,
            )
        if done or time.monotonic() >= deadline:
            return bool(done)
        await asyncio.sleep(min(delay, max(0.0, deadline - time.monotonic())))
        delay = min(delay * 2, 1.0)


def forget_command(args: argparse.Namespace) -> int:
    tenant = tenant_id(args.tenant)
    if not args.id or len(args.id) > 1024 or "\x00" in args.id:
        raise CliError("the document id must be 1 to 1024 characters, without NUL")
    with_owner(lambda connection: _find(connection, tenant, args.store, args.id))
    try:
        command = ForgetRow(store=args.store, id=args.id)
    except ValueError as error:
        raise CliError(str(error).splitlines()[0]) from None
    event_id = asyncio.run(_send(tenant, command))
    print(f"forget {args.store} {args.id} (tenant {tenant}): sent as event {event_id}")
    if args.wait is None:
        return 0
    if with_owner(lambda connection: _processed(connection, tenant, event_id, args.wait)):
        print(f"forget {args.store} {args.id}: ingest forgot it")
        return 0
    print(
        f"forget {args.store} {args.id}: not carried out within {args.wait:g} s; it is in flight "
        "or dead-lettered (mnemo.forget.v1.dlt, `mnemo dlt list --topic mnemo.forget.v1`)"
    )
    return 1
