"""Errors of the edge classifier."""

from __future__ import annotations


class ClassifierError(Exception):
    """Base of every error raised by the edge classifier."""


class DocumentRefusedError(ClassifierError):
    """A `document.persisted` event that can never be classified (dead-lettered with the reason)."""


class CorpusGoneError(DocumentRefusedError):
    """The corpus's documents store is not what the registry said: dropped, or changed since."""


class ChatAnswerError(ClassifierError):
    """The chat API's answer is not a JSON list of edge decisions."""
