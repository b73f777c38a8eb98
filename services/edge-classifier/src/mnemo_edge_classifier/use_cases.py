"""Turning one persisted document into edge rows for ingest (the logic, over ports).

A `document.persisted` event names a corpus and the document's row. Only a published corpus's
documents are classified (a draft or deprecated corpus's are skipped). The use case finds the corpus,
scopes the search to the document's end-client (the corpus's scope columns,
`StoreCorpus.scope_columns`: the columns its documents and edges stores share), asks the candidate
source for its candidates and the rarity of its keys, asks the classifier for edges, checks every
decision against the candidates and the catalog, and returns one persist command per edge with a
deterministic event id (a redelivered event yields the same ids, which ingest deduplicates).

The ports it owns: `CorpusDirectory` (the registry's published store corpora), `CandidateSource`
(a document's candidates and key frequencies), `EdgeClassifier` and `EdgePublisher` (the edges'
persist commands, sent to ingest by the subscriber, `mnemo_edge_classifier.subscribers`). Their
Postgres and Kafka adapters are in `mnemo_edge_classifier.adapters`, their in-memory ones in
`mnemo_edge_classifier.fakes`; one contract suite
(`tests/integration/edge_classifier/test_ports_contract.py`) runs over both.
"""

from __future__ import annotations

import math
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from mnemo_events import PERSIST, PersistRow, new_envelope
from mnemo_events.models import DocumentPersisted, Envelope
from mnemo_mdn import RELATION_TYPES
from mnemo_mdn.edge_classification import (
    CandidateQuery,
    ClassifierOptions,
    DocumentKeys,
    EdgeDecision,
    Rarity,
    TextDocument,
    candidate_query,
    classify,
    document_keys,
    keys_of,
)
from mnemo_store import Scope, StoreCorpus
from mnemo_store.candidates import CandidateDocument

from mnemo_edge_classifier.errors import (
    CorpusGoneError,
    CorpusNotPublishedError,
    DocumentRefusedError,
)

PRODUCER = "mnemo.edge-classifier"


@dataclass(frozen=True, slots=True)
class Neighbourhood:
    """What the store says around a new document: its candidates and its keys' frequencies."""

    candidates: Sequence[CandidateDocument]
    frequencies: Mapping[str, int]


class CorpusDirectory(Protocol):
    async def corpus(self, corpus_id: str) -> StoreCorpus | None: ...

    async def status(self, corpus_id: str) -> str | None:
        """The corpus's registry status (`draft`, `published`, `deprecated`), None if unknown."""
        ...

    def forget(self, corpus_id: str) -> None:
        """The corpus was found stale (`CorpusGoneError`): read it afresh next time."""
        ...


class CandidateSource(Protocol):
    def new_batch(self) -> None:
        """The events that follow were all persisted before this call: what is read fresh after
        it serves them all (one freshness check per tenant and batch, not per event)."""
        ...

    async def neighbourhood(
        self,
        tenant: uuid.UUID,
        corpus: StoreCorpus,
        document_id: str,
        query: CandidateQuery,
        keys: Sequence[str],
        scope: Scope,
    ) -> Neighbourhood:
        """The frequencies of `keys`, and the documents `query` finds (its names only when rare,
        by those frequencies): the candidates `mnemo_mdn.lexical_index` would find in process."""
        ...


class EdgePublisher(Protocol):
    async def enqueue(self, command: Envelope[PersistRow]) -> Awaitable[object]:
        """Queue one edge's persist command for ingest; returns once it is queued, with what
        settles when the broker has it (raises when it could not: the batch is then retried, its
        offsets not committed). A batch's commands are queued one after the other, then awaited
        together."""
        ...


class EdgeClassifier(Protocol):
    async def classify(
        self, document: DocumentKeys, candidates: Sequence[DocumentKeys], rarity: Rarity
    ) -> Sequence[EdgeDecision]: ...


