"""Forgetting a document when one relations store is shared by corpora with different documents
stores: an edge touching the id stays while another corpus reading the same relations store still
holds a document of that id (it is that corpus's edge too), and goes once none does. Another
tenant's document of the same id never keeps this tenant's edges. Over both adapters (in memory,
and Postgres as the ingest role)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

import asyncpg
import pytest
from mnemo_axon.compiler import load_deployment
from mnemo_axon.ir import Deployment
from mnemo_ingest.adapters import PostgresDirectory, PostgresIngestStore
from mnemo_ingest.fakes import MemoryDirectory, MemoryIngestStore
from mnemo_ingest.ports import Directory, IngestStore
from mnemo_ingest.use_cases import Forget, ForgetCommand
from mnemo_store import Store, StoreCorpus
from mnemo_store.applier import apply_deployment
from mnemo_store.identifiers import store_table

from tests.integration.ingest.test_ports_contract import CONSUMER, ingest_dsn

Edge = tuple[str, str]

DECLARATIONS = """
axonstore ShA_{s} {{
    schema {{ id: Text primary_key  space: Text not_null  title: Text not_null  body: Text }}
}}
axonstore ShB_{s} {{
    schema {{ id: Text primary_key  space: Text not_null  title: Text not_null  body: Text }}
}}
axonstore ShEdges_{s} {{
    schema {{ from_id: Text not_null  to_id: Text not_null  etype: Text not_null
             weight: Float not_null  space: Text not_null }}
}}
corpus ShCorpusA_{s} from axonstore {{
    documents: ShA_{s}(id, title, body)
    relations: ShEdges_{s}(from_id, to_id, etype, weight)
}}
corpus ShCorpusB_{s} from axonstore {{
    documents: ShB_{s}(id, title, body)
    relations: ShEdges_{s}(from_id, to_id, etype, weight)
}}
"""


def declared(suffix: str) -> tuple[Deployment, StoreCorpus, StoreCorpus]:
    deployment = load_deployment(DECLARATIONS.format(s=suffix), f"shared_{suffix}.axon")
    return (
        deployment,
        StoreCorpus.from_deployment(deployment, f"ShCorpusA_{suffix}"),
        StoreCorpus.from_deployment(deployment, f"ShCorpusB_{suffix}"),
    )


@dataclass
class Shared:
    store: IngestStore
    directory: Directory
    a: StoreCorpus
    b: StoreCorpus
    new_tenant: Callable[[], Awaitable[uuid.UUID]]
    edges: Callable[[uuid.UUID], Awaitable[list[Edge]]]
    """The tenant's edges in the shared relations store, sorted (read beside the ports)."""


@pytest.fixture(scope="module")
async def postgres_shared(owner_dsn: str) -> AsyncIterator[Shared]:
    deployment, a, b = declared(uuid.uuid4().hex[:10])
    owner = await asyncpg.connect(owner_dsn)
    pool = await asyncpg.create_pool(ingest_dsn(owner_dsn), min_size=1, max_size=2)
    await apply_deployment(owner, deployment, gateway_base_url="http://127.0.0.1:8080")
    tenants: list[uuid.UUID] = []

    async def new_tenant() -> uuid.UUID:
        tenant: uuid.UUID = await owner.fetchval(
            "INSERT INTO mnemo.tenants (name) VALUES ($1) RETURNING tenant_id",
            f"test-shared-{uuid.uuid4().hex[:20]}",
        )
        tenants.append(tenant)
        return tenant

    async def edges(tenant: uuid.UUID) -> list[Edge]:
        async with owner.transaction():
            await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
            rows = await owner.fetch(f"SELECT from_id, to_id FROM {store_table(a.relations.name)}")
        return sorted((r["from_id"], r["to_id"]) for r in rows)

    try:
        yield Shared(
            PostgresIngestStore(Store(pool)), PostgresDirectory(pool), a, b, new_tenant, edges
        )
    finally:
        await pool.close()
        for tenant in tenants:
            async with owner.transaction():
                await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
                for table in ("outbox", "inbox", "pending_edges", "nav_outcomes"):
                    await owner.execute(f"DELETE FROM mnemo.{table}")
                for decl in deployment.stores:
                    await owner.execute(f"DELETE FROM {store_table(decl.name)}")
                await owner.execute("DELETE FROM mnemo.graph_revisions")
            await owner.execute("DELETE FROM mnemo.tenants WHERE tenant_id = $1", tenant)
        for decl in deployment.stores:
            await owner.execute(f"DROP TABLE IF EXISTS {store_table(decl.name)}")
        for corpus in (a, b):
            await owner.execute("DELETE FROM mnemo.corpora WHERE corpus_id = $1", corpus.name)
        await owner.close()


