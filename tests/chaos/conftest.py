"""Faults injected into running services: each test starts its OWN service processes (`python -m
mnemo_<service>`, own topics, group and port) over a freshly applied memory corpus and tenants.

The broker and database restarts run against a private Kafka and Postgres, brought up and
restarted by the same deploy/local scripts as `make up` (own ports and state under
.local/chaos), so they never disturb the shared stack or another test run.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from mnemo_auth import DEVELOPMENT_SECRET
from mnemo_axon.compiler import load_deployment
from mnemo_axon.ir import Deployment
from mnemo_events import PersistRow, new_envelope
from mnemo_events.provisioning import ensure_topics
from mnemo_events.settings import KafkaSettings
from mnemo_store import Store, StoreCorpus
from mnemo_store.applier import apply_deployment
from mnemo_store.identifiers import store_table

from tests.chaos.summary import DIRECTORY as SUMMARY_DIRECTORY
from tests.chaos.summary import Row, Summary, table
from tests.declarations import memory_corpus
from tests.infrastructure import free_port
from tests.waiting import eventually

ROOT = Path(__file__).resolve().parents[2]
PG_PORT = int(os.environ.get("MNEMO_PG_PORT", "25432"))
ROLES = ("owner", "ingest", "classifier", "relay")


@dataclass(frozen=True)
class Stack:
    """Where Postgres and Kafka are, and the environment of the deploy/local scripts."""

    pg_port: int
    bootstrap: str
    script_env: dict[str, str]

    def url(self, role: str) -> str:
        return f"postgresql://mnemo_{role}:mnemo_{role}@127.0.0.1:{self.pg_port}/mnemo"

    def script(self, name: str, action: str) -> None:
        """`deploy/local/<name>.sh <action>`, exactly as `make up` / `make down` run it."""
        subprocess.run(
            ["bash", str(ROOT / "deploy" / "local" / f"{name}.sh"), action],
            env=self.script_env,
            check=True,
            stdout=subprocess.DEVNULL,
            timeout=240,
        )


def shared_stack() -> Stack:
    bootstrap = os.environ.get("MNEMO_KAFKA_BOOTSTRAP", "127.0.0.1:29092")
    return Stack(PG_PORT, bootstrap, dict(os.environ))


@pytest.fixture(scope="module")
def private_stack() -> Iterator[Stack]:
    """A Kafka and a Postgres of these tests alone (on free ports, state under .local/chaos),
    migrated like the shared one; stopped at the end."""
    local = ROOT / ".local" / "chaos"
    local.mkdir(parents=True, exist_ok=True)
    for jars in (ROOT / ".local").glob("kafka-libs-*"):
        link = local / jars.name
        if not link.exists():
            link.symlink_to(jars)  # the broker's jars, fetched once by `make up`
    # Free ports of the moment (another checkout's stack may hold any fixed choice); the broker's
    # storage is formatted afresh for them.
    pg_port = int(os.environ.get("MNEMO_CHAOS_PG_PORT") or free_port())
    kafka_port = int(os.environ.get("MNEMO_CHAOS_KAFKA_PORT") or free_port())
    controller_port = free_port()
    shutil.rmtree(local / "kafka", ignore_errors=True)
    env = {
        **os.environ,
        "MNEMO_LOCAL": str(local),
        "MNEMO_PG_PORT": str(pg_port),
        "MNEMO_KAFKA_PORT": str(kafka_port),
        "MNEMO_KAFKA_CONTROLLER_PORT": str(controller_port),
    }
    stack = Stack(pg_port, f"127.0.0.1:{kafka_port}", env)
    stack.script("postgres", "up")
    stack.script("kafka", "up")
    try:
        subprocess.run(
            [sys.executable, "-m", "alembic", "-c", "migrations/alembic.ini", "upgrade", "heads"],
            env={**env, "MNEMO_OWNER_DATABASE_URL": stack.url("owner")},
            cwd=ROOT,
            check=True,
            capture_output=True,
            timeout=240,
        )
        yield stack
    finally:
        stack.script("kafka", "down")
        stack.script("postgres", "down")


@dataclass
class Service:
    """One service process of a test (`python -m <module>`)."""

    module: str
    port: int
    env: dict[str, str]
    log: Path
    process: subprocess.Popen[bytes] | None = None

    def rss_bytes(self) -> int:
        """The process's resident memory, from /proc."""
        assert self.process is not None
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise AssertionError("no VmRSS in /proc status")

    def start(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", self.module],
            env=self.env,
            stdout=self.log.open("ab"),
            stderr=subprocess.STDOUT,
            cwd=ROOT,
        )

    async def readiness(self) -> int | None:
        try:
            async with httpx.AsyncClient(timeout=3) as client:
                return (await client.get(f"http://127.0.0.1:{self.port}/readyz")).status_code
        except httpx.HTTPError:
            return None

    async def ready(self, wait: float = 90) -> None:
        async def answers_ready() -> bool:
            assert self.process is not None
            assert self.process.poll() is None, self.tail()
            return await self.readiness() == 200

        await eventually(
            answers_ready,
            within=wait,
            every=0.2,
            what=lambda: f"{self.module} never ready: {self.tail()}",
        )

    def cpu_seconds(self) -> float:
        """User + system CPU time the process has used so far (Linux)."""
        assert self.process is not None
        stat = Path(f"/proc/{self.process.pid}/stat").read_text()
        fields = stat.rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)

    def terminate(self, wait: float = 15) -> tuple[int, float]:
        """SIGTERM; the exit code and how long the process took to exit."""
        assert self.process is not None
        started = time.monotonic()
        self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(wait)
        return code, time.monotonic() - started


