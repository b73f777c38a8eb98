"""Two edge-classifier processes in one consumer group split the partitions (events keyed by
tenant, so a tenant's index lives in one process) and publish exactly the edges the use case makes
in process, each edge's event id among them; one of them stopped mid-stream hands its partitions
to the other, and nothing is lost nor an edge published that is not one of those."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import uuid
from pathlib import Path

import asyncpg
import httpx
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.partitioner import DefaultPartitioner
from mnemo_axon.compiler import load_deployment
from mnemo_edge_classifier.adapters import StoreCandidates
from mnemo_edge_classifier.use_cases import ClassifyDocument, LexicalClassifier
from mnemo_events import DocumentPersisted, new_envelope
from mnemo_events.provisioning import ensure_topics
from mnemo_events.settings import KafkaSettings
from mnemo_mdn.edge_classification import DEFAULT_OPTIONS
from mnemo_store import Store, StoreCorpus
from mnemo_store.applier import apply_deployment
from mnemo_store.identifiers import store_table

from tests.declarations import memory_corpus
from tests.infrastructure import free_port
from tests.integration.edge_classifier.test_classifier_service import _start
from tests.waiting import eventually

ROOT = Path(__file__).resolve().parents[3]
TENANTS = 4
PER_TENANT = 12


class _Directory:
    def __init__(self, corpus: StoreCorpus) -> None:
        self._corpus = corpus

    async def corpus(self, corpus_id: str) -> StoreCorpus | None:
        return self._corpus if corpus_id == self._corpus.name else None

    async def status(self, corpus_id: str) -> str | None:
        return "published"

    def forget(self, corpus_id: str) -> None:
        pass


def _passages() -> list[tuple[str, str]]:
    corpus = json.loads((ROOT / "bench" / "data" / "musique" / "corpus.json").read_text())
    return [(p["title"], p["text"]) for p in corpus[: TENANTS * PER_TENANT]]


async def test_two_processes_split_the_partitions_and_a_stopped_one_loses_nothing(
    owner_dsn: str, app_dsn: str, kafka_bootstrap: str, tmp_path: Path
) -> None:
    suffix = uuid.uuid4().hex[:10]
    owner = await asyncpg.connect(owner_dsn)
    deployment = load_deployment(memory_corpus("", "Memory", suffix), f"group_{suffix}.axon")
    await apply_deployment(owner, deployment, gateway_base_url="http://127.0.0.1:8080")
    corpus = StoreCorpus.from_deployment(deployment, f"Memory_{suffix}")
    await owner.execute(
        "UPDATE mnemo.corpora SET status = 'published' WHERE corpus_id = $1", corpus.name
    )
    # One tenant per partition (events are keyed by tenant): each process has tenants of its own,
    # before the stop and after it.
    tenants: list[uuid.UUID] = []
    placed: set[int] = set()
    for attempt in range(200):
        if len(placed) == TENANTS:
            break
        tenant = await owner.fetchval(
            "INSERT INTO mnemo.tenants (name) VALUES ($1) RETURNING tenant_id",
            f"test-group-{suffix}-{attempt}",
        )
        partition = DefaultPartitioner()(str(tenant).encode(), list(range(TENANTS)), None)
        if partition in placed:
            await owner.execute("DELETE FROM mnemo.tenants WHERE tenant_id = $1", tenant)
        else:
            placed.add(partition)
            tenants.append(tenant)
    assert len(placed) == TENANTS
    topic, persist_topic = f"test.persisted.{suffix}.v1", f"test.persist.{suffix}.v1"
    await ensure_topics(
        KafkaSettings(bootstrap=kafka_bootstrap, partitions=TENANTS), [topic, persist_topic]
    )
    classifier_dsn = os.environ.get("MNEMO_CLASSIFIER_DATABASE_URL") or owner_dsn.replace(
        "mnemo_owner:mnemo_owner", "mnemo_classifier:mnemo_classifier"
    )
    processes: list[subprocess.Popen[bytes]] = []
    logs = [tmp_path / f"classifier-{k}.log" for k in range(2)]
    try:
        # Every document stored first: each classification sees the same corpus, whoever runs it.
        events = []
        passages = _passages()
        async with await Store.connect(app_dsn, max_size=2) as app:
            for k, tenant in enumerate(tenants):
                end_client = uuid.uuid4()
                rows = [
                    {"id": uuid.uuid4(), "tenant_id": end_client, "title": t, "body": b}
                    for t, b in passages[k * PER_TENANT : (k + 1) * PER_TENANT]
                ]
                async with app.tenant(tenant) as tx:
                    await tx.insert_rows(corpus.documents, rows)
                for row in rows:
                    values = {**row, "id": str(row["id"]), "tenant_id": str(end_client)}
                    events.append(
                        new_envelope(
                            DocumentPersisted(
                                corpus=corpus.name,
                                store=corpus.documents.name,
                                id=values["id"],
                                values=values,
                            ),
                            tenant=tenant,
                            producer="test-ingest",
                            event_type="mnemo.document.persisted.v1",
                        )
                    )
        async with await Store.connect(classifier_dsn, max_size=2) as reader:
            use_case = ClassifyDocument(
                _Directory(corpus),
                StoreCandidates(reader, 1000, DEFAULT_OPTIONS),
                LexicalClassifier(),
            )
            expected: set[str] = set()
            for envelope in events:
                commands, _ = await use_case.edges_for(envelope)
                expected.update(str(c.event_id) for c in commands)
        assert len(expected) > len(events)  # the comparison is not between two empty sets

        ports = [free_port(), free_port()]
        for k in range(2):
            env = {
                **os.environ,
                "MNEMO_CLASSIFIER_TOPIC": topic,
                "MNEMO_CLASSIFIER_PERSIST_TOPIC": persist_topic,
                "MNEMO_CLASSIFIER_GROUP": f"test.group.{suffix}",
                "MNEMO_CLASSIFIER_PORT": str(ports[k]),
                "MNEMO_CLASSIFIER_DATABASE_URL": classifier_dsn,
                "MNEMO_KAFKA_BOOTSTRAP": kafka_bootstrap,
                "MNEMO_KAFKA_PARTITIONS": str(TENANTS),
            }
            processes.append(_start(env, logs[k]))

        async with httpx.AsyncClient() as client:

            async def both_ready() -> bool:
                for process, log in zip(processes, logs, strict=True):
                    assert process.poll() is None, log.read_text()[-3000:]
                try:
                    answers = [
                        await client.get(f"http://127.0.0.1:{port}/readyz?consumers=true")
                        for port in ports
                    ]
                except httpx.HTTPError:
                    return False
                return all(a.status_code == 200 for a in answers)  # each holds partitions

            await eventually(
                both_ready,
                within=90,
                every=0.3,
                what=lambda: "both never ready: " + " | ".join(p.read_text()[-1500:] for p in logs),
            )

        producer = AIOKafkaProducer(bootstrap_servers=kafka_bootstrap, acks="all")
        await producer.start()
        reader_consumer = AIOKafkaConsumer(
            persist_topic,
            bootstrap_servers=kafka_bootstrap,
            auto_offset_reset="earliest",
            group_id=None,
        )
        await reader_consumer.start()
        seen: list[str] = []

        async def published(at_least: int) -> bool:
            for batch in (await reader_consumer.getmany(timeout_ms=300)).values():
                seen.extend(json.loads(r.value)["event_id"] for r in batch)
            return len(set(seen)) >= at_least

        try:
            # Each tenant's first half of events, then (one process stopped) its second half.
            first = [e for k, e in enumerate(events) if k % PER_TENANT < PER_TENANT // 2]
            second = [e for k, e in enumerate(events) if k % PER_TENANT >= PER_TENANT // 2]
            for envelope in first:
                await producer.send_and_wait(
                    topic, envelope.model_dump_json().encode(), key=str(envelope.tenant).encode()
                )
            await eventually(
                lambda: published(1), within=60, what="no edge from the first half of the events"
            )
            processes[1].send_signal(signal.SIGTERM)  # mid-stream: its partitions move over
            processes[1].wait(30)
            for envelope in second:
                await producer.send_and_wait(
                    topic, envelope.model_dump_json().encode(), key=str(envelope.tenant).encode()
                )
            await eventually(
                lambda: published(len(expected)),
                within=90,
                what=lambda: (
                    f"{len(set(seen))} of {len(expected)} edges: " + logs[0].read_text()[-2000:]
                ),
            )
        finally:
            await reader_consumer.stop()
            await producer.stop()
        assert set(seen) == expected  # nothing lost, nothing else published
        assert processes[0].poll() is None
    finally:
        for process in processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(15)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(10)
        for store in deployment.stores:
            await owner.execute(f"DROP TABLE IF EXISTS {store_table(store.name)}")
        await owner.execute("DELETE FROM mnemo.corpora WHERE corpus_id = $1", corpus.name)
        for tenant in tenants:
            async with owner.transaction():
                await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
                await owner.execute("DELETE FROM mnemo.graph_revisions")
            await owner.execute("DELETE FROM mnemo.tenants WHERE tenant_id = $1", tenant)
        await owner.close()
