"""The four services, traced and measured, against `make ops`: after a small demo stream, Jaeger's
query API holds one trace from a produced persist command through ingest, the classifier and the
edge's ingest, and one from an HTTP navigate through the audit append; every expression of every
dashboard panel and alert rule returns data from the live Prometheus.

The services run as processes of this module, on ports and topics of their own (the `make up`
services stay untouched), export to Jaeger over OTLP and register with the local Prometheus
through its file-based discovery (`.local/prometheus/targets/`, see deploy/local/ops.sh).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.parse
import urllib.request
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
import yaml
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from mnemo_auth import DEVELOPMENT_SECRET, mint_token
from mnemo_axon.compiler import load_deployment
from mnemo_events import AUDIT, PersistRow, new_envelope
from mnemo_events.broker import create_broker, publish
from mnemo_events.provisioning import ensure_topics
from mnemo_events.settings import KafkaSettings
from mnemo_store.applier import apply_deployment
from mnemo_store.identifiers import store_table
from mnemo_telemetry import tracing
from mnemo_telemetry.trace_view import SpanLine, spans_of

from tests.declarations import memory_corpus
from tests.infrastructure import free_port
from tests.waiting import eventually, eventually_sync

pytestmark = pytest.mark.ops

ROOT = Path(__file__).resolve().parents[2]
JAEGER = os.environ.get("MNEMO_JAEGER_URL", "http://127.0.0.1:16686")
PROMETHEUS = f"http://127.0.0.1:{os.environ.get('MNEMO_PROMETHEUS_PORT', '29090')}"
OTLP = os.environ.get("MNEMO_OTLP_ENDPOINT", "http://127.0.0.1:4318")
TARGETS = ROOT / ".local" / "prometheus" / "targets"


MEMORIES = (
    ("Hilda Hilst", "A Brazilian poet from Jaú."),
    ("Casa do Sol", "The house near Campinas where Hilda Hilst wrote for forty years."),
    ("Blue Moon Rising", "A song set to words by Hilda Hilst in 1970."),
)


def _env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        pytest.fail(f"{name} is not set: run the ops tests through `make ops-test`")
    return value


def get_json(url: str) -> Any:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return json.load(response)
    except OSError as error:
        pytest.fail(f"{url} does not answer ({error}): start Jaeger and Prometheus with `make ops`")


@dataclass
class Service:
    name: str
    module: str
    port: int
    process: subprocess.Popen[bytes]
    log: Path


@dataclass
class Pipeline:
    suffix: str
    tenant: uuid.UUID
    corpus: str
    persist_topic: str
    bootstrap: str
    services: dict[str, Service]

    @property
    def navigator(self) -> str:
        return f"http://127.0.0.1:{self.services['navigator'].port}"

    def token(self) -> str:
        return mint_token(tenant=self.tenant, secret=DEVELOPMENT_SECRET)


async def _skip_existing_audit_events(bootstrap: str, group: str) -> None:
    """Start the module's audit consumer at the end of the shared audit topic (the navigator
    always writes there), not at years of other tests' events."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        partitions = [TopicPartition(AUDIT, p) for p in await producer.partitions_for(AUDIT)]
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False
    )
    await consumer.start()
    try:
        ends = await consumer.end_offsets(partitions)
        consumer.assign(partitions)
        await consumer.commit(dict(ends.items()))
    finally:
        await consumer.stop()


def _start(name: str, module: str, env: dict[str, str], port: int, logs: Path) -> Service:
    log = logs / f"{name}.log"
    process = subprocess.Popen(
        [sys.executable, "-m", module],
        env=env,
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
        cwd=ROOT,
    )
    return Service(name, module, port, process, log)


