"""Loading a tenant's store graph: the fast path (COPY → engine arrays) against a naive one.

For 10k and 100k documents with 5 edges each, in one tenant under row-level security and with a
sub-tenant `where:` scope, it times:
- fast: `TenantTransaction.load_graph` (a text COPY of the documents split in one pass, a binary
  COPY of the edges decoded by numpy, into the arrays `mnemo_mdn.CorpusGraph.from_arrays` takes);
- naive: SQLAlchemy ORM rows, then a networkx MultiDiGraph (the obvious way to write it);
- freshness: `TenantTransaction.graph_revision`, the one query that proves a cached graph fresh.
Prints a table and writes bench/results/load_bench.json. Needs the local stack (`make up`) and
MNEMO_DATABASE_URL / MNEMO_OWNER_DATABASE_URL. Target: 100k / 500k in ≤ 0.7 s and ≥ 5× the naive.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import statistics
import time
import uuid
from pathlib import Path
from typing import Any

import asyncpg
import networkx as nx
from mnemo_axon.compiler import load_deployment
from mnemo_mdn.relations import RELATION_TYPES
from mnemo_store import Scope, Store, StoreCorpus
from mnemo_store.applier import apply_deployment
from mnemo_store.identifiers import STORE_SCHEMA, store_table
from sqlalchemy import Column, Float, MetaData, Table, Text, Uuid, create_engine, select, text
from sqlalchemy.orm import Session, registry

SIZES = (10_000, 100_000)
EDGES_PER_DOCUMENT = 5
REPEATS = 5
RESULTS = Path(__file__).parent / "results" / "load_bench.json"

DECLARATIONS = """
axonstore BenchDocs_{s} {{ backend: postgresql
    schema {{ id: Uuid primary_key  tenant_id: Uuid not_null  title: Text not_null  body: Text }} }}
axonstore BenchEdges_{s} {{ backend: postgresql
    schema {{ from_id: Uuid not_null  to_id: Uuid not_null  etype: Text not_null
             weight: Float not_null  tenant_id: Uuid not_null }} }}
corpus Bench_{s} from axonstore {{
    documents: BenchDocs_{s}(id, title, body)
    relations: BenchEdges_{s}(from_id, to_id, etype, weight)
}}
"""
WORDS = [
    "graph",
    "memory",
    "tenant",
    "edge",
    "weight",
    "corpus",
    "navigate",
    "trust",
    "distrust",
    "recall",
    "summary",
]


async def seed(
    store: Store, corpus: StoreCorpus, tenant: uuid.UUID, sub: uuid.UUID, n: int
) -> None:
    chooser = random.Random(n)
    ids = [uuid.UUID(int=chooser.getrandbits(128), version=4) for _ in range(n)]
    for start in range(0, n, 20_000):
        chunk = ids[start : start + 20_000]
        async with store.tenant(tenant) as tx:
            await tx.insert_rows(
                corpus.documents,
                [
                    {
                        "id": doc,
                        "tenant_id": sub,
                        "title": " ".join(chooser.choices(WORDS, k=4)),
                        "body": " ".join(chooser.choices(WORDS, k=12)),
                    }
                    for doc in chunk
                ],
            )
            await tx.insert_rows(
                corpus.relations,
                [
                    {
                        "from_id": doc,
                        "to_id": chooser.choice(ids),
                        "etype": chooser.choice(RELATION_TYPES),
                        "weight": chooser.uniform(0.05, 1.0),
                        "tenant_id": sub,
                    }
                    for doc in chunk
                    for _ in range(EDGES_PER_DOCUMENT)
                ],
            )


async def fast_load(
    store: Store, corpus: StoreCorpus, tenant: uuid.UUID, scope: Scope
) -> tuple[float, int, int]:
    started = time.perf_counter()
    async with store.tenant(tenant, read_only=True) as tx:
        graph = await tx.load_graph(corpus, scope)
    return time.perf_counter() - started, graph.n_documents, graph.n_edges


def naive_load(
    dsn: str, corpus: StoreCorpus, tenant: uuid.UUID, sub: uuid.UUID
) -> tuple[float, int, int]:
    """ORM objects per row, then a networkx graph: what a first version would do."""
    engine = create_engine(dsn.replace("postgresql://", "postgresql+psycopg://", 1))
    metadata = MetaData(schema=STORE_SCHEMA)
    mapper = registry()

    class Doc:
        id: uuid.UUID
        title: str
        body: str | None

    class Link:
        from_id: uuid.UUID
        to_id: uuid.UUID
        etype: str
        weight: float

    mapper.map_imperatively(
        Doc,
        Table(
            corpus.documents.name,
            metadata,
            Column("axon_tenant", Uuid, primary_key=True),
            Column("id", Uuid, primary_key=True),
            Column("tenant_id", Uuid),
            Column("title", Text),
            Column("body", Text),
        ),
    )
    mapper.map_imperatively(
        Link,
        Table(
            corpus.relations.name,
            metadata,
            Column("axon_tenant", Uuid, primary_key=True),
            Column("axon_row_id", Float, primary_key=True),
            Column("from_id", Uuid),
            Column("to_id", Uuid),
            Column("etype", Text),
            Column("weight", Float),
            Column("tenant_id", Uuid),
        ),
    )
    started = time.perf_counter()
    with Session(engine) as session, session.begin():
        session.execute(text("SELECT set_config('mnemo.tenant', :t, true)"), {"t": str(tenant)})
        docs = session.scalars(select(Doc).where(Doc.tenant_id == sub)).all()  # type: ignore[attr-defined]  # mapped imperatively: the column attribute exists only at runtime
        links = session.scalars(select(Link).where(Link.tenant_id == sub)).all()  # type: ignore[attr-defined]  # mapped imperatively: the column attribute exists only at runtime
        graph = nx.MultiDiGraph()
        for doc in sorted(docs, key=lambda d: str(d.id)):
            graph.add_node(str(doc.id), title=doc.title, body=doc.body)
        for link in links:
            source, target = str(link.from_id), str(link.to_id)
            if source in graph and target in graph:
                graph.add_edge(source, target, etype=link.etype, weight=link.weight)
    elapsed = time.perf_counter() - started
    engine.dispose()
    return elapsed, graph.number_of_nodes(), graph.number_of_edges()


async def freshness(store: Store, corpus: StoreCorpus, tenant: uuid.UUID) -> float:
    times = []
    for _ in range(50):
        async with store.tenant(tenant) as tx:
            started = time.perf_counter()
            await tx.graph_revision(corpus.name)
            times.append(time.perf_counter() - started)
    return statistics.median(times)


def local_dsn(variable: str, role: str) -> str:
    """The URL the Makefile exports, else the local stack's default for `role`."""
    port = os.environ.get("MNEMO_PG_PORT", "25432")
    return os.environ.get(variable, f"postgresql://{role}:{role}@127.0.0.1:{port}/mnemo")