@pytest.fixture(params=["memory", "postgres"])
def shared(request: pytest.FixtureRequest) -> Shared:
    if request.param == "postgres":
        made: Shared = request.getfixturevalue("postgres_shared")
        return made
    _, a, b = declared(uuid.uuid4().hex[:10])
    directory = MemoryDirectory([a, b])

    async def new_tenant() -> uuid.UUID:
        tenant = uuid.uuid4()
        directory.add_tenant(tenant)
        return tenant

    memory = MemoryIngestStore()

    async def edges(tenant: uuid.UUID) -> list[Edge]:
        rows = memory.state(tenant).rows.get(a.relations.name, [])
        return sorted((str(r["from_id"]), str(r["to_id"])) for r in rows)

    return Shared(memory, directory, a, b, new_tenant, edges)


def doc(doc_id: str, space: str = "s1") -> dict[str, object]:
    return {"id": doc_id, "space": space, "title": f"Title {doc_id}", "body": None}


def edge(source: str, target: str) -> dict[str, object]:
    return {"from_id": source, "to_id": target, "etype": "cite", "weight": 0.5, "space": "s1"}


async def fill(
    made: Shared, tenant: uuid.UUID, a_docs: list[str], b_docs: list[str], edges: list[Edge]
) -> None:
    async with made.store.tenant(tenant) as tx:
        await tx.rows.take_revisions([made.a.name, made.b.name])
        await tx.rows.insert(made.a.documents, [doc(d) for d in a_docs])
        if b_docs:
            await tx.rows.insert(made.b.documents, [doc(d) for d in b_docs])
        await tx.rows.insert(made.a.relations, [edge(s, t) for s, t in edges])


async def forget(made: Shared, tenant: uuid.UUID, store: str, document_id: str) -> int:
    """Forget `document_id` from `store` for `tenant`; how many edges went."""
    command = ForgetCommand(
        ref="r", event_id=uuid.uuid4(), tenant=tenant, store=store, document_id=document_id,
        producer="tester",
    )  # fmt: skip
    done, refused = await Forget(made.store, made.directory, consumer=CONSUMER).forget([command])
    assert refused == []
    return done[0].edges


EDGES: list[Edge] = [("x", "y"), ("y", "x"), ("y", "z")]


async def test_an_edge_stays_while_another_corpus_sharing_its_relations_store_holds_the_id(
    shared: Shared,
) -> None:
    tenant = await shared.new_tenant()
    await fill(shared, tenant, ["x", "y", "z"], ["x", "y"], EDGES)
    assert await forget(shared, tenant, shared.a.documents.name, "x") == 0
    assert await shared.edges(tenant) == EDGES  # corpus B still reads x -> y and y -> x
    # Once B forgets its x too, no corpus holds x: its edges go.
    assert await forget(shared, tenant, shared.b.documents.name, "x") == 2
    assert await shared.edges(tenant) == [("y", "z")]


async def test_an_edge_goes_when_no_other_corpus_holds_the_id_whatever_other_tenants_hold(
    shared: Shared,
) -> None:
    tenant, other = await shared.new_tenant(), await shared.new_tenant()
    await fill(shared, tenant, ["x", "y", "z"], ["y"], EDGES)
    # Another tenant's corpus B holds an x, with the same edges: it keeps nothing of this tenant.
    await fill(shared, other, ["q"], ["x", "y"], EDGES)
    assert await forget(shared, tenant, shared.a.documents.name, "x") == 2
    assert await shared.edges(tenant) == [("y", "z")]
    assert await shared.edges(other) == EDGES