@dataclass(frozen=True, slots=True)
class LexicalClassifier:
    """The default: `mnemo_mdn.edge_classification.classify`, pure."""

    options: ClassifierOptions = field(default_factory=ClassifierOptions)

    async def classify(
        self, document: DocumentKeys, candidates: Sequence[DocumentKeys], rarity: Rarity
    ) -> Sequence[EdgeDecision]:
        return classify(document, candidates, rarity, self.options)


class KeysCache:
    """What the classifier read off recently seen documents (`document_keys`), least recently used
    first out. Reading a document costs more than classifying it against its candidates, and the
    same documents are candidates of many new ones. An entry serves only while the document's
    title and body are the ones it was read from."""

    def __init__(self, size: int = 20_000) -> None:
        self._size = size
        self._entries: OrderedDict[tuple[uuid.UUID, str, str], tuple[str, str | None, DocumentKeys]]
        self._entries = OrderedDict()
        self.hits = 0

    def keys(self, tenant: uuid.UUID, corpus: str, document: TextDocument) -> DocumentKeys:
        slot = (tenant, corpus, document.id)
        entry = self._entries.get(slot)
        if entry is not None and entry[0] == document.title and entry[1] == document.body:
            self._entries.move_to_end(slot)
            self.hits += 1
            return entry[2]
        keys = document_keys(document)
        if self._size > 0:
            self._entries[slot] = (document.title, document.body, keys)
            self._entries.move_to_end(slot)
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)
        return keys


@dataclass(slots=True)
class Counts:
    documents: int = 0
    edges: int = 0
    rejected_decisions: int = 0


EDGE_EVENTS = uuid.UUID("6d6e656d-6f2e-6564-6765-2d6576656e74")
"""Namespace of edge event ids."""


def edge_event_id(tenant: uuid.UUID, corpus: str, decision: EdgeDecision) -> uuid.UUID:
    """The same edge decision always gets the same event id, whichever event led to it: a
    redelivered event publishes the same ids, and a citation found from both ends (the citing
    document's event and the cited one's) is one event, which ingest's inbox keeps once. A decision
    with another weight is another event."""
    name = "\x1f".join(
        (
            str(tenant),
            corpus,
            decision.source,
            decision.target,
            decision.etype,
            repr(decision.weight),
        )
    )
    return uuid.uuid5(EDGE_EVENTS, name)


def valid_decisions(
    document_id: str, candidate_ids: set[str], decisions: Sequence[EdgeDecision]
) -> tuple[list[EdgeDecision], list[str]]:
    """Decisions that join the document to one of its candidates with a catalog type and a weight
    in (0, 1], one per (source, target, type) (the heaviest, where the first was); and a reason for
    each one refused. A repeated edge is one edge: publishing it twice would write and audit it
    twice in one batch."""
    kept: list[EdgeDecision] = []
    refused: list[str] = []
    at: dict[tuple[str, str, str], int] = {}
    for decision in decisions:
        ends = {decision.source, decision.target}
        if decision.etype not in RELATION_TYPES:
            refused.append(f"type {decision.etype!r} is not in the relation catalog")
        elif not (math.isfinite(decision.weight) and 0.0 < decision.weight <= 1.0):
            refused.append(f"weight {decision.weight!r} is outside (0, 1]")
        elif document_id not in ends or not (ends - {document_id}) <= candidate_ids:
            refused.append(f"{decision.source} -> {decision.target} is not a candidate edge")
        elif decision.source == decision.target:
            refused.append("an edge from a document to itself")
        else:
            edge = (decision.source, decision.target, decision.etype)
            if edge not in at:
                at[edge] = len(kept)
                kept.append(decision)
            elif decision.weight > kept[at[edge]].weight:
                kept[at[edge]] = decision
    return kept, refused


