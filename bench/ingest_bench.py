"""The write path end to end: rows per second from produce to committed row, outbox included.

A memory corpus and four tenants are created; `python -m mnemo_ingest` runs on topics of its own
(persist, document.persisted, audit), and the bench produces document rows to its persist topic.
Two numbers per run, both from the first record produced:

- committed: every row is in its store (rows, inbox, revision and outbox in the same transaction);
- published: and the outbox is empty, i.e. every `document.persisted` and audit event the rows
  caused is on Kafka (the relay).

Runs: the service as configured (batches of up to `MNEMO_KAFKA_BATCH_MAX_RECORDS`, one transaction
per tenant per batch, pipelined relay), and the same service taking one record per batch: a naive
consumer that commits once per message (one database transaction and one offset commit each).
Prints a table and writes bench/results/ingest_bench.json. Needs the local stack (`make up`).
Targets: ≥ 5,000 rows/s on 2 cores, ≥ 10× the naive consumer.
`--rows N` / `--naive-rows N` change the sizes; `--only batched|naive` runs one;
`INGEST_BENCH_PROFILE=FILE` runs the service under cProfile (FILE.batched, FILE.naive, …).

`--sampling` adds the cost of tracing: the batched service again, `--sampling-rows` rows per run,
under each of `SAMPLING` (the default sampler, which records every span, and
`parentbased_traceidratio` at 1, 0.01 and 0; the bench's records carry no trace, so the ratio
decides at ingest), with no collector and with an OTLP endpoint nobody listens on; each run's rows
per CPU second of the ingest process, and its ratio to the default's (or the first run's, without
the default) (target: ≥ 2× at 0.01). `--only sampling` runs just these (written to
bench/results/ingest_bench_sampling.json), `--sampling-runs 'default,ratio 0.01'` some of them,
`--sampling-rounds N` all of them N times over, each round's ratios to its own first run (the load
of a shared machine moves between rounds) and the median printed.

`--only http` runs the HTTP write path instead (issue 23): the same ingest process, and a navigator
process of this run (`python -m mnemo_navigator`, HTTP only, its persist topic the ingest's)
taking `POST /v1/stores/{store}/rows` with batches of `--http-batch` rows (100) from
`--http-concurrency` clients at once (4), `--http-rows` rows in all (5,000). Its rows per second
are from the first request to the last row committed by ingest (target: ≥ 1,000 rows/s); also
the requests' latency (each answered once its rows are in Kafka, through the navigator's outbox
and relay) and the navigator's CPU seconds. Written to bench/results/ingest_bench_http.json.

`--baseline-ref REF` (with the sampling runs) runs first, side by side with them, the ingest
service of git commit REF (its libs and services exported with `git archive` into a temporary
directory put first on PYTHONPATH; the rest of the environment is this checkout's) under its
default sampler, and each run's ratio is to that one: rows per CPU second against the code as it
was, since a cheaper write path makes today's default run cheaper too. `BASELINE_REF` is the
commit before the sampler and the write-path work of issue 22.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import httpx
from aiokafka import AIOKafkaProducer
from mnemo_auth import DEVELOPMENT_SECRET, mint_token
from mnemo_axon.compiler import load_deployment
from mnemo_events import PersistRow, new_envelope
from mnemo_events.provisioning import ensure_topics
from mnemo_events.settings import KafkaSettings
from mnemo_store.applier import apply_deployment
from mnemo_store.identifiers import store_table

TENANTS = 4
PARTITIONS = 6
RESULTS = Path(__file__).parent / "results" / "ingest_bench.json"
HTTP_RESULTS = Path(__file__).parent / "results" / "ingest_bench_http.json"
SAMPLING_RESULTS = Path(__file__).parent / "results" / "ingest_bench_sampling.json"
PG_PORT = int(os.environ.get("MNEMO_PG_PORT", "25432"))
TRACING_VARIABLES = (
    "MNEMO_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_TRACES_EXPORTER",
    "OTEL_TRACES_SAMPLER",
    "OTEL_TRACES_SAMPLER_ARG",
)
"""Cleared for the sampling runs, which each set their own."""
SAMPLING: tuple[tuple[str, str | None, bool], ...] = (
    # (label, OTEL_TRACES_SAMPLER_ARG of parentbased_traceidratio or None for the default, endpoint)
    ("default", None, False),
    ("ratio 1", "1", False),
    ("ratio 0.01", "0.01", False),
    ("ratio 0", "0", False),
    ("default, no collector", None, True),
    ("ratio 0.01, no collector", "0.01", True),
)
"""The sampling runs: "default" is today's configuration (no sampler variable: every span is
recorded); "no collector" sets an OTLP endpoint on a port nobody listens on."""
BASELINE_REF = "fc56d63"
"""The last commit before issue 22's sampler and write-path changes (its ingest records every
span: no sampler variable existed)."""


def _url(variable: str, role: str) -> str:
    return os.environ.get(variable, f"postgresql://{role}:{role}@127.0.0.1:{PG_PORT}/mnemo")


OWNER = _url("MNEMO_OWNER_DATABASE_URL", "mnemo_owner")
INGEST = _url("MNEMO_INGEST_DATABASE_URL", "mnemo_ingest")
NAVIGATOR = _url("MNEMO_NAVIGATOR_DATABASE_URL", "mnemo_navigator")
RELAY = _url("MNEMO_RELAY_DATABASE_URL", "mnemo_relay")
BOOTSTRAP = os.environ.get("MNEMO_KAFKA_BOOTSTRAP", "127.0.0.1:29092")

DECLARATIONS = """
axonstore BenchDocs_{s} {{
    backend: postgresql
    schema {{ id: Uuid primary_key  tenant_id: Uuid not_null  title: Text not_null  body: Text
             created_at: Timestamptz default(now()) }}
}}
axonstore BenchEdges_{s} {{
    backend: postgresql
    schema {{ from_id: Uuid not_null  to_id: Uuid not_null  etype: Text not_null
             weight: Float not_null  tenant_id: Uuid not_null }}
}}
corpus BenchMemory_{s} from axonstore {{
    documents: BenchDocs_{s}(id, title, body)
    relations: BenchEdges_{s}(from_id, to_id, etype, weight)
}}
"""


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process `pid` so far (Linux)."""
    return sum(cpu_split(pid))