async def _ready(service: Service, wait: float = 90) -> None:
    async with httpx.AsyncClient() as client:

        async def answers_ready() -> bool:
            assert service.process.poll() is None, (
                f"{service.name} exited: {service.log.read_text()[-3000:]}"
            )
            try:
                response = await client.get(f"http://127.0.0.1:{service.port}/readyz")
            except httpx.HTTPError:
                return False
            return response.status_code == 200

        await eventually(
            answers_ready,
            within=wait,
            every=0.3,
            what=lambda: f"{service.name} never ready: {service.log.read_text()[-3000:]}",
        )


def _stop(service: Service) -> None:
    if service.process.poll() is None:
        service.process.send_signal(signal.SIGTERM)
        try:
            service.process.wait(20)
        except subprocess.TimeoutExpired:
            service.process.kill()
            service.process.wait(10)


@pytest.fixture(scope="module")
async def pipeline(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Pipeline]:
    get_json(f"{JAEGER}/api/services")
    get_json(f"{PROMETHEUS}/api/v1/status/buildinfo")
    owner_dsn = _env("MNEMO_OWNER_DATABASE_URL")
    bootstrap = _env("MNEMO_KAFKA_BOOTSTRAP")
    suffix = uuid.uuid4().hex[:10]
    owner = await asyncpg.connect(owner_dsn)
    deployment = load_deployment(memory_corpus("", "Memory", suffix), f"ops_{suffix}.axon")
    await apply_deployment(owner, deployment, gateway_base_url="http://127.0.0.1:8080")
    corpus = f"Memory_{suffix}"
    await owner.execute(
        "UPDATE mnemo.corpora SET status = 'published' WHERE corpus_id = $1", corpus
    )
    tenant = await owner.fetchval(
        "INSERT INTO mnemo.tenants (name) VALUES ($1) RETURNING tenant_id", f"test-ops-{suffix}"
    )
    persist_topic, persisted_topic = (
        f"test.ops.persist.{suffix}.v1",
        f"test.ops.persisted.{suffix}.v1",
    )
    await ensure_topics(KafkaSettings(bootstrap=bootstrap), [persist_topic, persisted_topic, AUDIT])
    audit_group = f"test.ops.audit.{suffix}"
    await _skip_existing_audit_events(bootstrap, audit_group)

    def dsn(role: str) -> str:
        return owner_dsn.replace("mnemo_owner:mnemo_owner", f"{role}:{role}")

    ports = {name: free_port() for name in ("ingest", "edge-classifier", "navigator", "audit")}
    common = {
        **os.environ,
        "MNEMO_OTLP_ENDPOINT": OTLP,
        "OTEL_BSP_SCHEDULE_DELAY": "500",  # export every half second: the test waits less
        "MNEMO_KAFKA_BOOTSTRAP": bootstrap,
        "MNEMO_KAFKA_MAX_ATTEMPTS": "2",
        "MNEMO_KAFKA_RETRY_BACKOFF_SECONDS": "0.05",
        "MNEMO_KAFKA_BATCH_TIMEOUT_MS": "50",
    }
    environments = {
        "ingest": {
            "MNEMO_INGEST_PORT": str(ports["ingest"]),
            "MNEMO_INGEST_TOPIC": persist_topic,
            "MNEMO_INGEST_PERSISTED_TOPIC": persisted_topic,
            "MNEMO_INGEST_GROUP": f"test.ops.ingest.{suffix}",
            "MNEMO_INGEST_DATABASE_URL": os.environ.get(
                "MNEMO_INGEST_DATABASE_URL", dsn("mnemo_ingest")
            ),
        },
        "edge-classifier": {
            "MNEMO_CLASSIFIER_PORT": str(ports["edge-classifier"]),
            "MNEMO_EDGE_CLASSIFIER_PORT": str(ports["edge-classifier"]),
            "MNEMO_CLASSIFIER_TOPIC": persisted_topic,
            "MNEMO_CLASSIFIER_PERSIST_TOPIC": persist_topic,
            "MNEMO_CLASSIFIER_GROUP": f"test.ops.classifier.{suffix}",
            "MNEMO_CLASSIFIER_DATABASE_URL": os.environ.get(
                "MNEMO_CLASSIFIER_DATABASE_URL", dsn("mnemo_classifier")
            ),
        },
        "navigator": {
            "MNEMO_NAVIGATOR_PORT": str(ports["navigator"]),
            "MNEMO_NAVIGATOR_CONSUME_REQUESTS": "false",
            "MNEMO_NAVIGATOR_DATABASE_URL": os.environ.get(
                "MNEMO_NAVIGATOR_DATABASE_URL", dsn("mnemo_navigator")
            ),
        },
        "audit": {
            "MNEMO_AUDIT_PORT": str(ports["audit"]),
            "MNEMO_AUDIT_GROUP": audit_group,
            "MNEMO_AUDIT_DATABASE_URL": os.environ.get(
                "MNEMO_AUDIT_DATABASE_URL", dsn("mnemo_audit")
            ),
        },
    }
    modules = {
        "ingest": "mnemo_ingest",
        "edge-classifier": "mnemo_edge_classifier",
        "navigator": "mnemo_navigator",
        "audit": "mnemo_audit",
    }
    logs = tmp_path_factory.mktemp("ops-services")
    services: dict[str, Service] = {}
    TARGETS.mkdir(parents=True, exist_ok=True)
    targets = TARGETS / f"ops-test-{suffix}.json"
    try:
        for name, module in modules.items():
            env = {**common, **environments[name]}
            services[name] = _start(name, module, env, ports[name], logs)
        for service in services.values():
            await _ready(service)
        targets.write_text(
            json.dumps(
                [
                    {"targets": [f"127.0.0.1:{s.port}"], "labels": {"mnemo_service": s.name}}
                    for s in services.values()
                ]
            )
        )
        yield Pipeline(suffix, tenant, corpus, persist_topic, bootstrap, services)
    finally:
        targets.unlink(missing_ok=True)
        for service in services.values():
            _stop(service)
        for table in ("outbox", "inbox", "pending_edges", "graph_revisions"):
            async with owner.transaction():
                await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
                await owner.execute(f"DELETE FROM mnemo.{table}")
        for store in deployment.stores:
            await owner.execute(f"DROP TABLE IF EXISTS {store_table(store.name)}")
        await owner.execute("DELETE FROM mnemo.corpora WHERE corpus_id = $1", corpus)
        await owner.close()


