"""The edge classifier's Postgres path finds the edges the in-process engine finds.

MuSiQue passages (the vendored subset: the paragraphs of its first questions) are stored in a
corpus of their own; then every passage is classified as the service does (`ClassifyDocument` over
`StoreCandidates`: candidates and key rarity from Postgres as the `mnemo_classifier` role; and
over `IndexedCandidates`: the same from the scope held in memory), and the
union of the edges is compared with `mnemo_mdn.lexical_index.classify_corpus` over the same
passages: the engine mode of bench/quality.py."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from mnemo_axon.compiler import load_deployment
from mnemo_edge_classifier.adapters import IndexedCandidates, StoreCandidates
from mnemo_edge_classifier.use_cases import ClassifyDocument, LexicalClassifier
from mnemo_events import DocumentPersisted, new_envelope
from mnemo_mdn import Document
from mnemo_mdn.edge_classification import DEFAULT_OPTIONS
from mnemo_mdn.lexical_index import classify_corpus
from mnemo_store import Store, StoreCorpus
from mnemo_store.applier import apply_deployment

from tests.declarations import memory_corpus
from tests.integration.edge_classifier.worlds import drop_world

ROOT = Path(__file__).resolve().parents[3]
QUESTIONS = 12


def _passages() -> list[tuple[str, str]]:
    records = json.loads((ROOT / "bench" / "data" / "musique" / "questions.json").read_text())
    seen: dict[tuple[str, str], None] = {}
    for record in records[:QUESTIONS]:
        for paragraph in record["paragraphs"]:
            seen.setdefault((paragraph["title"], paragraph["paragraph_text"]), None)
    return list(seen)


class Directory:
    def __init__(self, corpus: StoreCorpus) -> None:
        self._corpus = corpus

    async def corpus(self, corpus_id: str) -> StoreCorpus | None:
        return self._corpus if corpus_id == self._corpus.name else None

    async def status(self, corpus_id: str) -> str | None:
        return "published" if corpus_id == self._corpus.name else None

    def forget(self, corpus_id: str) -> None:
        pass


@pytest.fixture(scope="module")
async def stored(
    owner_dsn: str, app_dsn: str
) -> AsyncIterator[tuple[StoreCorpus, uuid.UUID, list[Document], Store]]:
    suffix = uuid.uuid4().hex[:10]
    owner = await asyncpg.connect(owner_dsn)
    deployment = load_deployment(
        memory_corpus("Agree", "Agree", suffix, id_type="Text", end_clients=False),
        f"agree_{suffix}.axon",
    )
    await apply_deployment(owner, deployment, gateway_base_url="http://127.0.0.1:8080")
    corpus = StoreCorpus.from_deployment(deployment, f"Agree_{suffix}")
    tenant = await owner.fetchval(
        "INSERT INTO mnemo.tenants (name) VALUES ($1) RETURNING tenant_id", f"test-agree-{suffix}"
    )
    documents = [Document(f"p{k:06d}", t, b) for k, (t, b) in enumerate(_passages())]
    classifier_dsn = os.environ.get("MNEMO_CLASSIFIER_DATABASE_URL") or owner_dsn.replace(
        "mnemo_owner:mnemo_owner", "mnemo_classifier:mnemo_classifier"
    )
    try:
        app = await Store.connect(app_dsn, max_size=2)
        try:
            async with app.tenant(tenant) as tx:
                await tx.insert_rows(
                    corpus.documents,
                    [{"id": d.id, "title": d.title, "body": d.body} for d in documents],
                )
        finally:
            await app.close()
        async with await Store.connect(classifier_dsn, max_size=2) as reader:
            yield corpus, tenant, documents, reader
    finally:
        await drop_world(owner, deployment, corpus.name, tenant)


@pytest.mark.parametrize("source", ["per event", "in memory"])
async def test_the_service_path_makes_the_edges_of_the_in_process_engine(
    stored: tuple[StoreCorpus, uuid.UUID, list[Document], Store], source: str
) -> None:
    corpus, tenant, documents, reader = stored
    per_event = StoreCandidates(reader, 1000, DEFAULT_OPTIONS)
    indexed = IndexedCandidates(reader, per_event, 1000, DEFAULT_OPTIONS, 1 << 30)
    use_case = ClassifyDocument(
        Directory(corpus),
        per_event if source == "per event" else indexed,
        LexicalClassifier(),
    )
    service: dict[tuple[str, str, str], float] = {}
    for k, document in enumerate(documents):
        if k % 7 == 0:
            use_case.new_batch()
        event = new_envelope(
            DocumentPersisted(
                corpus=corpus.name,
                store=corpus.documents.name,
                id=document.id,
                values={"id": document.id, "title": document.title, "body": document.body},
            ),
            tenant=tenant,
            producer="test",
            event_type="mnemo.document.persisted.v1",
        )
        commands, refused = await use_case.edges_for(event)
        assert refused == []
        for command in commands:
            values: dict[str, Any] = command.data.values
            key = (values["from_id"], values["to_id"], values["etype"])
            service[key] = max(service.get(key, 0.0), float(values["weight"]))
    engine = {(d.source, d.target, d.etype): d.weight for d in classify_corpus(documents)}
    assert len(engine) > len(documents)  # the comparison is not between two empty sets
    assert sorted(service) == sorted(engine)
    assert all(service[key] == pytest.approx(engine[key]) for key in engine)
    if source == "in memory":
        assert (indexed.loads, indexed.fallbacks) == (1, 0)  # one load; every lookup in memory
