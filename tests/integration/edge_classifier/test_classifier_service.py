"""The edge classifier as a process (`python -m mnemo_edge_classifier`) on topics of its own,
against the real Postgres (as its read-only role) and the real Kafka: a persisted document becomes
persist commands with deterministic event ids; poison and unclassifiable events are dead-lettered
with their reason, and the partition keeps moving."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from mnemo_axon.compiler import load_deployment
from mnemo_edge_classifier.use_cases import edge_event_id
from mnemo_events import DocumentPersisted, Envelope, PersistRow, new_envelope
from mnemo_events.provisioning import ensure_topics
from mnemo_events.settings import KafkaSettings
from mnemo_mdn.edge_classification import EdgeDecision
from mnemo_store import Store, StoreCorpus
from mnemo_store.applier import apply_deployment
from mnemo_store.identifiers import store_table

from tests.declarations import memory_corpus
from tests.infrastructure import free_port
from tests.waiting import eventually

ROOT = Path(__file__).resolve().parents[3]


@dataclass
class Classifier:
    suffix: str
    topic: str
    persist_topic: str
    corpus: StoreCorpus
    tenant: uuid.UUID
    bootstrap: str
    store: Store
    process: subprocess.Popen[bytes]
    log: Path
    port: int

    async def produce(self, *records: tuple[bytes | None, bytes]) -> None:
        producer = AIOKafkaProducer(bootstrap_servers=self.bootstrap, linger_ms=5, acks="all")
        await producer.start()
        try:
            futures = [await producer.send(self.topic, value, key=key) for key, value in records]
            await asyncio.gather(*futures)
        finally:
            await producer.stop()

    async def read(self, topic: str, count: int, wait: float = 45) -> list[Any]:
        """The first `count` records of `topic` (from its start), or what came within `wait`."""
        consumer = AIOKafkaConsumer(
            topic, bootstrap_servers=self.bootstrap, auto_offset_reset="earliest", group_id=None
        )
        await consumer.start()
        found: list[Any] = []
        try:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + wait
            while len(found) < count and loop.time() < deadline:
                assert self.process.poll() is None, self.log.read_text()[-3000:]
                for items in (await consumer.getmany(timeout_ms=300)).values():
                    found.extend(items)
        finally:
            await consumer.stop()
        return found

    async def persist(
        self, client: uuid.UUID, title: str, body: str, corpus: StoreCorpus | None = None
    ) -> dict[str, Any]:
        """Write a document as ingest would, and return its values (what its event carries)."""
        values = {"id": str(uuid.uuid4()), "tenant_id": str(client), "title": title, "body": body}
        async with self.store.tenant(self.tenant) as tx:
            await tx.insert_rows(
                (corpus or self.corpus).documents,
                [{**values, "id": uuid.UUID(values["id"]), "tenant_id": client}],
            )
        return values

    def event(
        self, values: dict[str, Any], corpus: str | None = None, store: str | None = None
    ) -> Envelope[Any]:
        return new_envelope(
            DocumentPersisted(
                corpus=corpus or self.corpus.name,
                store=store or self.corpus.documents.name,
                id=values["id"],
                values=values,
            ),
            tenant=self.tenant,
            producer="test-ingest",
            event_type="mnemo.document.persisted.v1",
        )

    def record(self, envelope: Envelope[Any]) -> tuple[bytes, bytes]:
        return str(envelope.tenant).encode(), envelope.model_dump_json().encode()


def _start(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "mnemo_edge_classifier"],
        env=env,
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
        cwd=ROOT,
    )


@pytest.fixture(scope="module")
async def classifier(
    owner_dsn: str, app_dsn: str, kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Classifier]:
    suffix = uuid.uuid4().hex[:10]
    owner = await asyncpg.connect(owner_dsn)
    deployment = load_deployment(memory_corpus("", "Memory", suffix), f"test_{suffix}.axon")
    await apply_deployment(owner, deployment, gateway_base_url="http://127.0.0.1:8080")
    corpus = StoreCorpus.from_deployment(deployment, f"Memory_{suffix}")
    await _set_status(owner, corpus.name, "published")  # only published corpora are classified
    tenant = await owner.fetchval(
        "INSERT INTO mnemo.tenants (name) VALUES ($1) RETURNING tenant_id",
        f"test-classifier-{suffix}",
    )
    topic, persist_topic = f"test.persisted.{suffix}.v1", f"test.persist.{suffix}.v1"
    await ensure_topics(
        KafkaSettings(bootstrap=kafka_bootstrap, partitions=2), [topic, persist_topic]
    )
    port = free_port()
    env = {
        **os.environ,
        "MNEMO_CLASSIFIER_TOPIC": topic,
        "MNEMO_CLASSIFIER_PERSIST_TOPIC": persist_topic,
        "MNEMO_CLASSIFIER_GROUP": f"test.classifier.{suffix}",
        "MNEMO_CLASSIFIER_PORT": str(port),
        "MNEMO_KAFKA_BOOTSTRAP": kafka_bootstrap,
        "MNEMO_KAFKA_PARTITIONS": "2",
        "MNEMO_KAFKA_MAX_ATTEMPTS": "2",
        "MNEMO_KAFKA_RETRY_BACKOFF_SECONDS": "0.05",
    }
    env.setdefault(
        "MNEMO_CLASSIFIER_DATABASE_URL",
        owner_dsn.replace("mnemo_owner:mnemo_owner", "mnemo_classifier:mnemo_classifier"),
    )
    log = tmp_path_factory.mktemp("classifier") / "classifier.log"
    process = _start(env, log)
    store = await Store.connect(app_dsn, min_size=1, max_size=2)
    try:
        async with httpx.AsyncClient() as client:

            async def answers_ready() -> bool:
                assert process.poll() is None, f"classifier exited: {log.read_text()[-3000:]}"
                try:
                    return (await client.get(f"http://127.0.0.1:{port}/readyz")).status_code == 200
                except httpx.HTTPError:
                    return False

            await eventually(
                answers_ready,
                within=60,
                every=0.2,
                what=lambda: f"never ready: {log.read_text()[-3000:]}",
            )
        yield Classifier(
            suffix, topic, persist_topic, corpus, tenant, kafka_bootstrap, store, process, log, port
        )
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)
        await store.close()
        for store_decl in deployment.stores:
            await owner.execute(f"DROP TABLE IF EXISTS {store_table(store_decl.name)}")
        await owner.execute("DELETE FROM mnemo.corpora WHERE corpus_id = $1", corpus.name)
        await owner.execute("DELETE FROM mnemo.tenants WHERE tenant_id = $1", tenant)
        await owner.close()


async def _set_status(owner: asyncpg.Connection, corpus: str, status: str) -> None:
    await owner.execute("UPDATE mnemo.corpora SET status = $2 WHERE corpus_id = $1", corpus, status)


def _commands(records: list[Any]) -> list[Envelope[PersistRow]]:
    return [Envelope[PersistRow].model_validate_json(r.value) for r in records]


async def test_a_persisted_document_becomes_edge_commands_with_ids_a_redelivery_repeats(
    classifier: Classifier,
) -> None:
    client, stranger = uuid.uuid4(), uuid.uuid4()
    poet = await classifier.persist(client, "Hilda Hilst", "A Brazilian poet from Jaú.")
    # The same title in another end-client's scope must never be a candidate.
    await classifier.persist(stranger, "Hilda Hilst", "Someone else's poet.")
    song = await classifier.persist(
        client, "Blue Moon Rising", "A song set to words by Hilda Hilst in 1970."
    )
    event = classifier.event(song)
    await classifier.produce(classifier.record(event))
    first = _commands(await classifier.read(classifier.persist_topic, 1))
    assert [c.data.store for c in first] == [classifier.corpus.relations.name]
    values = first[0].data.values
    assert values == {
        "from_id": song["id"],
        "to_id": poet["id"],
        "etype": "cite",
        "weight": 1.0,
        "tenant_id": str(client),
    }
    assert first[0].tenant == classifier.tenant
    expected_id = edge_event_id(
        classifier.tenant, classifier.corpus.name, EdgeDecision(song["id"], poet["id"], "cite", 1.0)
    )
    assert first[0].event_id == expected_id

    await classifier.produce(classifier.record(event))  # redelivered
    both = _commands(await classifier.read(classifier.persist_topic, 2))
    assert [c.event_id for c in both] == [expected_id, expected_id]


async def test_poison_and_unclassifiable_events_are_dead_lettered_and_the_next_one_lands(
    classifier: Classifier,
) -> None:
    client = uuid.uuid4()
    before = len(await classifier.read(classifier.persist_topic, 10**6, wait=2))
    city = await classifier.persist(client, "Campinas", "A city in São Paulo state.")
    unknown = classifier.event(city, corpus=f"Nowhere_{classifier.suffix}")
    no_scope = classifier.event({**city, "tenant_id": None})
    key = str(classifier.tenant).encode()
    university = await classifier.persist(
        client, "State University of Campinas", "A university in Campinas."
    )
    good = classifier.event(university)
    await classifier.produce(
        (key, b"{not json"),
        classifier.record(unknown),
        classifier.record(no_scope),
        classifier.record(good),
    )
    dead = await classifier.read(classifier.topic + ".dlt", 3)
    reasons = [dict(r.headers)["mnemo-dlt-reason"].decode() for r in dead]
    assert len(dead) == 3
    assert dead[0].value == b"{not json"
    assert "is not a registered store corpus" in reasons[1]
    assert "no value for 'tenant_id'" in reasons[2]
    landed = _commands(await classifier.read(classifier.persist_topic, before + 1))[before:]
    assert [(c.data.values["from_id"], c.data.values["to_id"]) for c in landed] == [
        (university["id"], city["id"])
    ]


async def test_an_event_of_a_corpus_dropped_since_it_was_read_is_dead_lettered_at_the_first_attempt(
    classifier: Classifier, owner_dsn: str
) -> None:
    suffix = uuid.uuid4().hex[:10]
    deployment = load_deployment(memory_corpus("", "Memory", suffix), f"test_{suffix}.axon")
    other = StoreCorpus.from_deployment(deployment, f"Memory_{suffix}")
    owner = await asyncpg.connect(owner_dsn)
    try:
        await apply_deployment(owner, deployment, gateway_base_url="http://127.0.0.1:8080")
        await _set_status(owner, other.name, "published")
        client = uuid.uuid4()
        river = await classifier.persist(client, "Tietê River", "A river.", other)
        bridge = await classifier.persist(client, "Bridge", "It spans the Tietê River.", other)
        before = len(await classifier.read(classifier.persist_topic, 10**6, wait=2))
        dead_before = len(await classifier.read(classifier.topic + ".dlt", 10**6, wait=2))
        await classifier.produce(
            classifier.record(classifier.event(bridge, other.name, other.documents.name))
        )
        assert len(await classifier.read(classifier.persist_topic, before + 1)) == before + 1
        for store in deployment.stores:  # dropped while the service holds the corpus
            await owner.execute(f"DROP TABLE {store_table(store.name)}")
        await classifier.produce(
            classifier.record(classifier.event(river, other.name, other.documents.name))
        )
        dead = (await classifier.read(classifier.topic + ".dlt", dead_before + 1))[dead_before:]
        assert len(dead) == 1
        headers = dict(dead[0].headers)
        assert "is gone or changed" in headers["mnemo-dlt-reason"].decode()
        assert headers["mnemo-dlt-attempts"] == b"1"
    finally:
        for store in deployment.stores:
            await owner.execute(f"DROP TABLE IF EXISTS {store_table(store.name)}")
        await owner.execute("DELETE FROM mnemo.corpora WHERE corpus_id = $1", other.name)
        await owner.close()


async def _skipped(classifier: Classifier) -> float:
    async with httpx.AsyncClient() as client:
        text = (await client.get(f"http://127.0.0.1:{classifier.port}/metrics")).text
    line = 'mnemo_classifier_documents_total{outcome="skipped_unpublished"} '
    rows = [float(row.removeprefix(line)) for row in text.splitlines() if row.startswith(line)]
    return rows[0] if rows else 0.0


async def test_documents_of_draft_and_deprecated_corpora_are_skipped_counted_and_committed(
    classifier: Classifier, owner_dsn: str
) -> None:
    owner = await asyncpg.connect(owner_dsn)
    made: list[Any] = []
    try:
        corpora = {}
        for status in ("draft", "deprecated"):
            suffix = uuid.uuid4().hex[:10]
            deployment = load_deployment(memory_corpus("", "Memory", suffix), f"test_{suffix}.axon")
            made.append(deployment)
            await apply_deployment(owner, deployment, gateway_base_url="http://127.0.0.1:8080")
            corpus = StoreCorpus.from_deployment(deployment, f"Memory_{suffix}")
            if status == "deprecated":
                await _set_status(owner, corpus.name, "published")
                await _set_status(owner, corpus.name, "deprecated")
            corpora[status] = corpus
        client = uuid.uuid4()
        skipped_before = await _skipped(classifier)
        persisted_before = len(await classifier.read(classifier.persist_topic, 10**6, wait=2))
        dead_before = len(await classifier.read(classifier.topic + ".dlt", 10**6, wait=2))
        unpublished = []
        for corpus in corpora.values():
            await classifier.persist(client, "Lagoa Santa", "A town.", corpus)
            cave = await classifier.persist(client, "A cave", "Near Lagoa Santa.", corpus)
            unpublished.append(classifier.event(cave, corpus.name, corpus.documents.name))
        lake = await classifier.persist(client, "Lagoa da Pampulha", "A lake.")
        park = await classifier.persist(client, "A park", "It lies on the Lagoa da Pampulha.")
        await classifier.produce(
            *(classifier.record(e) for e in unpublished),
            classifier.record(classifier.event(park)),
        )
        # The published corpus's document after them is classified: their offsets moved on.
        landed = (await classifier.read(classifier.persist_topic, persisted_before + 1))[
            persisted_before:
        ]
        assert [(c.data.values["from_id"], c.data.values["to_id"]) for c in _commands(landed)] == [
            (park["id"], lake["id"])
        ]
        assert await _skipped(classifier) == skipped_before + 2
        assert len(await classifier.read(classifier.topic + ".dlt", 10**6, wait=2)) == dead_before
    finally:
        for deployment in made:
            for store_decl in deployment.stores:
                await owner.execute(f"DROP TABLE IF EXISTS {store_table(store_decl.name)}")
            await owner.execute(
                "DELETE FROM mnemo.corpora WHERE corpus_id = ANY($1::text[])",
                [c.name for c in deployment.corpora],
            )
        await owner.close()