def cpu_split(pid: int) -> tuple[float, float]:
    """User and system CPU time of process `pid` so far (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


async def database_cpu(owner: asyncpg.Connection, app_name: str) -> dict[int, float]:
    """CPU seconds so far of each Postgres backend serving sessions named `app_name` (the
    server on this machine)."""
    pids = await owner.fetch(
        "SELECT pid FROM pg_stat_activity WHERE application_name = $1", app_name
    )
    found = {}
    for row in pids:
        try:
            found[row["pid"]] = cpu_seconds(row["pid"])
        except OSError:
            continue
    return found


def export_sources(ref: str, into: Path) -> str:
    """The libs and services of commit `ref` exported into `into`; returns the PYTHONPATH that
    puts their `src` directories before this checkout's (installed editable)."""
    root = Path(__file__).resolve().parents[1]
    archive = subprocess.run(
        ["git", "-C", str(root), "archive", ref, "libs", "services"],
        check=True,
        capture_output=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    sources = sorted(str(src) for src in into.glob("*/*/src") if src.is_dir())
    return os.pathsep.join(sources)


def tail(log: Path) -> str:
    return log.read_text()[-2000:]


async def ready(process: subprocess.Popen[bytes], port: int, log: Path, what: str) -> None:
    """Wait until `process` answers `/readyz` on `port` (60 s at most)."""
    async with httpx.AsyncClient() as http:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"{what} exited: {tail(log)}")
            try:
                if (await http.get(f"http://127.0.0.1:{port}/readyz")).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what} never ready: {tail(log)}")
            await asyncio.sleep(0.2)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Setup:
    """A corpus, tenants and topics of this run, removed at the end."""

    def __init__(self, owner: asyncpg.Connection) -> None:
        self.owner = owner
        self.suffix = uuid.uuid4().hex[:10]
        self.docs = f"BenchDocs_{self.suffix}"
        self.corpus = f"BenchMemory_{self.suffix}"
        self.deployment = load_deployment(DECLARATIONS.format(s=self.suffix), "bench.axon")
        self.tenants: list[uuid.UUID] = []

    async def create(self) -> None:
        await apply_deployment(
            self.owner, self.deployment, gateway_base_url="http://127.0.0.1:8080"
        )
        for n in range(TENANTS):
            self.tenants.append(
                await self.owner.fetchval(
                    "INSERT INTO mnemo.tenants (name) VALUES ($1) RETURNING tenant_id",
                    f"bench-ingest-{self.suffix}-{n}",
                )
            )

    async def per_tenant(self, sql: str) -> int:
        """The sum over the tenants of `sql`'s count (the owner is under the tenant policy)."""
        total = 0
        async with self.owner.transaction():
            for tenant in self.tenants:
                await self.owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
                total += int(await self.owner.fetchval(sql))
        return total

    async def remove(self) -> None:
        for tenant in self.tenants:
            async with self.owner.transaction():
                await self.owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
                for name in ("outbox", "inbox", "pending_edges", "graph_revisions"):
                    await self.owner.execute(f"DELETE FROM mnemo.{name}")
            await self.owner.execute("DELETE FROM mnemo.tenants WHERE tenant_id = $1", tenant)
        for store in self.deployment.stores:
            await self.owner.execute(f"DROP TABLE IF EXISTS {store_table(store.name)}")
        await self.owner.execute("DELETE FROM mnemo.corpora WHERE corpus_id = $1", self.corpus)


