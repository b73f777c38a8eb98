"""Errors of the edge classifier."""

from __future__ import annotations


class ClassifierError(Exception):
    """Base of every error raised by the edge classifier."""


class DocumentRefusedError(ClassifierError):
    """A `document.persisted` event that can never be classified (dead-lettered with the reason)."""


class CorpusGoneError(DocumentRefusedError):
    """The corpus's documents store is not what the registry said: dropped, or changed since."""


class CorpusNotPublishedError(ClassifierError):
    """The document's corpus is registered but not `published` (a draft, or deprecated): its
    documents are not classified. Not a fault of the event: it is skipped and counted, not
    dead-lettered."""

    def __init__(self, corpus: str, status: str) -> None:
        super().__init__(
            f"corpus {corpus!r} is {status}; only published corpora are classified "
            "(`mnemo corpus publish`)"
        )
        self.corpus = corpus
        self.status = status


class ChatAnswerError(ClassifierError):
    """The chat API's answer is not a JSON list of edge decisions."""
