"""`MnemoCorpus(url, corpus_id, token)`: a corpus served by a Mnemo navigator as a
`CorpusProtocol` (docs/specs/CORPUS.md B): `entries()` pages through the corpus's documents,
`get(path)` looks one up by id, `version` is the graph revision the entries were read at.

It satisfies the protocol structurally, without importing the corpus library (this package
depends on httpx and pydantic only): `CorpusEntry` has the fields of `mnemo_corpus.RetrievalEntry`,
so retrieval code that reads those reads these.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from mnemo_client.client import DEFAULT_TIMEOUT, MnemoClient
from mnemo_client.retry import RetryPolicy


@dataclass(frozen=True, slots=True)
class CorpusEntry:
    """One document as a retrieval entry: `path` is its id, `summary` its title, `content` its
    body (its title when it has none), `metadata` holds its `source_uri`."""

    path: str
    category: str
    content: str
    summary: str | None = None
    related: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)


class MnemoCorpus:
    """A corpus served by a Mnemo navigator, as a `CorpusProtocol`. With `cache=True` (the
    default) the entries are read once; `refresh()` reads them again on next use."""

    def __init__(
        self,
        url: str,
        corpus_id: str,
        token: str,
        *,
        page_size: int = 500,
        cache: bool = True,
        timeout: float = DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if not 1 <= page_size <= 1000:
            raise ValueError(f"page_size must be between 1 and 1000, got {page_size}")
        if not corpus_id:
            raise ValueError("corpus_id must not be empty")
        self._client = MnemoClient(url, token, timeout=timeout, retry=retry, transport=transport)
        self._corpus_id = corpus_id
        self._page_size = page_size
        self._cache = cache
        self._entries: dict[str, CorpusEntry] | None = None
        self._revision: int | None = None

    @property
    def name(self) -> str:
        return f"mnemo:{self._corpus_id}"

    @property
    def version(self) -> str:
        """The graph revision the entries were read at."""
        self._load()
        return str(self._revision)

    def entries(self) -> Iterator[CorpusEntry]:
        return iter(self._load().values())

    def get(self, path: str) -> CorpusEntry | None:
        return self._load().get(path)

    def refresh(self) -> None:
        self._entries = None

    def close(self) -> None:
        self._client.close()

    def _load(self) -> dict[str, CorpusEntry]:
        if self._entries is not None and self._cache:
            return self._entries
        entries: dict[str, CorpusEntry] = {}
        revision: int | None = None
        after: str | None = None
        while True:
            page = self._client.documents(self._corpus_id, after=after, limit=self._page_size)
            if revision is None:
                revision = page.revision
            for document in page.documents:
                entries[document.id] = CorpusEntry(
                    path=document.id,
                    category="",
                    content=document.body if document.body is not None else document.title,
                    summary=document.title,
                    metadata={"source_uri": document.source_uri},
                )
            if page.next_after is None:
                break
            after = page.next_after
        self._entries, self._revision = entries, revision
        return entries