async def main() -> None:
    app_dsn = local_dsn("MNEMO_DATABASE_URL", "mnemo_app")
    owner_dsn = local_dsn("MNEMO_OWNER_DATABASE_URL", "mnemo_owner")
    try:
        owner = await asyncpg.connect(owner_dsn)
    except (OSError, asyncpg.PostgresError) as error:
        raise SystemExit(
            f"load_bench: cannot reach PostgreSQL ({error}); start it with `make up`"
        ) from None
    results: list[dict[str, Any]] = []
    async with await Store.connect(app_dsn, min_size=2, max_size=4) as store:
        for n in SIZES:
            suffix = uuid.uuid4().hex[:8]
            deployment = load_deployment(DECLARATIONS.format(s=suffix), "bench.axon")
            await apply_deployment(owner, deployment, gateway_base_url="http://bench")
            corpus = StoreCorpus.from_deployment(deployment, f"Bench_{suffix}")
            tenant: uuid.UUID = await owner.fetchval(
                "INSERT INTO mnemo.tenants (name) VALUES ($1) RETURNING tenant_id",
                f"bench-{suffix}",
            )
            sub = uuid.uuid4()
            scope = Scope("tenant_id == '${t}'", {"t": str(sub)})
            try:
                await seed(store, corpus, tenant, sub, n)
                for name in (corpus.documents.name, corpus.relations.name):
                    await owner.execute(f"VACUUM ANALYZE {store_table(name)}")
                fast = [await fast_load(store, corpus, tenant, scope) for _ in range(REPEATS)]
                naive = [
                    naive_load(app_dsn, corpus, tenant, sub) for _ in range(2 if n <= 10_000 else 1)
                ]
                fresh = await freshness(store, corpus, tenant)
            finally:
                for name in (corpus.documents.name, corpus.relations.name):
                    await owner.execute(f"DROP TABLE IF EXISTS {store_table(name)}")
                await owner.execute("DELETE FROM mnemo.corpora WHERE corpus_id = $1", corpus.name)
                async with owner.transaction():
                    await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
                    await owner.execute("DELETE FROM mnemo.graph_revisions")
                await owner.execute("DELETE FROM mnemo.tenants WHERE tenant_id = $1", tenant)
            assert {f[1:] for f in fast} == {(n, n * EDGES_PER_DOCUMENT)}, fast
            assert naive[0][1] == n, naive
            best_fast, best_naive = min(f[0] for f in fast), min(t[0] for t in naive)
            results.append(
                {
                    "documents": n,
                    "edges": n * EDGES_PER_DOCUMENT,
                    "fast_seconds": round(best_fast, 4),
                    "fast_median_seconds": round(statistics.median(f[0] for f in fast), 4),
                    "naive_seconds": round(best_naive, 4),
                    "speedup": round(best_naive / best_fast, 1),
                    "freshness_check_ms": round(fresh * 1000, 3),
                    "fast_runs": [round(f[0], 4) for f in fast],
                    "naive_runs": [round(t[0], 4) for t in naive],
                }
            )
    await owner.close()
    print(
        f"{'documents':>10} {'edges':>8} {'fast s':>8} {'(median)':>8} {'naive s':>8} "
        f"{'ratio':>6} {'fresh ms':>9}"
    )
    for row in results:
        print(
            f"{row['documents']:>10} {row['edges']:>8} {row['fast_seconds']:>8.3f} "
            f"{row['fast_median_seconds']:>8.3f} {row['naive_seconds']:>8.3f} "
            f"{row['speedup']:>5.1f}x {row['freshness_check_ms']:>9.3f}"
        )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    document = {"benchmark": "load_bench", "load_average": os.getloadavg(), "results": results}
    RESULTS.write_text(json.dumps(document, indent=2) + "\n")
    print(
        f"wrote {RESULTS.relative_to(Path.cwd()) if RESULTS.is_relative_to(Path.cwd()) else RESULTS}"
    )


if __name__ == "__main__":
    asyncio.run(main())