@pytest.fixture(scope="module")
def producer_tracing() -> Iterator[tracing.Tracing]:
    configured = tracing.configure_tracing("ops-test-producer", OTLP)
    yield configured
    configured.shutdown()


async def _landed(pipeline: Pipeline, document: str, wait: float = 60) -> None:
    """Wait until ingest has written `document` to the pipeline's documents store."""
    table = store_table(f"Docs_{pipeline.suffix}")
    connection = await asyncpg.connect(_env("MNEMO_OWNER_DATABASE_URL"))
    try:

        async def written() -> bool:
            async with connection.transaction():
                await connection.execute(
                    "SELECT set_config('mnemo.tenant', $1, true)", str(pipeline.tenant)
                )
                found = await connection.fetchval(
                    f"SELECT count(*) FROM {table} WHERE id::text = $1", document
                )
            return bool(found)

        await eventually(
            written, within=wait, every=0.1, what=f"ingest never wrote document {document}"
        )
    finally:
        await connection.close()


async def _stream(pipeline: Pipeline) -> str:
    """The demo stream: three memories as persist commands; returns the trace id of the last
    (the one that mentions an earlier memory, so the classifier proposes an edge for it)."""
    client = uuid.uuid4()
    broker = create_broker(KafkaSettings(bootstrap=pipeline.bootstrap), client_id="ops-test")
    await broker.start()
    trace_id = ""
    try:
        for title, body in MEMORIES:
            document = str(uuid.uuid4())
            with tracing.mnemo_span("demo.persist", tenant=str(pipeline.tenant)) as span:
                await publish(
                    broker,
                    pipeline.persist_topic,
                    new_envelope(
                        PersistRow(
                            store=f"Docs_{pipeline.suffix}",
                            values={
                                "id": document,
                                "tenant_id": str(client),
                                "title": title,
                                "body": body,
                            },
                        ),
                        tenant=pipeline.tenant,
                        producer="ops-test",
                        event_type="mnemo.persist.v1",
                    ),
                )
                trace_id = span.trace_id or ""
            await _landed(pipeline, document)  # each memory lands before the next mentions it
        # One that can never be written: a dead letter for the dashboards.
        await broker.publish(
            b"{not json", topic=pipeline.persist_topic, key=str(pipeline.tenant).encode()
        )
    finally:
        await broker.stop()
    return trace_id


