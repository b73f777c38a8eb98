"""The classifier's use case over in-memory ports: scope, commands, deterministic ids, refusals."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import pytest
from mnemo_axon.compiler import load_deployment
from mnemo_edge_classifier.errors import (
    CorpusGoneError,
    CorpusNotPublishedError,
    DocumentRefusedError,
)
from mnemo_edge_classifier.use_cases import (
    ClassifyDocument,
    EdgeClassifier,
    LexicalClassifier,
    Neighbourhood,
)
from mnemo_events import DocumentPersisted, Envelope, new_envelope
from mnemo_mdn.edge_classification import CandidateQuery, DocumentKeys, EdgeDecision, Rarity
from mnemo_store import Scope, StoreCorpus
from mnemo_store.candidates import CandidateDocument

DECLARATIONS = """
axonstore Docs { backend: postgresql
  schema { id: Uuid primary_key  tenant_id: Uuid not_null  title: Text not_null  body: Text } }
axonstore Edges { backend: postgresql
  schema { from_id: Uuid not_null  to_id: Uuid not_null  etype: Text not_null
           weight: Float not_null  tenant_id: Uuid not_null } }
corpus Memory from axonstore {
  documents: Docs(id, title, body)
  relations: Edges(from_id, to_id, etype, weight)
}
"""
CORPUS = StoreCorpus.from_deployment(load_deployment(DECLARATIONS, "t.axon"), "Memory")
SINGER = str(uuid.uuid4())


class Directory:
    def __init__(self, status: str = "published") -> None:
        self.forgotten: list[str] = []
        self._status = status

    async def corpus(self, corpus_id: str) -> StoreCorpus | None:
        return CORPUS if corpus_id == "Memory" else None

    async def status(self, corpus_id: str) -> str | None:
        return self._status if corpus_id == "Memory" else None

    def forget(self, corpus_id: str) -> None:
        self.forgotten.append(corpus_id)


class Candidates:
    def __init__(self) -> None:
        self.scopes: list[Scope] = []
        self.batches = 0

    def new_batch(self) -> None:
        self.batches += 1

    async def neighbourhood(
        self,
        tenant: uuid.UUID,
        corpus: StoreCorpus,
        document_id: str,
        query: CandidateQuery,
        keys: Sequence[str],
        scope: Scope,
    ) -> Neighbourhood:
        self.scopes.append(scope)
        return Neighbourhood([CandidateDocument(SINGER, "Hilda Hilst", "A poet.")], {})


class Rogue:
    async def classify(
        self, document: DocumentKeys, candidates: Sequence[DocumentKeys], rarity: Rarity
    ) -> Sequence[EdgeDecision]:
        return [
            EdgeDecision(document.id, SINGER, "cite", 0.5),
            EdgeDecision(document.id, "not-a-candidate", "cite", 0.5),
        ]


def event(
    values: dict[str, object], corpus: str = "Memory", store: str = "Docs"
) -> Envelope[DocumentPersisted]:
    return new_envelope(
        DocumentPersisted(corpus=corpus, store=store, id=str(values["id"]), values=values),
        tenant=uuid.uuid4(),
        producer="test",
        event_type="mnemo.document.persisted.v1",
    )


def song(client: str | None) -> dict[str, object]:
    return {
        "id": str(uuid.uuid4()),
        "tenant_id": client,
        "title": "Blue Moon Rising",
        "body": "Performed by Hilda Hilst.",
    }


def use_case(source: Candidates, classifier: EdgeClassifier | None = None) -> ClassifyDocument:
    return ClassifyDocument(
        Directory(),
        source,
        classifier or LexicalClassifier(),
    )


async def test_a_mention_becomes_a_persist_command_for_the_relations_store_in_the_same_scope() -> (
    None
):
    source, client = Candidates(), str(uuid.uuid4())
    envelope = event(song(client))
    commands, refused = await use_case(source).edges_for(envelope)
    assert refused == []
    assert [c.data.store for c in commands] == ["Edges"]
    assert commands[0].data.values == {
        "from_id": envelope.data.id,
        "to_id": SINGER,
        "etype": "cite",
        "weight": 1.0,
        "tenant_id": client,
    }
    assert commands[0].tenant == envelope.tenant
    assert source.scopes == [Scope("tenant_id == '${tenant_id}'", {"tenant_id": client})]


async def test_a_redelivered_event_yields_the_same_event_ids() -> None:
    envelope = event(song(str(uuid.uuid4())))
    first, _ = await use_case(Candidates()).edges_for(envelope)
    again, _ = await use_case(Candidates()).edges_for(envelope)
    assert [c.event_id for c in first] == [c.event_id for c in again]


async def test_decisions_outside_the_candidates_are_refused_with_a_reason() -> None:
    commands, refused = await use_case(Candidates(), Rogue()).edges_for(event(song("c")))
    assert [c.data.values["to_id"] for c in commands] == [SINGER]
    assert refused == [
        f"{commands[0].data.values['from_id']} -> not-a-candidate is not a candidate edge"
    ]


class Repeating:
    async def classify(
        self, document: DocumentKeys, candidates: Sequence[DocumentKeys], rarity: Rarity
    ) -> Sequence[EdgeDecision]:
        return [
            EdgeDecision(document.id, SINGER, "cite", 0.5),
            EdgeDecision(SINGER, document.id, "cite", 0.25),
            EdgeDecision(document.id, SINGER, "cite", 0.75),
            EdgeDecision(document.id, SINGER, "corroborate", 0.5),
        ]


async def test_an_edge_decided_twice_is_published_once_with_its_heaviest_weight() -> None:
    envelope = event(song("c"))
    commands, refused = await use_case(Candidates(), Repeating()).edges_for(envelope)
    doc = envelope.data.id
    assert refused == []
    assert [
        (
            c.data.values["from_id"],
            c.data.values["to_id"],
            c.data.values["etype"],
            c.data.values["weight"],
        )
        for c in commands
    ] == [
        (doc, SINGER, "cite", 0.75),
        (SINGER, doc, "cite", 0.25),
        (doc, SINGER, "corroborate", 0.5),
    ]
    assert len({c.event_id for c in commands}) == 3


@pytest.mark.parametrize(
    ("values", "corpus", "store", "reason"),
    [
        (song(None), "Memory", "Docs", "no value for 'tenant_id'"),
        (song("c"), "Nowhere", "Docs", "not a registered store corpus"),
        (song("c"), "Memory", "Edges", "not the documents store"),
    ],
)
async def test_an_event_that_can_never_be_classified_is_refused(
    values: dict[str, object], corpus: str, store: str, reason: str
) -> None:
    with pytest.raises(DocumentRefusedError, match=reason):
        await use_case(Candidates()).edges_for(event(values, corpus, store))


class Dropped(Candidates):
    async def neighbourhood(self, *args: object) -> Neighbourhood:
        raise CorpusGoneError('relation "axon_stores.Docs" does not exist')


async def test_a_corpus_whose_store_is_gone_is_refused_at_once_and_read_afresh_next_time() -> None:
    directory = Directory()
    case = ClassifyDocument(directory, Dropped(), LexicalClassifier())
    with pytest.raises(DocumentRefusedError, match="does not exist"):
        await case.edges_for(event(song(str(uuid.uuid4()))))
    assert directory.forgotten == ["Memory"]


class Fixed(Candidates):
    def __init__(self, candidate: CandidateDocument) -> None:
        super().__init__()
        self._candidate = candidate

    async def neighbourhood(self, *args: object) -> Neighbourhood:
        return Neighbourhood([self._candidate], {})


async def test_a_citation_found_from_either_end_is_one_event() -> None:
    tenant, client = uuid.uuid4(), str(uuid.uuid4())
    song_values = song(client)
    poet_values: dict[str, object] = {
        "id": SINGER,
        "tenant_id": client,
        "title": "Hilda Hilst",
        "body": "A poet.",
    }

    def persisted(values: dict[str, object]) -> Envelope[DocumentPersisted]:
        return new_envelope(
            DocumentPersisted(corpus="Memory", store="Docs", id=str(values["id"]), values=values),
            tenant=tenant,
            producer="test",
            event_type="mnemo.document.persisted.v1",
        )

    def as_candidate(values: dict[str, object]) -> CandidateDocument:
        return CandidateDocument(str(values["id"]), str(values["title"]), str(values["body"]))

    from_song, _ = await ClassifyDocument(
        Directory(), Fixed(as_candidate(poet_values)), LexicalClassifier()
    ).edges_for(persisted(song_values))
    from_poet, _ = await ClassifyDocument(
        Directory(), Fixed(as_candidate(song_values)), LexicalClassifier()
    ).edges_for(persisted(poet_values))
    assert [c.data.values for c in from_song] == [c.data.values for c in from_poet]
    assert [c.event_id for c in from_song] == [c.event_id for c in from_poet]


@pytest.mark.parametrize("status", ["draft", "deprecated"])
async def test_a_document_of_a_corpus_that_is_not_published_is_not_classified(status: str) -> None:
    source = Candidates()
    case = ClassifyDocument(Directory(status), source, LexicalClassifier())
    with pytest.raises(CorpusNotPublishedError, match=f"'Memory' is {status}; only published"):
        await case.edges_for(event(song(str(uuid.uuid4()))))
    assert source.scopes == []  # no candidate read