@dataclass
class World:
    """A corpus, tenants and topics of one test module, on one stack."""

    stack: Stack
    suffix: str
    tenants: list[uuid.UUID]
    logs: Path
    services: list[Service] = field(default_factory=list)
    deployment: Deployment | None = None

    @property
    def docs(self) -> str:
        return f"ChaosDocs_{self.suffix}"

    @property
    def edges(self) -> str:
        return f"ChaosEdges_{self.suffix}"

    @property
    def corpus(self) -> str:
        return f"ChaosMemory_{self.suffix}"

    def topic(self, name: str) -> str:
        return f"chaos.{name}.{self.suffix}.v1"

    def store_corpus(self) -> StoreCorpus:
        assert self.deployment is not None
        return StoreCorpus.from_deployment(self.deployment, self.corpus)

    async def write(
        self,
        tenant: uuid.UUID,
        documents: Sequence[dict[str, Any]],
        edges: Sequence[dict[str, Any]] = (),
    ) -> None:
        """Rows written straight to the stores as the owner, in one transaction of `tenant`
        (setup, or a writer that needs no Kafka)."""
        corpus = self.store_corpus()
        async with (
            await Store.connect(self.stack.url("owner"), max_size=1) as store,
            store.tenant(tenant) as tx,
        ):
            if documents:
                await tx.insert_rows(corpus.documents, documents)
            if edges:
                await tx.insert_rows(corpus.relations, edges)

    async def topics(self, *names: str) -> None:
        await ensure_topics(
            KafkaSettings(bootstrap=self.stack.bootstrap, partitions=4),
            [self.topic(n) for n in names],
        )

    def kafka_env(self) -> dict[str, str]:
        return {
            **os.environ,
            "MNEMO_KAFKA_BOOTSTRAP": self.stack.bootstrap,
            "MNEMO_KAFKA_PARTITIONS": "4",
            "MNEMO_KAFKA_MAX_ATTEMPTS": "3",
            "MNEMO_KAFKA_RETRY_BACKOFF_SECONDS": "0.05",
            "MNEMO_KAFKA_RETRY_BACKOFF_MAX_SECONDS": "1",
            "MNEMO_KAFKA_BATCH_TIMEOUT_MS": "50",
            "MNEMO_KAFKA_REQUEST_TIMEOUT_MS": "5000",
        }

    def ingest(self, name: str = "ingest") -> Service:
        port = free_port()
        env = {
            **self.kafka_env(),
            "MNEMO_INGEST_DATABASE_URL": self.stack.url("ingest"),
            "MNEMO_RELAY_DATABASE_URL": self.stack.url("relay"),
            "MNEMO_INGEST_TOPIC": self.topic("persist"),
            "MNEMO_INGEST_PERSISTED_TOPIC": self.topic("persisted"),
            "MNEMO_INGEST_AUDIT_TOPIC": self.topic("audit"),
            "MNEMO_INGEST_GROUP": f"chaos.ingest.{self.suffix}",
            "MNEMO_INGEST_PORT": str(port),
        }
        service = Service("mnemo_ingest", port, env, self.logs / f"{name}.log")
        self.services.append(service)
        return service

    def classifier(self) -> Service:
        port = free_port()
        env = {
            **self.kafka_env(),
            "MNEMO_CLASSIFIER_DATABASE_URL": self.stack.url("classifier"),
            "MNEMO_CLASSIFIER_TOPIC": self.topic("persisted"),
            "MNEMO_CLASSIFIER_PERSIST_TOPIC": self.topic("persist"),
            "MNEMO_CLASSIFIER_GROUP": f"chaos.classifier.{self.suffix}",
            "MNEMO_CLASSIFIER_PORT": str(port),
            "MNEMO_EDGE_CLASSIFIER_PORT": str(port),
        }
        service = Service("mnemo_edge_classifier", port, env, self.logs / "classifier.log")
        self.services.append(service)
        return service

    def audit(self) -> Service:
        """The audit service on the world's audit topic, connected as the audit role."""
        port = free_port()
        env = {
            **self.kafka_env(),
            "MNEMO_AUDIT_DATABASE_URL": self.stack.url("audit"),
            "MNEMO_AUDIT_TOPIC": self.topic("audit"),
            "MNEMO_AUDIT_GROUP": f"chaos.audit.{self.suffix}",
            "MNEMO_AUDIT_PORT": str(port),
            "MNEMO_AUDIT_TOKEN_SECRET": DEVELOPMENT_SECRET,
        }
        service = Service("mnemo_audit", port, env, self.logs / "audit.log")
        self.services.append(service)
        return service

    def navigator(self, pinned: str | None = None, pool_size: int = 10) -> Service:
        """The navigator over HTTP only (no request topic), connected as the navigator role;
        `pinned` is the corpus's pinned scope template for client-confined tokens."""
        port = free_port()
        env = {
            **os.environ,
            "MNEMO_NAVIGATOR_DATABASE_URL": self.stack.url("navigator"),
            "MNEMO_NAVIGATOR_PORT": str(port),
            "MNEMO_NAVIGATOR_CONSUME_REQUESTS": "false",
            "MNEMO_NAVIGATOR_TOKEN_SECRET": DEVELOPMENT_SECRET,
            "MNEMO_NAVIGATOR_POOL_SIZE": str(pool_size),
            "MNEMO_NAVIGATOR_PINNED_SCOPES": json.dumps({self.corpus: pinned} if pinned else {}),
        }
        service = Service("mnemo_navigator", port, env, self.logs / "navigator.log")
        self.services.append(service)
        return service

    def record(self, tenant: uuid.UUID, store: str, values: dict[str, Any]) -> tuple[bytes, bytes]:
        envelope = new_envelope(
            PersistRow(store=store, values=values),
            tenant=tenant,
            producer="chaos",
            event_type="mnemo.persist.v1",
        )
        return str(tenant).encode(), envelope.model_dump_json().encode()

    async def produce(self, records: Sequence[tuple[bytes | None, bytes]]) -> None:
        producer = AIOKafkaProducer(
            bootstrap_servers=self.stack.bootstrap, linger_ms=5, enable_idempotence=True
        )
        await producer.start()
        try:
            futures = [
                await producer.send(self.topic("persist"), value, key=key) for key, value in records
            ]
            await asyncio.gather(*futures)
        finally:
            await producer.stop()

    async def read(
        self, topic: str, count: int, wait: float = 60, idle: float | None = None
    ) -> list[Any]:
        """Up to `count` records of `topic` from the start, within `wait` seconds (or until
        nothing new came for `idle` seconds)."""
        consumer = AIOKafkaConsumer(
            topic,
            bootstrap_servers=self.stack.bootstrap,
            auto_offset_reset="earliest",
            group_id=None,
        )
        await consumer.start()
        found: list[Any] = []
        try:
            deadline = time.monotonic() + wait
            heard = time.monotonic()
            while len(found) < count and time.monotonic() < deadline:
                for items in (await consumer.getmany(timeout_ms=300)).values():
                    found.extend(items)
                    heard = time.monotonic()
                if idle is not None and found and time.monotonic() - heard > idle:
                    break
        finally:
            await consumer.stop()
        return found

    async def scalar(self, tenant: uuid.UUID, sql: str) -> Any:
        """`sql` as the owner inside `tenant` (the owner is under the tenant policy too)."""
        connection = await asyncpg.connect(self.stack.url("owner"), timeout=5)
        try:
            async with connection.transaction():
                await connection.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
                return await connection.fetchval(sql)
        finally:
            await connection.close()

    async def lag(self, group: str, topic: str) -> int:
        """Records of `topic` that consumer group `group` has not committed yet."""
        admin = AIOKafkaAdminClient(bootstrap_servers=self.stack.bootstrap)
        consumer = AIOKafkaConsumer(bootstrap_servers=self.stack.bootstrap)
        await admin.start()
        await consumer.start()
        try:
            committed = await admin.list_consumer_group_offsets(group)
            partitions = [
                TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or ()
            ]
            if not partitions:
                await consumer.topics()
                partitions = [
                    TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or ()
                ]
            ends = await consumer.end_offsets(partitions)
            return sum(
                end - (committed[tp].offset if tp in committed else 0) for tp, end in ends.items()
            )
        finally:
            await consumer.stop()
            await admin.close()

    async def rows(self, tenant: uuid.UUID, sql: str) -> list[asyncpg.Record]:
        connection = await asyncpg.connect(self.stack.url("owner"), timeout=5)
        try:
            async with connection.transaction():
                await connection.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
                return list(await connection.fetch(sql))
        finally:
            await connection.close()

    async def count(self, tenant: uuid.UUID, where: str = "true", store: str = "") -> int:
        table = store_table(store or self.docs)
        return int(await self.scalar(tenant, f"SELECT count(*) FROM {table} WHERE {where}"))

    async def until(self, predicate: Any, wait: float, every: float = 0.2) -> None:
        await eventually(
            predicate,
            within=wait,
            every=every,
            what=lambda: (
                "condition not reached in time: "
                + "; ".join(f"{s.module}: {s.tail()[-800:]}" for s in self.services)
            ),
        )