def _trace(trace_id: str, complete: Any, wait: float = 90) -> list[SpanLine]:
    """The spans of `trace_id` once `complete(spans)` holds (Jaeger gets them in batches)."""
    spans: list[SpanLine] = []

    def fetched_complete() -> bool:
        nonlocal spans
        try:
            with urllib.request.urlopen(f"{JAEGER}/api/traces/{trace_id}", timeout=5) as answer:
                data = json.load(answer)["data"]
            spans = spans_of(data[0]) if data else []
        except urllib.error.HTTPError:
            spans = []
        return bool(complete(spans))

    eventually_sync(
        fetched_complete,
        within=wait,
        every=1,
        what=lambda: f"trace {trace_id} still incomplete in Jaeger: {_names(spans)}",
    )
    return spans


def _names(spans: list[SpanLine]) -> list[tuple[str, str]]:
    return [(s.service, s.name) for s in spans]


async def test_one_trace_runs_from_a_produced_persist_command_through_the_edges_ingest(
    pipeline: Pipeline, producer_tracing: tracing.Tracing
) -> None:
    trace_id = await _stream(pipeline)
    assert producer_tracing.force_flush()
    edges = f"Edges_{pipeline.suffix}"

    def complete(spans: list[SpanLine]) -> bool:
        stores = {dict(s.attributes).get("mnemo.store") for s in spans if s.name == "mnemo.persist"}
        return edges in stores and any(s.name == "demo.persist" for s in spans)

    spans = _trace(trace_id, complete)
    names = _names(spans)
    assert ("mnemo-ops-test-producer", f"send {pipeline.persist_topic}") in names, names
    assert ("mnemo-ingest", f"process {pipeline.persist_topic}") in names, names
    assert ("mnemo-ingest", "mnemo.persist") in names, names
    assert ("mnemo-edge-classifier", "mnemo.classify") in names, names
    persisted = [dict(s.attributes).get("mnemo.store") for s in spans if s.name == "mnemo.persist"]
    assert persisted[0] == f"Docs_{pipeline.suffix}"
    assert edges in persisted, names
    assert any(s.service == "mnemo-ingest" and s.name.startswith("INSERT") for s in spans), names
    # One trace, one tree: every span but the root hangs under another span of the trace. (An
    # audit event may be relayed by another ingest process on this machine, one exporting
    # nowhere: its `process mnemo.audit.v1` then hangs under a span Jaeger never got.)
    ids = {s.span_id for s in spans}
    roots = [s.name for s in spans if s.parent_id not in ids]
    assert roots[0] == "demo.persist"
    assert set(roots[1:]) <= {f"process {AUDIT}"}, roots