def records(setup: Setup, count: int, run: str) -> list[tuple[bytes, bytes]]:
    out = []
    subs = {tenant: [uuid.uuid4() for _ in range(4)] for tenant in setup.tenants}
    for n in range(count):
        tenant = setup.tenants[n % TENANTS]
        values = {
            "id": str(uuid.uuid4()),
            "tenant_id": str(subs[tenant][n % 4]),
            "title": f"{run} memory {n}",
            "body": f"what the agent learned at step {n} of the {run} run",
        }
        envelope = new_envelope(
            PersistRow(store=setup.docs, values=values),
            tenant=tenant,
            producer="bench",
            event_type="mnemo.persist.v1",
        )
        out.append((str(tenant).encode(), envelope.model_dump_json().encode()))
    return out


@dataclass
class IngestRun:
    """An ingest process of one run, on topics of its own."""

    process: subprocess.Popen[bytes]
    port: int
    log: Path
    topic: str
    app_name: str


async def start_ingest(
    setup: Setup,
    *,
    name: str,
    batch: int,
    tracing_env: Mapping[str, str] | None = None,
    pythonpath: str | None = None,
) -> IngestRun:
    """`python -m mnemo_ingest` on topics of run `name`, taking batches of up to `batch` records;
    `tracing_env` (when given) replaces the caller's tracing variables (`TRACING_VARIABLES`);
    `pythonpath` puts other sources first (`export_sources`)."""
    topic = f"bench.persist.{setup.suffix}.{name}.v1"
    persisted = f"bench.persisted.{setup.suffix}.{name}.v1"
    audit = f"bench.audit.{setup.suffix}.{name}.v1"
    settings = KafkaSettings(bootstrap=BOOTSTRAP, partitions=PARTITIONS)
    await ensure_topics(settings, [topic, persisted, audit])
    port = free_port()
    app_name = f"ingest_bench_{setup.suffix}_{name}"
    env = {
        **os.environ,
        # application_name tags this run's database sessions, to read their CPU time.
        "MNEMO_INGEST_DATABASE_URL": f"{INGEST}?application_name={app_name}",
        "MNEMO_RELAY_DATABASE_URL": f"{RELAY}?application_name={app_name}",
        "MNEMO_INGEST_TOPIC": topic,
        "MNEMO_INGEST_PERSISTED_TOPIC": persisted,
        "MNEMO_INGEST_AUDIT_TOPIC": audit,
        "MNEMO_INGEST_GROUP": f"bench.ingest.{setup.suffix}.{name}",
        "MNEMO_INGEST_PORT": str(port),
        "MNEMO_KAFKA_BOOTSTRAP": BOOTSTRAP,
        "MNEMO_KAFKA_PARTITIONS": str(PARTITIONS),
        "MNEMO_KAFKA_BATCH_MAX_RECORDS": str(batch),
    }
    if tracing_env is not None:
        for variable in TRACING_VARIABLES:
            env.pop(variable, None)
        env.update(tracing_env)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    log = Path(tempfile.gettempdir()) / f"ingest_bench_{setup.suffix}_{name}.log"
    profile = os.environ.get("INGEST_BENCH_PROFILE")
    command = [sys.executable, "-m", "mnemo_ingest"]
    if profile:
        command[1:1] = ["-m", "cProfile", "-o", f"{profile}.{name}"]
    process = subprocess.Popen(  # noqa: ASYNC220 (started once, not on a hot path)
        command,
        env=env,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
    )
    return IngestRun(process, port, log, topic, app_name)


