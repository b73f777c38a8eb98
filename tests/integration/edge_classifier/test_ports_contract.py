"""One contract for the classifier's ports, run over the in-memory adapters (`mnemo_edge_classifier.
fakes`) and the real ones (`mnemo_edge_classifier.adapters`: the registry and candidates read from
Postgres as `mnemo_classifier` under row-level security, the per-event read and the in-memory
index; edges published to Kafka). What the fakes answer in the unit tests is what the service
gets in production.

- registry: a registered corpus is found with its status, which follows `publish` and
  `deprecate` at the next lookup; an unknown one is not found;
- candidates: exactly the candidates and key frequencies `ScopeIndex` (the pure index, held equal
  to `LexicalIndex` by tests/unit/mdn/test_scope_index.py) finds among the documents of the
  event's tenant and end-client; nothing of another tenant; a dropped store is `CorpusGoneError`;
- publisher: a command arrives as sent, keyed by its tenant.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass

import asyncpg
import pytest
from aiokafka import AIOKafkaConsumer
from mnemo_axon.compiler import load_deployment
from mnemo_edge_classifier.adapters import (
    IndexedCandidates,
    KafkaEdgePublisher,
    RegistryCorpora,
    StoreCandidates,
)
from mnemo_edge_classifier.errors import CorpusGoneError
from mnemo_edge_classifier.fakes import MemoryCandidates, MemoryCorpora, MemoryEdgePublisher
from mnemo_edge_classifier.use_cases import CandidateSource, CorpusDirectory, EdgePublisher
from mnemo_events import PERSIST, Envelope, PersistRow, new_envelope
from mnemo_events.broker import create_broker
from mnemo_events.provisioning import ensure_topics
from mnemo_events.settings import KafkaSettings
from mnemo_mdn.edge_classification import (
    DEFAULT_OPTIONS,
    TextDocument,
    candidate_query,
    document_keys,
    keys_of,
)
from mnemo_mdn.lexical_index import ScopeIndex
from mnemo_store import Scope, Store, StoreCorpus
from mnemo_store.applier import apply_deployment
from mnemo_store.identifiers import store_table
from mnemo_store.registry import Status, set_corpus_status

from tests.declarations import memory_corpus
from tests.integration.edge_classifier.worlds import drop_world

TEXTS = [
    ("Hilda Hilst", "A Brazilian poet. She wrote Tu Nao Te Moves De Ti."),
    ("Tu Nao Te Moves De Ti", "A novel by Hilda Hilst, published in Sao Paulo."),
    ("Sao Paulo", "The largest city of Brazil, home of Hilda Hilst for years."),
    ("Brand (play)", "A play by Henrik Ibsen. Brand is a priest."),
    ("Henrik Ibsen", "Norwegian playwright who wrote Brand and Peer Gynt."),
    ("Peer Gynt", "A play by Henrik Ibsen, set partly in Morocco. See Brand."),
    ("Brand", "A Henrik Ibsen play, the one about a priest."),
]
CLIENTS = ("client-a", "client-b")


@dataclass
class Ports:
    """The three ports of one kind, and what the contract needs to change behind them."""

    corpus: StoreCorpus
    tenants: tuple[uuid.UUID, uuid.UUID]
    corpora: CorpusDirectory
    candidates: CandidateSource
    publisher: EdgePublisher
    kind: str
    owner: asyncpg.Connection | None = None
    memory: MemoryCandidates | None = None
    memory_corpora: MemoryCorpora | None = None
    memory_publisher: MemoryEdgePublisher | None = None
    topic: str = ""
    bootstrap: str = ""

    async def set_status(self, status: Status) -> None:
        if self.memory_corpora is not None:
            self.memory_corpora.set_status(self.corpus.name, status)
        else:
            assert self.owner is not None
            change = await set_corpus_status(self.owner, self.corpus.name, status, force=True)
            assert change.after == status

    async def put(self, tenant: uuid.UUID, values: Mapping[str, object]) -> None:
        if self.memory is not None:
            self.memory.put(tenant, self.corpus, values)
            return
        assert self.owner is not None
        async with self.owner.transaction():
            await self.owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
            await self.owner.execute(
                f"INSERT INTO {store_table(self.corpus.documents.name)}"
                " (axon_tenant, id, tenant_id, title, body) VALUES ($1, $2, $3, $4, $5)",
                tenant,
                values["id"],
                values["tenant_id"],
                values["title"],
                values["body"],
            )

    async def drop(self) -> None:
        if self.memory is not None:
            self.memory.drop(self.corpus)
            return
        assert self.owner is not None
        await self.owner.execute(f"DROP TABLE {store_table(self.corpus.documents.name)}")

    async def published(self, count: int) -> list[tuple[bytes | None, bytes]]:
        """The first `count` records published (key, value), waiting up to 30 s for them."""
        if self.memory_publisher is not None:
            return [
                (str(c.tenant).encode(), c.model_dump_json().encode())
                for c in self.memory_publisher.published
            ]
        consumer = AIOKafkaConsumer(
            self.topic, bootstrap_servers=self.bootstrap, auto_offset_reset="earliest"
        )
        await consumer.start()
        found: list[tuple[bytes | None, bytes]] = []
        try:
            deadline = asyncio.get_running_loop().time() + 30
            while len(found) < count and asyncio.get_running_loop().time() < deadline:
                for records in (await consumer.getmany(timeout_ms=300)).values():
                    found.extend((r.key, r.value) for r in records if r.value is not None)
        finally:
            await consumer.stop()
        return found


@pytest.fixture(params=["memory", "postgres", "postgres-indexed"])
async def ports(
    request: pytest.FixtureRequest, owner_dsn: str, kafka_bootstrap: str
) -> AsyncIterator[Ports]:
    suffix = uuid.uuid4().hex[:10]
    deployment = load_deployment(
        memory_corpus("Con", "Contract", suffix, id_type="Text", client_type="Text"),
        f"contract_{suffix}.axon",
    )
    corpus = StoreCorpus.from_deployment(deployment, f"Contract_{suffix}")
    if request.param == "memory":
        corpora = MemoryCorpora()
        corpora.add(corpus, "draft")  # what `mnemo apply` registers
        candidates, publisher = MemoryCandidates(), MemoryEdgePublisher()
        yield Ports(
            corpus,
            (uuid.uuid4(), uuid.uuid4()),
            corpora,
            candidates,
            publisher,
            "memory",
            memory=candidates,
            memory_corpora=corpora,
            memory_publisher=publisher,
        )
        return
    owner = await asyncpg.connect(owner_dsn)
    await apply_deployment(owner, deployment, gateway_base_url="http://127.0.0.1:8080")
    tenants = tuple(
        [
            await owner.fetchval(
                "INSERT INTO mnemo.tenants (name) VALUES ($1) RETURNING tenant_id",
                f"test-contract-{suffix}-{k}",
            )
            for k in range(2)
        ]
    )
    classifier_dsn = os.environ.get("MNEMO_CLASSIFIER_DATABASE_URL") or owner_dsn.replace(
        "mnemo_owner:mnemo_owner", "mnemo_classifier:mnemo_classifier"
    )
    topic = f"test.contract.edges.{suffix}"
    await ensure_topics(KafkaSettings(bootstrap=kafka_bootstrap), [topic])
    broker = create_broker(KafkaSettings(bootstrap=kafka_bootstrap), client_id="contract-test")
    await broker.start()
    pool = await asyncpg.create_pool(classifier_dsn, min_size=1, max_size=2)
    try:
        async with Store(pool) as reader:
            per_event = StoreCandidates(reader, 1000, DEFAULT_OPTIONS)
            source: CandidateSource = per_event
            if request.param == "postgres-indexed":
                source = IndexedCandidates(reader, per_event, 1000, DEFAULT_OPTIONS, 1 << 30)
            yield Ports(
                corpus,
                (tenants[0], tenants[1]),
                RegistryCorpora(pool, refresh_seconds=0.0),
                source,
                KafkaEdgePublisher(broker, topic),
                request.param,
                owner=owner,
                topic=topic,
                bootstrap=kafka_bootstrap,
            )
    finally:
        await broker.stop()
        await owner.execute("DELETE FROM mnemo.tenants WHERE tenant_id = $1", tenants[1])
        await drop_world(owner, deployment, corpus.name, tenants[0])


async def test_a_registered_corpus_is_found_and_its_status_follows_publish_and_deprecate(
    ports: Ports,
) -> None:
    assert await ports.corpora.corpus(ports.corpus.name) == ports.corpus
    assert await ports.corpora.status(ports.corpus.name) == "draft"
    await ports.set_status("published")
    assert await ports.corpora.status(ports.corpus.name) == "published"
    await ports.set_status("deprecated")
    assert await ports.corpora.status(ports.corpus.name) == "deprecated"
    ports.corpora.forget(ports.corpus.name)
    assert await ports.corpora.corpus(ports.corpus.name) == ports.corpus


async def test_an_unknown_corpus_has_neither_a_definition_nor_a_status(ports: Ports) -> None:
    assert await ports.corpora.corpus("Nowhere_at_all") is None
    assert await ports.corpora.status("Nowhere_at_all") is None


def _rows() -> list[dict[str, object]]:
    return [
        {"id": f"d{k}", "tenant_id": CLIENTS[k % 2], "title": title, "body": body}
        for k, (title, body) in enumerate(TEXTS * 2)
    ]


async def test_the_candidates_are_what_the_pure_index_finds_in_the_tenants_end_client(
    ports: Ports,
) -> None:
    tenant, other = ports.tenants
    rows = _rows()
    for row in rows:
        await ports.put(tenant, row)
    await ports.put(other, {"id": "x", "tenant_id": "client-a", "title": "Brand", "body": "Other."})
    ports.candidates.new_batch()
    for row in rows:
        scope = Scope("tenant_id == '${tenant_id}'", {"tenant_id": str(row["tenant_id"])})
        in_scope = ScopeIndex(
            TextDocument(str(r["id"]), str(r["title"]), str(r["body"]))
            for r in rows
            if r["tenant_id"] == row["tenant_id"]
        )
        keys = document_keys(TextDocument(str(row["id"]), str(row["title"]), str(row["body"])))
        query, phrases = candidate_query(keys), keys_of(keys)
        found = await ports.candidates.neighbourhood(
            tenant, ports.corpus, str(row["id"]), query, phrases, scope
        )
        expected, frequencies = in_scope.neighbourhood(
            str(row["id"]), query, phrases, DEFAULT_OPTIONS, 1000
        )
        assert [(c.id, c.title, c.body) for c in found.candidates] == [
            (d.id, d.title, d.body) for d in expected
        ], row["id"]
        assert dict(found.frequencies) == frequencies, row["id"]
        assert "x" not in {c.id for c in found.candidates}  # another tenant's document


async def test_a_tenant_with_no_documents_gets_no_candidates(ports: Ports) -> None:
    tenant, other = ports.tenants
    for row in _rows():
        await ports.put(other, row)
    keys = document_keys(TextDocument("new", "Brand", "Henrik Ibsen wrote Peer Gynt."))
    ports.candidates.new_batch()
    found = await ports.candidates.neighbourhood(
        tenant,
        ports.corpus,
        "new",
        candidate_query(keys),
        keys_of(keys),
        Scope("tenant_id == '${tenant_id}'", {"tenant_id": "client-a"}),
    )
    assert list(found.candidates) == []
    assert set(found.frequencies.values()) <= {0}


async def test_a_dropped_documents_store_is_a_corpus_gone(ports: Ports) -> None:
    tenant, _ = ports.tenants
    await ports.put(tenant, _rows()[0])
    await ports.drop()
    keys = document_keys(TextDocument("new", "Brand", "Henrik Ibsen."))
    ports.candidates.new_batch()
    with pytest.raises(CorpusGoneError, match="is gone or changed"):
        await ports.candidates.neighbourhood(
            tenant,
            ports.corpus,
            "new",
            candidate_query(keys),
            keys_of(keys),
            Scope("tenant_id == '${tenant_id}'", {"tenant_id": "client-a"}),
        )


async def test_a_published_command_arrives_as_sent_keyed_by_its_tenant(ports: Ports) -> None:
    commands: list[Envelope[PersistRow]] = [
        new_envelope(
            PersistRow(
                store=ports.corpus.relations.name,
                values={"from_id": "d0", "to_id": f"d{k}", "etype": "cite", "weight": 1.0},
            ),
            tenant=tenant,
            producer="test",
            event_type=PERSIST,
        )
        for k, tenant in enumerate(ports.tenants)
    ]
    delivered = [await ports.publisher.enqueue(command) for command in commands]
    await asyncio.gather(*delivered)
    found = await ports.published(len(commands))
    assert sorted(found) == sorted(
        (str(c.tenant).encode(), c.model_dump_json().encode()) for c in commands
    )
