"""The retrieval contract: what any corpus offers, wherever its content comes from."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, runtime_checkable

from mnemo_corpus.entry import RetrievalEntry


@runtime_checkable
class CorpusProtocol(Protocol):
    """A searchable collection of `RetrievalEntry` objects.

    Retrieval code accepts any object with these four members; nothing needs to inherit from
    this class. `version` identifies the loaded snapshot, so a caller can tell whether what it
    computed from the corpus is still current.
    """

    @property
    def name(self) -> str:
        """A human-readable label for the corpus."""
        ...

    @property
    def version(self) -> str:
        """A stable identifier of the loaded content."""
        ...

    def entries(self) -> Iterable[RetrievalEntry]:
        """Every entry, in the corpus's own order."""
        ...

    def get(self, path: str) -> RetrievalEntry | None:
        """The entry stored under `path`, or None when there is none."""
        ...