def stop(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(20)
    except subprocess.TimeoutExpired:
        process.kill()


async def run_service(
    setup: Setup,
    *,
    rows: int,
    batch: int,
    name: str,
    tracing_env: Mapping[str, str] | None = None,
    pythonpath: str | None = None,
) -> dict[str, Any]:
    """One run of the ingest process, the rows produced straight to its persist topic."""
    ingest = await start_ingest(
        setup, name=name, batch=batch, tracing_env=tracing_env, pythonpath=pythonpath
    )
    process, log, topic, app_name = ingest.process, ingest.log, ingest.topic, ingest.app_name
    payload = records(setup, rows, name)
    table = store_table(setup.docs)
    before = await setup.per_tenant(f"SELECT count(*) FROM {table}")
    try:
        await ready(process, ingest.port, log, "ingest")
        cpu_at_ready = cpu_seconds(process.pid)
        system_at_ready = cpu_split(process.pid)[1]
        database_at_ready = await database_cpu(setup.owner, app_name)
        producer = AIOKafkaProducer(bootstrap_servers=BOOTSTRAP, linger_ms=5, acks="all")
        await producer.start()
        started = time.monotonic()
        try:
            for key, value in payload:
                await producer.send(topic, value, key=key)
            await producer.flush()
        finally:
            await producer.stop()
        produced = time.monotonic() - started
        deadline = started + 600
        committed = published = None
        while published is None:
            now = time.monotonic()
            if committed is None:
                landed = await setup.per_tenant(f"SELECT count(*) FROM {table}") - before
                if landed >= rows:
                    committed = now - started
            if committed is not None:
                waiting = await setup.per_tenant(
                    "SELECT count(*) FROM mnemo.outbox WHERE published_at IS NULL"
                )
                if waiting == 0:
                    published = now - started
            if now > deadline or process.poll() is not None:
                raise RuntimeError(f"{name}: rows missing after {now - started:.0f} s")
            await asyncio.sleep(0.05)
        assert committed is not None  # published is only set once committed is
        cpu = cpu_seconds(process.pid) - cpu_at_ready
        system = cpu_split(process.pid)[1] - system_at_ready
        batches = await consumer_batches(ingest.port, topic)
        database = await database_cpu(setup.owner, app_name)
        database_seconds = sum(database.values()) - sum(
            seconds for pid, seconds in database_at_ready.items() if pid in database
        )
    finally:
        stop(process)
    landed = await setup.per_tenant(f"SELECT count(*) FROM {table}") - before
    assert landed == rows, f"{name}: {landed} rows for {rows} events"
    return {
        "rows": rows,
        "max_records_per_batch": batch,
        "produce_seconds": produced,
        "committed_seconds": committed,
        "published_seconds": published,
        "committed_rows_per_second": rows / committed,
        "service_cpu_seconds": cpu,
        "service_system_cpu_seconds": system,
        "rows_per_service_cpu_second": rows / cpu,
        **batches,
        "database_cpu_seconds": database_seconds,
        "rows_per_database_cpu_second": rows / database_seconds,
        # From CPU time alone, on two idle cores: one service process (one core at most, an
        # asyncio process) beside Postgres, or two in one consumer group sharing the partitions.
        "projected_rows_per_second_on_2_idle_cores": min(
            rows / cpu, rows / database_seconds, 2 * rows / (cpu + database_seconds)
        ),
        "projected_rows_per_second_2_instances_on_2_idle_cores": 2
        * rows
        / (cpu + database_seconds),
        "published_rows_per_second": rows / published,
    }


async def until_started(http: httpx.AsyncClient, url: str) -> None:
    """Until `url` answers something else than the start gate's 503 (60 s at most)."""
    deadline = time.monotonic() + 60
    while (await http.post(url, json={"rows": []})).status_code == 503:
        if time.monotonic() > deadline:
            raise RuntimeError("the navigator never started")
        await asyncio.sleep(0.2)


def http_rows(setup: Setup, count: int) -> dict[uuid.UUID, list[dict[str, Any]]]:
    """`count` document rows, spread over the tenants (each tenant's rows in its own requests)."""
    subs = {tenant: [str(uuid.uuid4()) for _ in range(4)] for tenant in setup.tenants}
    rows: dict[uuid.UUID, list[dict[str, Any]]] = {tenant: [] for tenant in setup.tenants}
    for n in range(count):
        tenant = setup.tenants[n % TENANTS]
        rows[tenant].append(
            {
                "id": str(uuid.uuid4()),
                "tenant_id": subs[tenant][n % 4],
                "title": f"http memory {n}",
                "body": f"what the agent learned at step {n} of the http run",
            }
        )
    return rows


async def run_http(setup: Setup, *, rows: int, batch: int, concurrency: int) -> dict[str, Any]:
    """Rows written through the navigator's `POST /v1/stores/{store}/rows` to an ingest process,
    `batch` rows a request, `concurrency` requests at once."""
    ingest = await start_ingest(setup, name="http", batch=500)
    port = free_port()
    app_name = f"ingest_bench_{setup.suffix}_navigator"
    env = {
        **os.environ,
        "MNEMO_DEVELOPMENT": "1",  # tokens signed with the development key
        "MNEMO_NAVIGATOR_PORT": str(port),
        "MNEMO_NAVIGATOR_DATABASE_URL": f"{NAVIGATOR}?application_name={app_name}",
        "MNEMO_RELAY_DATABASE_URL": f"{RELAY}?application_name={app_name}",
        "MNEMO_NAVIGATOR_PERSIST_TOPIC": ingest.topic,
        "MNEMO_NAVIGATOR_AUDIT_TOPIC": f"bench.audit.{setup.suffix}.navigator.v1",
        "MNEMO_NAVIGATOR_CONSUME_REQUESTS": "false",
        "MNEMO_KAFKA_BOOTSTRAP": BOOTSTRAP,
        "MNEMO_KAFKA_PARTITIONS": str(PARTITIONS),
    }
    for variable in ("MNEMO_NAVIGATOR_TOKEN_PUBLIC_KEY", "MNEMO_NAVIGATOR_JWKS_URL"):
        env.pop(variable, None)
    env.setdefault("MNEMO_NAVIGATOR_TOKEN_SECRET", DEVELOPMENT_SECRET)
    log = Path(tempfile.gettempdir()) / f"ingest_bench_{setup.suffix}_navigator.log"
    command = [sys.executable, "-m", "mnemo_navigator"]
    profile = os.environ.get("INGEST_BENCH_PROFILE")
    if profile:
        command[1:1] = ["-m", "cProfile", "-o", f"{profile}.navigator"]
    navigator = subprocess.Popen(  # noqa: ASYNC220 (started once, not on a hot path)
        command,
        env=env,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
    )
    table = store_table(setup.docs)
    before = await setup.per_tenant(f"SELECT count(*) FROM {table}")
    by_tenant = http_rows(setup, rows)
    requests: list[tuple[uuid.UUID, list[dict[str, Any]]]] = [
        (tenant, tenant_rows[i : i + batch])
        for tenant, tenant_rows in by_tenant.items()
        for i in range(0, len(tenant_rows), batch)
    ]
    tokens = {
        tenant: mint_token(tenant=tenant, secret=DEVELOPMENT_SECRET, scopes=("write",))
        for tenant in setup.tenants
    }
    latencies: list[float] = []
    phases: dict[str, list[float]] = {}
    try:
        await ready(ingest.process, ingest.port, ingest.log, "ingest")
        await ready(navigator, port, log, "navigator")
        cpu_at_ready = cpu_seconds(navigator.pid)
        ingest_at_ready = cpu_seconds(ingest.process.pid)
        names = (app_name, ingest.app_name)
        database_at_ready = {n: await database_cpu(setup.owner, n) for n in names}
        url = f"http://127.0.0.1:{port}/v1/stores/{setup.docs}/rows"
        queue = list(reversed(requests))

        async def client(http: httpx.AsyncClient) -> None:
            while queue:
                tenant, body = queue.pop()
                # Event ids of the caller's own, so that a request answered 503 is resent safely.
                request = {"rows": body, "event_ids": [str(uuid.uuid4()) for _ in body]}
                sent = time.monotonic()
                while True:
                    answer = await http.post(
                        url, json=request, headers={"Authorization": f"Bearer {tokens[tenant]}"}
                    )
                    if answer.status_code != 503:
                        break
                    await asyncio.sleep(0.2)
                if answer.status_code != 202:
                    raise RuntimeError(f"write refused: {answer.status_code} {answer.text[:300]}")
                latencies.append(time.monotonic() - sent)
                for name, ms in server_timing(answer.headers.get("Server-Timing", "")).items():
                    phases.setdefault(name, []).append(ms)

        async with httpx.AsyncClient(timeout=60) as http:
            # Ready is not started: the API answers 503 until the lifespan has built its routes.
            await until_started(http, url)
            started = time.monotonic()
            await asyncio.gather(*(client(http) for _ in range(concurrency)))
            accepted = time.monotonic() - started
        deadline = started + 600
        while True:
            landed = await setup.per_tenant(f"SELECT count(*) FROM {table}") - before
            if landed >= rows:
                committed = time.monotonic() - started
                break
            if time.monotonic() > deadline or ingest.process.poll() is not None:
                raise RuntimeError(f"http: {landed} of {rows} rows after 600 s")
            await asyncio.sleep(0.05)
        cpu = cpu_seconds(navigator.pid) - cpu_at_ready
        ingest_cpu = cpu_seconds(ingest.process.pid) - ingest_at_ready
        batches = await consumer_batches(ingest.port, ingest.topic)
        database_seconds = 0.0
        for n in names:
            now = await database_cpu(setup.owner, n)
            database_seconds += sum(now.values()) - sum(
                seconds for pid, seconds in database_at_ready[n].items() if pid in now
            )
    finally:
        stop(navigator)
        stop(ingest.process)
    latencies.sort()
    return {
        "rows": rows,
        "rows_per_request": batch,
        "concurrency": concurrency,
        "accepted_seconds": accepted,
        "committed_seconds": committed,
        "committed_rows_per_second": rows / committed,
        "accepted_rows_per_second": rows / accepted,
        "request_p50_ms": 1000 * latencies[len(latencies) // 2],
        "request_p95_ms": 1000 * latencies[min(len(latencies) - 1, int(0.95 * len(latencies)))],
        # Where a request's time goes (the navigator's Server-Timing): median ms of each phase.
        "request_phases_p50_ms": {name: sorted(v)[len(v) // 2] for name, v in phases.items()},
        # After the last request was answered, how long ingest took to commit the rest.
        "ingest_drain_seconds": committed - accepted,
        **batches,
        "navigator_cpu_seconds": cpu,
        "rows_per_navigator_cpu_second": rows / cpu if cpu else None,
        "ingest_cpu_seconds": ingest_cpu,
        "database_cpu_seconds": database_seconds,
        # From CPU time alone, on two idle cores: the navigator, ingest and Postgres share them.
        "projected_rows_per_second_on_2_idle_cores": 2
        * rows
        / (cpu + ingest_cpu + database_seconds),
        "target_rows_per_second": 1000,
    }


def server_timing(header: str) -> dict[str, float]:
    """`check;dur=1.2, queue;dur=3.4` → {"check": 1.2, "queue": 3.4}."""
    phases = {}
    for part in header.split(","):
        name, _, duration = part.strip().partition(";dur=")
        if name and duration:
            phases[name] = float(duration)
    return phases


async def consumer_batches(port: int, topic: str) -> dict[str, float | None]:
    """The ingest process's batches on `topic` so far (its /metrics): how many, records per batch
    and handler milliseconds per batch (transactions and commit included)."""
    async with httpx.AsyncClient() as http:
        text = (await http.get(f"http://127.0.0.1:{port}/metrics")).text
    values: dict[str, float] = {}
    for line in text.splitlines():
        if f'topic="{topic}"' not in line or line.startswith("#"):
            continue
        name = line.split("{", 1)[0]
        if name in ("mnemo_handler_duration_seconds_count", "mnemo_handler_duration_seconds_sum"):
            values[name] = values.get(name, 0.0) + float(line.rsplit(" ", 1)[1])
        elif name == "mnemo_messages_total":
            values["records"] = values.get("records", 0.0) + float(line.rsplit(" ", 1)[1])
    count = values.get("mnemo_handler_duration_seconds_count", 0.0)
    return {
        "ingest_batches": count,
        "ingest_records_per_batch": values.get("records", 0.0) / count if count else None,
        "ingest_batch_ms": 1000 * values.get("mnemo_handler_duration_seconds_sum", 0.0) / count
        if count
        else None,
    }


async def run_sampling(
    setup: Setup,
    rows: int,
    labels: set[str] | None = None,
    baseline_ref: str | None = None,
    round_: int = 0,
) -> list[dict[str, Any]]:
    """The batched service under each of `SAMPLING` (those of `labels`): its rows per CPU second;
    first, with `baseline_ref`, the service of that commit under its default sampler. `round_`
    tells the topics of repeated rounds apart."""
    runs = []
    tag = f"-r{round_}" if round_ else ""
    if baseline_ref:
        sources = Path(tempfile.mkdtemp(prefix="ingest_bench_baseline_"))
        try:
            run = await run_service(
                setup,
                rows=rows,
                batch=500,
                name=f"sampling-baseline{tag}",
                tracing_env={},
                pythonpath=export_sources(baseline_ref, sources),
            )
        finally:
            shutil.rmtree(sources, ignore_errors=True)
        runs.append({"label": f"baseline {baseline_ref}", "tracing_env": {}, **run})
    for label, ratio, endpoint in SAMPLING:
        if labels is not None and label not in labels:
            continue
        env: dict[str, str] = {}
        if ratio is not None:
            env["OTEL_TRACES_SAMPLER"] = "parentbased_traceidratio"
            env["OTEL_TRACES_SAMPLER_ARG"] = ratio
        if endpoint:
            env["MNEMO_OTLP_ENDPOINT"] = f"http://127.0.0.1:{free_port()}"
        name = "sampling-" + label.replace(" ", "-").replace(",", "").replace(".", "p") + tag
        run = await run_service(setup, rows=rows, batch=500, name=name, tracing_env=env)
        runs.append({"label": label, "tracing_env": env, **run})
    default = (
        runs[0] if baseline_ref else next((r for r in runs if r["label"] == "default"), runs[0])
    )
    for run in runs:
        run["rows_per_cpu_second_vs_default"] = (
            run["rows_per_service_cpu_second"] / default["rows_per_service_cpu_second"]
        )
    return runs


def print_sampling(runs: list[dict[str, Any]]) -> None:
    print(
        f"{'tracing':<28}{'rows':>8}{'service CPU s':>15}{'rows/CPU s':>12}"
        f"{'vs ' + runs[0]['label'].split()[0]:>14}"
        f"{'committed rows/s':>18}{'system CPU':>12}{'rows/batch':>12}{'ms/batch':>10}"
    )
    for run in runs:
        print(
            f"{run['label']:<28}{run['rows']:>8}{run['service_cpu_seconds']:>15.2f}"
            f"{run['rows_per_service_cpu_second']:>12.0f}"
            f"{run['rows_per_cpu_second_vs_default']:>13.2f}x"
            f"{run['committed_rows_per_second']:>18.0f}"
            f"{run['service_system_cpu_seconds'] / run['service_cpu_seconds']:>12.0%}"
            f"{run['ingest_records_per_batch'] or 0:>12.0f}{run['ingest_batch_ms'] or 0:>10.1f}"
        )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--naive-rows", type=int, default=3_000)
    parser.add_argument("--only", choices=("batched", "naive", "sampling", "http"))
    parser.add_argument("--http-rows", type=int, default=5_000)
    parser.add_argument("--http-batch", type=int, default=100)
    parser.add_argument("--http-concurrency", type=int, default=4)
    parser.add_argument("--sampling", action="store_true", help="add the tracing cost runs")
    parser.add_argument("--sampling-rows", type=int, default=20_000)
    parser.add_argument(
        "--sampling-rounds",
        type=int,
        default=1,
        help="repeat the sampling runs (each round compared with its own first run)",
    )
    parser.add_argument(
        "--sampling-runs",
        help="comma-separated labels of SAMPLING to run (default: all), e.g. 'default,ratio 0.01'",
    )
    parser.add_argument(
        "--baseline-ref",
        nargs="?",
        const=BASELINE_REF,
        help=f"with the sampling runs, first run the ingest of this commit (default {BASELINE_REF})"
        " and compare each run with it",
    )
    args = parser.parse_args()
    owner = await asyncpg.connect(OWNER)
    setup = Setup(owner)
    runs: dict[str, dict[str, Any]] = {}
    sampling: list[dict[str, Any]] = []
    http: dict[str, Any] | None = None
    try:
        await setup.create()
        if args.only in (None, "batched"):
            runs["batched"] = await run_service(setup, rows=args.rows, batch=500, name="batched")
        if args.only in (None, "naive"):
            runs["naive"] = await run_service(setup, rows=args.naive_rows, batch=1, name="naive")
        if args.only == "http":
            http = await run_http(
                setup,
                rows=args.http_rows,
                batch=args.http_batch,
                concurrency=args.http_concurrency,
            )
        if args.sampling or args.only == "sampling":
            labels = set(args.sampling_runs.split(",")) if args.sampling_runs else None
            # Rounds one after another: under a shared machine's changing load, each run is
            # compared with the first run of its own round (the older code, or the default).
            for round_ in range(args.sampling_rounds):
                sampling += await run_sampling(
                    setup, args.sampling_rows, labels, args.baseline_ref, round_
                )
    finally:
        await setup.remove()
        await owner.close()
    machine = {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "load_average_1m": os.getloadavg()[0],
    }
    if http is not None:
        print(
            f"HTTP writes: {http['rows']} rows in requests of {http['rows_per_request']}, "
            f"{http['concurrency']} at once: accepted (in Kafka) in {http['accepted_seconds']:.2f} s "
            f"({http['accepted_rows_per_second']:.0f} rows/s), committed by ingest in "
            f"{http['committed_seconds']:.2f} s: {http['committed_rows_per_second']:.0f} rows/s "
            f"(target 1,000: {http['committed_rows_per_second'] / 1000:.2f}x); request p50 "
            f"{http['request_p50_ms']:.0f} ms, p95 {http['request_p95_ms']:.0f} ms; navigator CPU "
            f"{http['navigator_cpu_seconds']:.1f} s, ingest {http['ingest_cpu_seconds']:.1f} s, "
            f"Postgres {http['database_cpu_seconds']:.1f} s: projected on 2 idle cores "
            f"{http['projected_rows_per_second_on_2_idle_cores']:.0f} rows/s "
            f"(load average {machine['load_average_1m']:.1f})"
        )
        phases = ", ".join(f"{k} {v:.0f}" for k, v in http["request_phases_p50_ms"].items())
        print(
            f"request phases, p50 ms: {phases}; ingest: {http['ingest_batches']:.0f} batches of "
            f"{http['ingest_records_per_batch'] or 0:.0f} records, {http['ingest_batch_ms'] or 0:.0f}"
            f" ms each; it committed the last rows {http['ingest_drain_seconds']:.2f} s after "
            "the last answer"
        )
        HTTP_RESULTS.parent.mkdir(exist_ok=True)
        HTTP_RESULTS.write_text(json.dumps({"machine": machine, **http}, indent=2) + "\n")
        print(f"wrote {HTTP_RESULTS.name}")
    results: dict[str, Any] = {
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load_average_1m": os.getloadavg()[0],
        },
        "tenants": TENANTS,
        "partitions": PARTITIONS,
        **runs,
        **({"sampling": sampling, "target_sampling_0_01_vs_default": 2} if sampling else {}),
        "target_rows_per_second": 5000,
        "target_speedup": 10,
    }
    if "batched" in runs and "naive" in runs:
        results["speedup_committed"] = (
            runs["batched"]["committed_rows_per_second"]
            / runs["naive"]["committed_rows_per_second"]
        )
        results["speedup_published"] = (
            runs["batched"]["published_rows_per_second"]
            / runs["naive"]["published_rows_per_second"]
        )
    for name, run in runs.items():
        print(
            f"{name}: produced in {run['produce_seconds']:.2f} s; service CPU "
            f"{run['service_cpu_seconds']:.1f} s "
            f"({run['rows_per_service_cpu_second']:.0f} rows per CPU second), Postgres CPU "
            f"{run['database_cpu_seconds']:.1f} s ({run['rows_per_database_cpu_second']:.0f} "
            f"rows per CPU second); projected on 2 idle cores: "
            f"{run['projected_rows_per_second_on_2_idle_cores']:.0f} rows/s with one service "
            f"process, {run['projected_rows_per_second_2_instances_on_2_idle_cores']:.0f} with two"
        )
    if runs:
        print(
            f"{'consumer':<30}{'rows':>8}{'committed s':>13}{'rows/s':>9}"
            f"{'published s':>13}{'rows/s':>9}"
        )
    for name, label in (
        ("batched", "service (batches, pipelined)"),
        ("naive", "naive (1 commit/message)"),
    ):
        if name in runs:
            r = runs[name]
            print(
                f"{label:<30}{r['rows']:>8}{r['committed_seconds']:>13.2f}"
                f"{r['committed_rows_per_second']:>9.0f}{r['published_seconds']:>13.2f}"
                f"{r['published_rows_per_second']:>9.0f}"
            )
    if "speedup_committed" in results:
        print(
            f"speedup: {results['speedup_committed']:.1f}x committed, "
            f"{results['speedup_published']:.1f}x published "
            f"(load average {results['machine']['load_average_1m']:.1f} on {os.cpu_count()} cpus)"
        )
    if sampling:
        print_sampling(sampling)
        if args.sampling_rounds > 1:
            by_label: dict[str, list[float]] = {}
            for run in sampling:
                by_label.setdefault(run["label"], []).append(run["rows_per_cpu_second_vs_default"])
            for label, ratios in by_label.items():
                ratios.sort()
                print(
                    f"{label}: median {ratios[len(ratios) // 2]:.2f}x over "
                    f"{len(ratios)} rounds ({', '.join(f'{r:.2f}' for r in ratios)})"
                )
        if args.only == "sampling" and not args.sampling_runs:
            SAMPLING_RESULTS.parent.mkdir(exist_ok=True)
            SAMPLING_RESULTS.write_text(json.dumps(results, indent=2) + "\n")
            print(f"wrote {SAMPLING_RESULTS.name}")
    if args.only is None:
        RESULTS.parent.mkdir(exist_ok=True)
        RESULTS.write_text(json.dumps(results, indent=2) + "\n")
        print(
            f"wrote {RESULTS.relative_to(Path.cwd()) if RESULTS.is_relative_to(Path.cwd()) else RESULTS}"
        )


if __name__ == "__main__":
    asyncio.run(main())
