"""In-memory adapters of the classifier's ports (`mnemo_edge_classifier.use_cases`), first-class like
the Postgres and Kafka ones: the use case and the batch handler run on them in unit tests, and one
contract suite (`tests/integration/edge_classifier/test_ports_contract.py`) holds them to what the
real adapters do.

- `MemoryCorpora`: the registry's store corpora and their statuses (`CorpusDirectory`).
- `MemoryCandidates`: each tenant's documents per documents store, answered by a
  `mnemo_mdn.lexical_index.ScopeIndex` built over the documents in scope at each read: what
  `StoreCandidates` reads from Postgres under row-level security (`CandidateSource`). A tenant
  sees only its own documents. A scope is the use case's: an equality on each of its `params`,
  named after the column it binds (`ClassifyDocument` builds no other). A dropped store raises
  `CorpusGoneError`, as a dropped table does.
- `MemoryEdgePublisher`: the persist commands published, in order (`EdgePublisher`); told to
  fail, it raises as a broker that is away does.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import defaultdict
from collections.abc import Awaitable, Mapping, Sequence

from mnemo_events import Envelope, PersistRow
from mnemo_mdn.edge_classification import (
    DEFAULT_OPTIONS,
    CandidateQuery,
    ClassifierOptions,
    TextDocument,
)
from mnemo_mdn.lexical_index import ScopeIndex
from mnemo_store import Scope, StoreCorpus
from mnemo_store.candidates import CandidateDocument

from mnemo_edge_classifier.errors import CorpusGoneError
from mnemo_edge_classifier.use_cases import Neighbourhood


class MemoryCorpora:
    """`CorpusDirectory` in memory: `add` registers a store corpus with a status."""

    def __init__(self) -> None:
        self._corpora: dict[str, StoreCorpus] = {}
        self._statuses: dict[str, str] = {}
        self.forgotten: list[str] = []

    def add(self, corpus: StoreCorpus, status: str = "published") -> None:
        self._corpora[corpus.name] = corpus
        self._statuses[corpus.name] = status

    def set_status(self, corpus_id: str, status: str) -> None:
        self._statuses[corpus_id] = status

    async def corpus(self, corpus_id: str) -> StoreCorpus | None:
        return self._corpora.get(corpus_id)

    async def status(self, corpus_id: str) -> str | None:
        return self._statuses.get(corpus_id)

    def forget(self, corpus_id: str) -> None:
        self.forgotten.append(corpus_id)


class MemoryCandidates:
    """`CandidateSource` in memory; see the module docstring. `reads` lists each read's tenant and
    scope, `batches` counts `new_batch` calls."""

    def __init__(self, limit: int = 1000, options: ClassifierOptions = DEFAULT_OPTIONS) -> None:
        self._limit = limit
        self._options = options
        # (tenant, documents store) -> document id -> the row's values
        self._rows: dict[tuple[uuid.UUID, str], dict[str, dict[str, object]]] = defaultdict(dict)
        self._dropped: set[str] = set()
        self.reads: list[tuple[uuid.UUID, Scope]] = []
        self.batches = 0

    def put(self, tenant: uuid.UUID, corpus: StoreCorpus, values: Mapping[str, object]) -> None:
        """Write (or replace) one row of `corpus`'s documents store for `tenant`."""
        self._rows[(tenant, corpus.documents.name)][str(values[corpus.id_column])] = dict(values)

    def delete(self, tenant: uuid.UUID, corpus: StoreCorpus, document_id: str) -> None:
        self._rows[(tenant, corpus.documents.name)].pop(document_id, None)

    def drop(self, corpus: StoreCorpus) -> None:
        """The documents store is dropped: every later read of it raises `CorpusGoneError`."""
        self._dropped.add(corpus.documents.name)

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
        self.reads.append((tenant, scope))
        if corpus.documents.name in self._dropped:
            raise CorpusGoneError(
                f"the documents store of corpus {corpus.name!r} is gone or changed:"
                f" store {corpus.documents.name!r} was dropped"
            )
        index = ScopeIndex(
            self._document(corpus, row)
            for row in self._rows[(tenant, corpus.documents.name)].values()
            if all(str(row.get(column)) == value for column, value in scope.params.items())
        )
        found, frequencies = index.neighbourhood(
            document_id, query, keys, self._options, self._limit
        )
        return Neighbourhood([CandidateDocument(d.id, d.title, d.body) for d in found], frequencies)

    @staticmethod
    def _document(corpus: StoreCorpus, row: Mapping[str, object]) -> TextDocument:
        title = row.get(corpus.title_column)
        body = row.get(corpus.body_column) if corpus.body_column else None
        return TextDocument(
            str(row[corpus.id_column]),
            "" if title is None else str(title),
            None if body is None else str(body),
        )


class MemoryEdgePublisher:
    """`EdgePublisher` in memory: `published` holds the commands in the order they were sent."""

    def __init__(self) -> None:
        self.published: list[Envelope[PersistRow]] = []
        self.failing: Exception | None = None

    async def enqueue(self, command: Envelope[PersistRow]) -> Awaitable[object]:
        if self.failing is not None:
            raise self.failing
        self.published.append(command)
        delivered: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        delivered.set_result(None)
        return delivered
