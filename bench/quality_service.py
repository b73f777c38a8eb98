"""`bench/quality.py --mode service`: the same questions through the real services.

The run starts its own ingest, edge classifier and navigator (`python -m mnemo_ingest`, …: the
code of this checkout, on free loopback ports) on Kafka topics and consumer groups of its own, so
neither the services `make up` runs nor anyone else's events take part, and uses the local
Postgres and Kafka (`make up`):

1. A tenant and a corpus of their own (`Quality_<suffix>`: documents and edges stores, not
   adaptive, so no question's navigation changes the next one's graph), declared and published as
   the owner role (`MNEMO_OWNER_DATABASE_URL`).
2. Every passage goes to ingest as a persist command (keyed by tenant).
3. The edge classifier receives ingest's `document.persisted` events and sends its edges back to
   ingest. The run waits until every document is stored, the tenant's outbox holds nothing
   unpublished, the classifier's and ingest's consumer groups have nothing left to read, and the
   edge count has stopped moving.
4. Each question goes to the navigator: `POST /v1/corpora/<corpus>/navigate` with a development
   token (`mnemo_auth.DEVELOPMENT_SECRET`) and the budget; the direction only when one is given
   (`--direction`): otherwise the navigator's default, the one engine mode walks in.

`bm25` and `navigate_no_edges` are computed in process over the same documents (the service has no
BM25 endpoint; its flat `retrieve` ranks by Postgres full-text rank). Edge recall is read from the
edges the services stored. The processes stop, and the tenant's rows, the corpus and its tables
are dropped at the end. Service logs go to `bench/results/quality_service_logs/`.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

import asyncpg
import httpx
from aiokafka import AIOKafkaProducer
from mnemo_auth import DEVELOPMENT_SECRET, mint_token
from mnemo_axon.compiler import load_deployment
from mnemo_events import PERSIST, PersistRow, new_envelope
from mnemo_mdn import DEFAULT_PARAMS, CorpusGraph, Edge, navigate
from mnemo_mdn.frontier import Direction
from mnemo_store.applier import apply_deployment
from mnemo_store.identifiers import store_table
from quality import DIRECTION, Dataset, Results, bm25_ranking, passage_id, recall
from service_processes import Services, graph_declarations, lag

LOGS = Path(__file__).resolve().parent / "results" / "quality_service_logs"
SETTLE_SECONDS = 3.0
WAIT_SECONDS = 1800.0


def say(message: str) -> None:
    print(f"service: {message}", file=sys.stderr, flush=True)


def environment(name: str, default: str | None = None) -> str:
    value = os.environ.get(name, default)
    if not value:
        raise SystemExit(f"service mode needs {name} (run it with the stack up: `make up`)")
    return value


async def _tenant_count(owner: asyncpg.Connection, tenant: uuid.UUID, table: str) -> int:
    async with owner.transaction():
        await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
        return int(await owner.fetchval(f"SELECT count(*) FROM {table}"))


async def _unpublished(owner: asyncpg.Connection, tenant: uuid.UUID) -> int:
    """The tenant's outbox rows the relay has not published yet: stored documents whose
    `document.persisted` the classifier has not been sent (no consumer group counts them)."""
    async with owner.transaction():
        await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
        return int(
            await owner.fetchval("SELECT count(*) FROM mnemo.outbox WHERE published_at IS NULL")
        )


async def _persist(
    bootstrap: str, topic: str, tenant: uuid.UUID, store: str, dataset: Dataset
) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=20, acks="all")
    await producer.start()
    try:
        key = str(tenant).encode()
        futures = []
        for k, (title, text) in enumerate(dataset.passages):
            envelope = new_envelope(
                PersistRow(store=store, values={"id": passage_id(k), "title": title, "body": text}),
                tenant=tenant,
                producer="bench.quality",
                event_type=PERSIST,
            )
            futures.append(await producer.send(topic, envelope.model_dump_json().encode(), key=key))
        await asyncio.gather(*futures)
    finally:
        await producer.stop()


async def _run(
    dataset: Dataset, direction: Direction | None, budget: int
) -> tuple[Results, list[Edge]]:
    owner_dsn = environment("MNEMO_OWNER_DATABASE_URL")
    bootstrap = environment("MNEMO_KAFKA_BOOTSTRAP", "127.0.0.1:29092")

    suffix = uuid.uuid4().hex[:10]
    corpus = f"Quality_{suffix}"
    docs, edges_table = f"{corpus}Docs", f"{corpus}Edges"
    deployment = load_deployment(
        graph_declarations(corpus, adaptive=False), f"quality_{suffix}.axon"
    )
    services = Services(suffix, bootstrap, LOGS)
    owner = await asyncpg.connect(owner_dsn)
    tenant: uuid.UUID | None = None
    try:
        # The tenant and corpus exist before the services start: ingest refuses a tenant it has
        # not seen, and re-reads the registry on a miss at most once a second.
        await apply_deployment(owner, deployment, gateway_base_url="http://127.0.0.1:8080")
        await owner.execute(
            "UPDATE mnemo.corpora SET status = 'published' WHERE corpus_id = $1", corpus
        )
        tenant = await owner.fetchval(
            "INSERT INTO mnemo.tenants (name) VALUES ($1) RETURNING tenant_id", f"quality-{suffix}"
        )
        assert tenant is not None
        await services.start()
        say(f"ingest, edge-classifier and navigator ready on ports {services.ports}")
        url = services.url("navigator")
        started = time.monotonic()
        await _persist(bootstrap, services.persist, tenant, docs, dataset)
        say(f"sent {len(dataset.passages)} documents to ingest (corpus {corpus})")
        edges_count, stable_since = -1, time.monotonic()
        while True:
            stored = await _tenant_count(owner, tenant, store_table(docs))
            count = await _tenant_count(owner, tenant, store_table(edges_table))
            behind = await lag(bootstrap, services.groups) + await _unpublished(owner, tenant)
            now = time.monotonic()
            if count != edges_count:
                edges_count, stable_since = count, now
            if (
                stored == len(dataset.passages)
                and behind == 0
                and now - stable_since >= SETTLE_SECONDS
            ):
                break
            if stored < len(dataset.passages) and behind == 0 and now - stable_since >= 30:
                raise SystemExit(
                    f"service mode: ingest stored {stored} of {len(dataset.passages)} documents and"
                    f" has nothing left to read: the rest were dead-lettered (logs in {LOGS})"
                )
            if now - started > WAIT_SECONDS:
                raise SystemExit(
                    f"service mode: after {WAIT_SECONDS:.0f} s, {stored} documents stored,"
                    f" {count} edges, {behind} records unread by the classifier and ingest or"
                    " unpublished in the outbox"
                )
            await asyncio.sleep(1.0)
        say(f"stored {stored} documents and {edges_count} edges in {now - started:.0f} s")
        async with owner.transaction():
            await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
            rows = await owner.fetch(
                f"SELECT from_id, to_id, etype, weight FROM {store_table(edges_table)}"
            )
        edges = [Edge(r["from_id"], r["to_id"], r["etype"], float(r["weight"])) for r in rows]

        documents = dataset.documents()
        flat_graph = CorpusGraph.build(documents, [])
        token = mint_token(tenant=tenant, secret=DEVELOPMENT_SECRET, subject="bench.quality")
        headers = {"Authorization": f"Bearer {token}"}
        results = Results()
        body: dict[str, object] = {"budget": budget}
        if direction is not None:
            body["direction"] = direction
        async with httpx.AsyncClient(timeout=60) as http:
            for number, question in enumerate(dataset.questions, 1):
                response = await http.post(
                    f"{url}/v1/corpora/{corpus}/navigate",
                    json={"query": question.text, **body},
                    headers=headers,
                )
                if response.status_code != 200:
                    raise SystemExit(f"navigate answered {response.status_code}: {response.text}")
                walked = [hit["id"] for hit in response.json()["hits"]]
                flat = bm25_ranking(flat_graph, question.text, DEFAULT_PARAMS, budget)
                alone = navigate(
                    flat_graph, question.text, budget=budget, direction=direction or DIRECTION
                ).path
                gold = question.supporting
                for system, ranked in (
                    ("bm25", flat),
                    ("navigate", walked),
                    ("navigate_no_edges", alone),
                ):
                    results.per_question[system].append(
                        (recall(ranked, gold, 2), recall(ranked, gold, 5))
                    )
                if number % 25 == 0:
                    say(f"{number}/{len(dataset.questions)} questions")
        return results, edges
    finally:
        services.stop()
        await _drop(owner, (docs, edges_table), corpus, tenant)
        await owner.close()


async def _drop(
    owner: asyncpg.Connection, stores: Sequence[str], corpus: str, tenant: uuid.UUID | None
) -> None:
    for store in stores:
        await owner.execute(f"DROP TABLE IF EXISTS {store_table(store)}")
    await owner.execute("DELETE FROM mnemo.corpora WHERE corpus_id = $1", corpus)
    if tenant is None:
        return
    try:
        async with owner.transaction():
            await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
            for table in ("outbox", "inbox", "pending_edges", "nav_outcomes", "graph_revisions"):
                await owner.execute(f"DELETE FROM mnemo.{table}")
            await owner.execute("DELETE FROM mnemo.tenants WHERE tenant_id = $1", tenant)
    except asyncpg.PostgresError as error:  # e.g. its audit chain, which nobody may delete
        say(f"tenant quality tenant {tenant} kept: {error}")


def run_service(
    dataset: Dataset, *, direction: Direction | None, budget: int
) -> tuple[Results, list[Edge]]:
    def stop(number: int, frame: object) -> None:
        raise SystemExit(128 + number)  # so the services are stopped and the rows dropped

    signal.signal(signal.SIGTERM, stop)
    return asyncio.run(_run(dataset, direction, budget))
