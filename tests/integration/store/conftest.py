"""Fixtures for the storage layer: uniquely named stores, corpora and tenants, removed afterwards.

Every test module declares its own stores (suffix `_<hex>`) through the real `apply`, so tests can
run many times, in any order, against one database shared with other work.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

import asyncpg
import pytest
from mnemo_axon.compiler import load_deployment
from mnemo_axon.ir import Deployment
from mnemo_store import Store, StoreCorpus
from mnemo_store.applier import apply_deployment
from mnemo_store.identifiers import store_table

TENANT_TABLES = ("outbox", "inbox", "pending_edges", "nav_outcomes", "graph_revisions")

DECLARATIONS = """
axonstore Docs_{s} {{
    backend: postgresql
    schema {{ id: {id_type} primary_key  tenant_id: Uuid not_null  title: Text not_null  body: Text }}
}}
axonstore Edges_{s} {{
    backend: postgresql
    schema {{ from_id: {id_type} not_null  to_id: {id_type} not_null  etype: Text not_null
             weight: Float not_null  tenant_id: Uuid not_null }}
}}
corpus Graph_{s} from axonstore {{
    documents: Docs_{s}(id, title, body)
    relations: Edges_{s}(from_id, to_id, etype, weight)
    adaptive: true
}}
"""


@dataclass(frozen=True, slots=True)
class Declared:
    deployment: Deployment
    corpus: StoreCorpus

    @property
    def documents(self) -> str:
        return self.corpus.documents.name

    @property
    def edges(self) -> str:
        return self.corpus.relations.name


Declare = Callable[..., Awaitable[Declared]]
NewTenant = Callable[[], Awaitable[uuid.UUID]]


@pytest.fixture(scope="module")
async def owner(owner_dsn: str) -> AsyncIterator[asyncpg.Connection]:
    connection = await asyncpg.connect(owner_dsn)
    yield connection
    await connection.close()


@pytest.fixture(scope="module")
async def declare(owner: asyncpg.Connection) -> AsyncIterator[Declare]:
    """Apply a fresh documents + edges store pair and its corpus; drop them after the module."""
    made: list[Declared] = []

    async def make(id_type: str = "Uuid") -> Declared:
        suffix = uuid.uuid4().hex[:10]
        text = DECLARATIONS.format(s=suffix, id_type=id_type)
        deployment = load_deployment(text, f"test_{suffix}.axon")
        await apply_deployment(owner, deployment, gateway_base_url="http://127.0.0.1:8080")
        declared = Declared(deployment, StoreCorpus.from_deployment(deployment, f"Graph_{suffix}"))
        made.append(declared)
        return declared

    yield make
    for declared in made:
        for store in declared.deployment.stores:
            await owner.execute(f"DROP TABLE IF EXISTS {store_table(store.name)}")
        await owner.execute("DELETE FROM mnemo.corpora WHERE corpus_id = $1", declared.corpus.name)


@pytest.fixture(scope="module")
async def new_tenant(owner: asyncpg.Connection) -> AsyncIterator[NewTenant]:
    """Create uniquely named tenants; their rows in the system tables go when the module ends."""
    made: list[uuid.UUID] = []

    async def make() -> uuid.UUID:
        tenant_id: uuid.UUID = await owner.fetchval(
            "INSERT INTO mnemo.tenants (name) VALUES ($1) RETURNING tenant_id",
            f"test-store-{uuid.uuid4().hex}",
        )
        made.append(tenant_id)
        return tenant_id

    yield make
    for tenant_id in made:
        async with owner.transaction():
            await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant_id))
            for table in TENANT_TABLES:
                await owner.execute(f"DELETE FROM mnemo.{table}")
        await owner.execute("DELETE FROM mnemo.tenants WHERE tenant_id = $1", tenant_id)


@pytest.fixture(scope="module")
async def store(app_dsn: str) -> AsyncIterator[Store]:
    async with await Store.connect(app_dsn, min_size=1, max_size=24) as opened:
        yield opened
