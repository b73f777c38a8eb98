"""An ingest service process of its own per module (its own persist topic, group and port), over a
freshly applied memory corpus and tenants, against the real Postgres and Kafka."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from mnemo_axon.compiler import load_deployment
from mnemo_events import PersistRow, new_envelope
from mnemo_events.provisioning import ensure_topics
from mnemo_events.settings import KafkaSettings
from mnemo_store.applier import apply_deployment
from mnemo_store.identifiers import store_table

from tests.infrastructure import free_port
from tests.waiting import eventually

ROOT = Path(__file__).resolve().parents[3]

DECLARATIONS = """
axonstore Docs_{s} {{
    backend: postgresql
    schema {{ id: Uuid primary_key  tenant_id: Uuid not_null  title: Text not_null  body: Text
             score: Integer  created_at: Timestamptz default(now()) }}
}}
axonstore Edges_{s} {{
    backend: postgresql
    schema {{ from_id: Uuid not_null  to_id: Uuid not_null  etype: Text not_null
             weight: Float not_null  tenant_id: Uuid not_null  created_at: Timestamptz default(now()) }}
}}
corpus Memory_{s} from axonstore {{
    documents: Docs_{s}(id, title, body)
    relations: Edges_{s}(from_id, to_id, etype, weight)
    adaptive: true
}}
"""


@dataclass
class IngestProcess:
    topic: str
    group: str
    persisted_topic: str
    audit_topic: str
    port: int
    env: dict[str, str]
    docs: str
    edges: str
    corpus: str
    tenants: list[uuid.UUID]
    owner_dsn: str
    bootstrap: str
    process: subprocess.Popen[bytes] | None = None
    log: Path = field(default_factory=lambda: Path("/dev/null"))
    forget_topic: str = ""

    def start(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mnemo_ingest"],
            env=self.env,
            stdout=self.log.open("ab"),
            stderr=subprocess.STDOUT,
            cwd=ROOT,
        )

    async def ready(self, wait: float = 60) -> None:
        async with httpx.AsyncClient() as client:

            async def answers_ready() -> bool:
                assert self.process is not None
                assert self.process.poll() is None, f"ingest exited: {self.log.read_text()[-3000:]}"
                try:
                    response = await client.get(f"http://127.0.0.1:{self.port}/readyz")
                except httpx.HTTPError:
                    return False
                return response.status_code == 200

            await eventually(
                answers_ready,
                within=wait,
                every=0.2,
                what=lambda: f"ingest never ready: {self.log.read_text()[-3000:]}",
            )

    def terminate(self) -> int | None:
        if self.process is None or self.process.poll() is not None:
            return None if self.process is None else self.process.returncode
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=15)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)

    async def produce(
        self, records: Sequence[tuple[bytes | None, bytes]], topic: str | None = None
    ) -> None:
        producer = AIOKafkaProducer(bootstrap_servers=self.bootstrap, linger_ms=5)
        await producer.start()
        try:
            futures = [
                await producer.send(topic or self.topic, value, key=key) for key, value in records
            ]
            await asyncio.gather(*futures)
        finally:
            await producer.stop()

    async def dead_letters(
        self, count: int, wait: float = 30, topic: str | None = None
    ) -> list[Any]:
        consumer = AIOKafkaConsumer(
            (topic or self.topic) + ".dlt",
            bootstrap_servers=self.bootstrap,
            auto_offset_reset="earliest",
            group_id=None,
        )
        await consumer.start()
        found: list[Any] = []
        try:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + wait
            while len(found) < count and loop.time() < deadline:
                for items in (await consumer.getmany(timeout_ms=300)).values():
                    found.extend(items)
        finally:
            await consumer.stop()
        return found

    async def count(self, tenant: uuid.UUID, table: str, where: str = "true") -> int:
        connection = await asyncpg.connect(self.owner_dsn)
        try:
            async with connection.transaction():
                await connection.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
                return int(await connection.fetchval(f"SELECT count(*) FROM {table} WHERE {where}"))
        finally:
            await connection.close()

    async def query(self, tenant: uuid.UUID, sql: str, *args: Any) -> list[asyncpg.Record]:
        connection = await asyncpg.connect(self.owner_dsn)
        try:
            async with connection.transaction():
                await connection.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
                return list(await connection.fetch(sql, *args))
        finally:
            await connection.close()


def envelope(
    tenant: uuid.UUID, store: str, values: dict[str, Any], event_id: uuid.UUID | None = None
) -> tuple[bytes, bytes]:
    env = new_envelope(
        PersistRow(store=store, values=values),
        tenant=tenant,
        producer="test-producer",
        event_type="mnemo.persist.v1",
        event_id=event_id,
    )
    return str(tenant).encode(), env.model_dump_json().encode()


@pytest.fixture(scope="module")
def suffix() -> str:
    return uuid.uuid4().hex[:10]


@pytest.fixture(scope="module")
async def ingest(
    owner_dsn: str, kafka_bootstrap: str, suffix: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[IngestProcess]:
    owner = await asyncpg.connect(owner_dsn)
    deployment = load_deployment(DECLARATIONS.format(s=suffix), f"test_{suffix}.axon")
    await apply_deployment(owner, deployment, gateway_base_url="http://127.0.0.1:8080")
    tenants = [
        await owner.fetchval(
            "INSERT INTO mnemo.tenants (name) VALUES ($1) RETURNING tenant_id",
            f"test-ingest-{suffix}-{n}",
        )
        for n in range(3)
    ]
    # Its own topics, out as well as in: the stack's classifier and audit service never get work
    # about this module's corpus, whose tables are dropped at the end.
    topic = f"test.persist.{suffix}.v1"
    persisted_topic = f"test.persisted.{suffix}.v1"
    audit_topic = f"test.audit.{suffix}.v1"
    forget_topic = f"test.forget.{suffix}.v1"
    settings = KafkaSettings(bootstrap=kafka_bootstrap, partitions=3)
    await ensure_topics(settings, [topic, persisted_topic, audit_topic, forget_topic])
    port = free_port()
    env = {
        **os.environ,
        "MNEMO_INGEST_TOPIC": topic,
        "MNEMO_INGEST_PERSISTED_TOPIC": persisted_topic,
        "MNEMO_INGEST_AUDIT_TOPIC": audit_topic,
        "MNEMO_INGEST_FORGET_TOPIC": forget_topic,
        "MNEMO_INGEST_GROUP": f"test.ingest.{suffix}",
        "MNEMO_INGEST_PORT": str(port),
        "MNEMO_INGEST_PENDING_HOLD_SECONDS": "4",
        "MNEMO_INGEST_PENDING_SWEEP_SECONDS": "0.5",
        "MNEMO_KAFKA_BOOTSTRAP": kafka_bootstrap,
        "MNEMO_KAFKA_PARTITIONS": "3",
        "MNEMO_KAFKA_MAX_ATTEMPTS": "2",
        "MNEMO_KAFKA_RETRY_BACKOFF_SECONDS": "0.05",
        "MNEMO_KAFKA_BATCH_TIMEOUT_MS": "50",
    }
    if "MNEMO_INGEST_DATABASE_URL" not in env:
        env["MNEMO_INGEST_DATABASE_URL"] = owner_dsn.replace(
            "mnemo_owner:mnemo_owner", "mnemo_ingest:mnemo_ingest"
        )
    process = IngestProcess(
        topic=topic,
        group=f"test.ingest.{suffix}",
        persisted_topic=persisted_topic,
        audit_topic=audit_topic,
        port=port,
        env=env,
        docs=f"Docs_{suffix}",
        edges=f"Edges_{suffix}",
        corpus=f"Memory_{suffix}",
        tenants=tenants,
        owner_dsn=owner_dsn,
        bootstrap=kafka_bootstrap,
        log=tmp_path_factory.mktemp("ingest") / "ingest.log",
        forget_topic=forget_topic,
    )
    process.start()
    try:
        await process.ready()
        yield process
    finally:
        process.kill()
        for tenant in tenants:
            async with owner.transaction():
                await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
                for table in ("outbox", "inbox", "pending_edges", "graph_revisions"):
                    await owner.execute(f"DELETE FROM mnemo.{table}")
            await owner.execute("DELETE FROM mnemo.tenants WHERE tenant_id = $1", tenant)
        for store in deployment.stores:
            await owner.execute(f"DROP TABLE IF EXISTS {store_table(store.name)}")
        await owner.execute("DELETE FROM mnemo.corpora WHERE corpus_id = $1", f"Memory_{suffix}")
        await owner.close()


def table(name: str) -> str:
    return store_table(name)


async def until(predicate: Any, wait: float = 60, every: float = 0.3) -> None:
    await eventually(predicate, within=wait, every=every, what="condition not reached in time")