async def test_one_trace_runs_from_an_http_navigate_through_the_audit_append(
    pipeline: Pipeline, producer_tracing: tracing.Tracing
) -> None:
    headers = {"Authorization": f"Bearer {pipeline.token()}"}
    with tracing.mnemo_span("demo.navigate") as caller:
        trace_id = caller.trace_id
        headers["traceparent"] = caller.traceparent or ""
        async with httpx.AsyncClient(timeout=30) as client:
            answer = await client.post(
                f"{pipeline.navigator}/v1/corpora/{pipeline.corpus}/navigate",
                json={"query": "Hilda Hilst poet", "budget": 3},
                headers=headers,
            )
            retrieved = await client.post(
                f"{pipeline.navigator}/v1/corpora/{pipeline.corpus}/retrieve",
                json={"query": "poet", "k": 2},
                headers={"Authorization": headers["Authorization"]},
            )
    assert answer.status_code == 200, answer.text
    assert retrieved.status_code == 200, retrieved.text
    assert producer_tracing.force_flush()
    assert trace_id is not None

    spans = _trace(
        trace_id,
        lambda spans: {"mnemo.audit.append", "demo.navigate"} <= {s.name for s in spans},
    )
    names = _names(spans)
    route = "/v1/corpora/{corpus}/navigate"
    assert any(s == "mnemo-navigator" and route in n for s, n in names), names
    navigate = next(s for s in spans if s.name == "mnemo.navigate")
    attributes = dict(navigate.attributes)
    assert attributes["mnemo.corpus"] == pipeline.corpus
    for key in ("mnemo.graph.documents", "mnemo.graph.cache", "mnemo.epr.iterations"):
        assert key in attributes, attributes
    assert "mnemo.hits.returned" in attributes
    assert ("mnemo-audit", f"process {AUDIT}") in names, names
    assert ("mnemo-audit", "mnemo.audit.append") in names, names


COMPARISON = re.compile(r"(?<![=!<>~])(>=|<=|==|!=|>|<)\s*(?=[\d.])")


def _with_bool(expression: str) -> str:
    """An alert's expression with its thresholds as `bool` comparisons: every watched series is
    returned (0 or 1) instead of only the firing ones."""
    return COMPARISON.sub(lambda m: f"{m.group(1)} bool ", expression)


def _expressions() -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for path in sorted((ROOT / "deploy" / "grafana" / "dashboards").glob("*.json")):
        for panel in json.loads(path.read_text())["panels"]:
            for target in panel.get("targets", []):
                expression = (
                    target["expr"]
                    .replace("$__rate_interval", "1m")
                    .replace("$service", ".*")
                    .replace("$corpus", ".*")
                )
                found.append((f"{path.name}: {panel['title']} #{len(found)}", expression))
    for path in sorted((ROOT / "deploy" / "prometheus" / "rules").glob("*.yml")):
        for group in yaml.safe_load(path.read_text())["groups"]:
            for rule in group["rules"]:
                found.append((f"alert {rule['alert']}", _with_bool(rule["expr"])))
    return found


async def test_every_dashboard_and_alert_expression_returns_data_from_the_live_prometheus(
    pipeline: Pipeline,
) -> None:
    """Runs after the two traces: the stream, the dead letter, navigations and retrievals."""
    async with httpx.AsyncClient(timeout=30) as client:  # a second look-up: a cache hit
        answer = await client.post(
            f"{pipeline.navigator}/v1/corpora/{pipeline.corpus}/navigate",
            json={"query": "Casa do Sol", "budget": 2},
            headers={"Authorization": f"Bearer {pipeline.token()}"},
        )
        assert answer.status_code == 200, answer.text
    pending = dict(_expressions())
    empty: dict[str, str] = {}

    async def every_one_has_data() -> bool:
        for where, expression in list(pending.items()):
            query = urllib.parse.urlencode({"query": expression})
            answer = get_json(f"{PROMETHEUS}/api/v1/query?{query}")
            assert answer["status"] == "success", (where, expression, answer)
            if answer["data"]["result"]:
                del pending[where]
            else:
                empty[where] = expression
        return not pending

    await eventually(every_one_has_data, within=120, every=3, what=lambda: f"no data for {pending}")