class ClassifyDocument:
    """`document.persisted` in, persist commands for its edges out."""

    def __init__(
        self,
        directory: CorpusDirectory,
        source: CandidateSource,
        classifier: EdgeClassifier,
        cache: KeysCache | None = None,
    ) -> None:
        self._directory = directory
        self._source = source
        self._classifier = classifier
        self._cache = cache or KeysCache()
        self.counts = Counts()

    def new_batch(self) -> None:
        """The events handled next were received together: the candidate source checks each
        tenant's freshness once for them all."""
        self._source.new_batch()

    async def edges_for(
        self, envelope: Envelope[DocumentPersisted], trace: str | None = None
    ) -> tuple[list[Envelope[PersistRow]], list[str]]:
        """The persist commands for the document's edges, and the reasons of refused decisions.

        Raises `DocumentRefusedError` for an event that can never be classified, and
        `CorpusNotPublishedError` for a document of a draft or deprecated corpus (not classified).
        """
        data = envelope.data
        corpus = await self._directory.corpus(data.corpus)
        if corpus is None:
            raise DocumentRefusedError(
                f"corpus {data.corpus!r} is not a registered store corpus (`mnemo corpus list`)"
            )
        status = await self._directory.status(data.corpus)
        if status != "published":
            raise CorpusNotPublishedError(data.corpus, status or "not registered")
        if data.store != corpus.documents.name:
            raise DocumentRefusedError(
                f"store {data.store!r} is not the documents store of corpus {data.corpus!r}"
                f" ({corpus.documents.name!r})"
            )
        title = data.values.get(corpus.title_column)
        body = data.values.get(corpus.body_column) if corpus.body_column else None
        document = TextDocument(
            str(data.id),
            title if isinstance(title, str) else "" if title is None else str(title),
            body if isinstance(body, str) or body is None else str(body),
        )
        scope, scope_values = self._scope(corpus, data)
        keys = self._cache.keys(envelope.tenant, corpus.name, document)
        try:
            around = await self._source.neighbourhood(
                envelope.tenant, corpus, document.id, candidate_query(keys), keys_of(keys), scope
            )
        except CorpusGoneError:
            self._directory.forget(data.corpus)
            raise
        candidates = [
            self._cache.keys(envelope.tenant, corpus.name, TextDocument(c.id, c.title, c.body))
            for c in around.candidates
        ]
        decisions = await self._classifier.classify(
            keys, candidates, Rarity(dict(around.frequencies))
        )
        kept, refused = valid_decisions(document.id, {c.id for c in candidates}, decisions)
        self.counts.documents += 1
        self.counts.edges += len(kept)
        self.counts.rejected_decisions += len(refused)
        commands = [
            new_envelope(
                PersistRow(
                    store=corpus.relations.name, values=self._row(corpus, decision, scope_values)
                ),
                tenant=envelope.tenant,
                producer=PRODUCER,
                event_type=PERSIST,
                event_id=edge_event_id(envelope.tenant, corpus.name, decision),
                trace=trace,
            )
            for decision in kept
        ]
        return commands, refused

    def _scope(
        self, corpus: StoreCorpus, data: DocumentPersisted
    ) -> tuple[Scope, dict[str, str | int | float | bool]]:
        columns = corpus.scope_columns
        values: dict[str, str | int | float | bool] = {}
        for column in columns:
            value = data.values.get(column)
            if value is None or isinstance(value, (list, dict)):
                raise DocumentRefusedError(
                    f"the document has no value for {column!r}, the scope column of corpus"
                    f" {corpus.name!r}: its edges could join another end-client's documents"
                )
            values[column] = value
        if not values:
            return Scope(), values
        where = " and ".join(f"{column} == '${{{column}}}'" for column in columns)
        return Scope(where, {c: str(v) for c, v in values.items()}), values

    @staticmethod
    def _row(
        corpus: StoreCorpus,
        decision: EdgeDecision,
        scope_values: Mapping[str, str | int | float | bool],
    ) -> dict[str, str | int | float | bool | None]:
        numeric = corpus.id_type.name in ("INTEGER", "BIGINT")
        row: dict[str, str | int | float | bool | None] = {
            corpus.from_column: int(decision.source) if numeric else decision.source,
            corpus.to_column: int(decision.target) if numeric else decision.target,
            corpus.etype_column: decision.etype,
            corpus.weight_column: decision.weight,
        }
        for column, value in scope_values.items():
            if corpus.relations.column(column) is not None:
                row[column] = value
        return row
