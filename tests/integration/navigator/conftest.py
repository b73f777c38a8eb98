"""The navigator in-process against real Postgres: uniquely named stores and tenants per module,
rows written directly as the owner role (ingest is not needed to test reading them), the HTTP API
through its ASGI app, connected as the navigator's own role."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass

import asyncpg
import httpx
import pytest
from mnemo_auth import DEVELOPMENT_SECRET, mint_token
from mnemo_axon.compiler import load_deployment
from mnemo_axon.ir import Deployment
from mnemo_navigator.app import create_app
from mnemo_navigator.settings import Settings
from mnemo_store import Store, StoreCorpus
from mnemo_store.applier import apply_deployment
from mnemo_store.identifiers import store_table
from mnemo_telemetry.service import ServiceRuntime

from tests.waiting import eventually

TENANT_TABLES = (
    "outbox",
    "inbox",
    "pending_edges",
    "nav_outcomes",
    "declared_edge_weights",
    "graph_revisions",
)

DECLARATIONS = """
axonstore NavDocs_{s} {{
    schema {{ id: Text primary_key  tenant_id: Text not_null  title: Text not_null  body: Text }}
}}
axonstore NavEdges_{s} {{
    schema {{ from_id: Text not_null  to_id: Text not_null  etype: Text not_null
             weight: Float not_null  tenant_id: Text not_null }}
}}
corpus Nav_{s} from axonstore {{
    documents: NavDocs_{s}(id, title, body)
    relations: NavEdges_{s}(from_id, to_id, etype, weight)
    adaptive: {adaptive}
}}
"""
PINNED = "tenant_id == '${client.tenant_id}'"

TWO_CLIENTS_DOCS = [
    {"id": "a", "tenant_id": "c1", "title": "alpha notes", "body": None},
    {"id": "b", "tenant_id": "c2", "title": "alpha other", "body": None},
]
"""Two documents, one per end-client (`tenant_id` c1 and c2), both found by "alpha"."""


async def two_clients_corpus(
    declare: Declare, new_tenant: NewTenant, service: Service
) -> tuple[str, uuid.UUID]:
    """A new corpus pinned by end-client, holding `TWO_CLIENTS_DOCS` for a new tenant: its name
    and the tenant."""
    arena = await declare()
    tenant = await new_tenant()
    await arena.write(tenant, TWO_CLIENTS_DOCS)
    service.pinned[arena.name] = PINNED
    return arena.name, tenant


async def audited_records(owner: asyncpg.Connection, tenant: uuid.UUID) -> list[dict[str, object]]:
    """The audit records of `tenant`'s outbox events, oldest first."""
    async with owner.transaction():
        await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
        rows = await owner.fetch("SELECT payload::text AS p FROM mnemo.outbox ORDER BY seq")
    return [json.loads(r["p"])["data"]["record"] for r in rows]


def navigator_dsn(app_dsn: str) -> str:
    configured = os.environ.get("MNEMO_NAVIGATOR_DATABASE_URL")
    if configured:
        return configured
    rest = app_dsn.split("@", 1)[1]
    return f"postgresql://mnemo_navigator:mnemo_navigator@{rest}"


@dataclass(frozen=True, slots=True)
class Arena:
    deployment: Deployment
    corpus: StoreCorpus
    owner: Store

    @property
    def name(self) -> str:
        return self.corpus.name

    async def write(
        self,
        tenant: uuid.UUID,
        documents: Sequence[Mapping[str, object]],
        edges: Sequence[Mapping[str, object]] = (),
    ) -> None:
        async with self.owner.tenant(tenant) as tx:
            if documents:
                await tx.insert_rows(self.corpus.documents, documents)
            if edges:
                await tx.insert_rows(self.corpus.relations, edges)


Declare = Callable[..., Awaitable[Arena]]
NewTenant = Callable[[], Awaitable[uuid.UUID]]


@pytest.fixture(scope="module")
async def owner_connection(owner_dsn: str) -> AsyncIterator[asyncpg.Connection]:
    connection = await asyncpg.connect(owner_dsn)
    yield connection
    await connection.close()


@pytest.fixture(scope="module")
async def owner_store(owner_dsn: str) -> AsyncIterator[Store]:
    async with await Store.connect(owner_dsn, min_size=1, max_size=4) as store:
        yield store