async def make_world(
    stack: Stack, logs: Path, tenants: int = 2, *, published: bool = False, **declaration: Any
) -> World:
    """A fresh corpus (`memory_corpus(..., **declaration)`), `tenants` tenants and topics."""
    suffix = uuid.uuid4().hex[:10]
    owner = await asyncpg.connect(stack.url("owner"))
    try:
        deployment = load_deployment(
            memory_corpus("Chaos", "ChaosMemory", suffix, **declaration), f"chaos_{suffix}.axon"
        )
        await apply_deployment(owner, deployment, gateway_base_url="http://127.0.0.1:8080")
        if published:
            await owner.execute(
                "UPDATE mnemo.corpora SET status = 'published' WHERE corpus_id = $1",
                f"ChaosMemory_{suffix}",
            )
        ids = [
            await owner.fetchval(
                "INSERT INTO mnemo.tenants (name) VALUES ($1) RETURNING tenant_id",
                f"chaos-{suffix}-{n}",
            )
            for n in range(tenants)
        ]
    finally:
        await owner.close()
    world = World(stack, suffix, ids, logs, deployment=deployment)
    await world.topics("persist", "persisted", "audit")
    return world


async def remove_world(world: World) -> None:
    for service in world.services:
        service.kill()
    owner = await asyncpg.connect(world.stack.url("owner"))
    try:
        for tenant in world.tenants:
            async with owner.transaction():
                await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
                for name in (
                    "outbox",
                    "inbox",
                    "pending_edges",
                    "graph_revisions",
                    "nav_outcomes",
                ):
                    await owner.execute(f"DELETE FROM mnemo.{name}")
            await owner.execute("DELETE FROM mnemo.tenants WHERE tenant_id = $1", tenant)
        for name in (world.docs, world.edges):
            await owner.execute(f"DROP TABLE IF EXISTS {store_table(name)}")
        await owner.execute("DELETE FROM mnemo.corpora WHERE corpus_id = $1", world.corpus)
    finally:
        await owner.close()


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[World]:
    """A world on the shared stack (services of its own, never the stack's); its corpus is
    published (the edge classifier classifies only published corpora)."""
    created = await make_world(shared_stack(), tmp_path, published=True)
    try:
        yield created
    finally:
        await remove_world(created)


def doc(sub: uuid.UUID, title: str, body: str = "") -> dict[str, Any]:
    return {"id": str(uuid.uuid4()), "tenant_id": str(sub), "title": title, "body": body or title}


_ROWS = pytest.StashKey[list[Row]]()


@pytest.fixture
def summary(request: pytest.FixtureRequest) -> Iterator[Summary]:
    """Where a test records its row of the chaos summary table (see tests/chaos/summary.py)."""
    recorder = Summary(request.node.nodeid)
    yield recorder
    request.config.stash.setdefault(_ROWS, []).extend(recorder.rows)


@pytest.fixture(scope="session", autouse=True)
def _fresh_summary() -> None:
    """The summary directory holds the rows of the latest run only."""
    shutil.rmtree(SUMMARY_DIRECTORY, ignore_errors=True)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    rows = config.stash.get(_ROWS, [])
    if rows:
        terminalreporter.write_sep("=", "chaos summary (also under .local/chaos/summary/)")
        terminalreporter.write_line(table(rows))