@pytest.fixture(scope="module")
async def declare(
    owner_connection: asyncpg.Connection, owner_store: Store
) -> AsyncIterator[Declare]:
    made: list[Arena] = []

    async def make(*, adaptive: bool = True, status: str = "published") -> Arena:
        suffix = uuid.uuid4().hex[:10]
        text = DECLARATIONS.format(s=suffix, adaptive="true" if adaptive else "false")
        deployment = load_deployment(text, f"nav_{suffix}.axon")
        await apply_deployment(
            owner_connection, deployment, gateway_base_url="http://127.0.0.1:8080"
        )
        await owner_connection.execute(
            "UPDATE mnemo.corpora SET status = $2 WHERE corpus_id = $1", f"Nav_{suffix}", status
        )
        arena = Arena(
            deployment, StoreCorpus.from_deployment(deployment, f"Nav_{suffix}"), owner_store
        )
        made.append(arena)
        return arena

    yield make
    for arena in made:
        for store in arena.deployment.stores:
            await owner_connection.execute(f"DROP TABLE IF EXISTS {store_table(store.name)}")
        await owner_connection.execute("DELETE FROM mnemo.corpora WHERE corpus_id = $1", arena.name)


@pytest.fixture(scope="module")
async def new_tenant(
    owner_connection: asyncpg.Connection,
) -> AsyncIterator[NewTenant]:
    made: list[uuid.UUID] = []

    async def make() -> uuid.UUID:
        tenant_id: uuid.UUID = await owner_connection.fetchval(
            "INSERT INTO mnemo.tenants (name) VALUES ($1) RETURNING tenant_id",
            f"test-nav-{uuid.uuid4().hex[:20]}",
        )
        made.append(tenant_id)
        return tenant_id

    yield make
    for tenant_id in made:
        async with owner_connection.transaction():
            await owner_connection.execute(
                "SELECT set_config('mnemo.tenant', $1, true)", str(tenant_id)
            )
            for table in TENANT_TABLES:
                await owner_connection.execute(f"DELETE FROM mnemo.{table}")
        await owner_connection.execute("DELETE FROM mnemo.tenants WHERE tenant_id = $1", tenant_id)


@dataclass
class Service:
    runtime: ServiceRuntime
    client: httpx.AsyncClient
    pinned: dict[str, str]

    def token(
        self,
        tenant: uuid.UUID,
        *,
        client: Mapping[str, str] | None = None,
        scopes: Sequence[str] = ("read",),
    ) -> dict[str, str]:
        token = mint_token(tenant=tenant, secret=DEVELOPMENT_SECRET, scopes=scopes, client=client)
        return {"Authorization": f"Bearer {token}"}


@pytest.fixture(scope="module")
async def service(app_dsn: str) -> AsyncIterator[Service]:
    """The navigator app with an empty pinned-scope table that tests fill (`pin`)."""
    pinned: dict[str, str] = {}
    settings = Settings(
        database_url=navigator_dsn(app_dsn),
        consume_requests=False,
        token_secret=DEVELOPMENT_SECRET,
        pool_size=20,
    )
    runtime = create_app(settings, pinned_scopes=pinned)
    assert runtime.app is not None
    await runtime.start()
    transport = httpx.ASGITransport(app=runtime.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://navigator") as client:
        yield Service(runtime, client, pinned)
    await runtime.stop()


@asynccontextmanager
async def serving_navigator(
    settings: Settings, *, probe: str = "/readyz", within: float = 30
) -> AsyncIterator[str]:
    """The navigator of `settings` running in this process (its own server on `settings.port`)
    until the block ends; yields its base URL once `probe` answers 2xx. It must exit 0 on stop."""
    runtime = create_app(settings)
    serving = asyncio.create_task(runtime.run())
    base = f"http://127.0.0.1:{settings.port}"

    async def answers() -> bool:
        assert not serving.done(), serving
        with contextlib.suppress(httpx.HTTPError):
            async with httpx.AsyncClient(timeout=1) as client:
                return (await client.get(f"{base}{probe}")).is_success
        return False

    try:
        await eventually(answers, within=within, what=f"the navigator never answered {probe}")
        yield base
    finally:
        runtime.stopping.set()
        assert await asyncio.wait_for(serving, 20) == 0
