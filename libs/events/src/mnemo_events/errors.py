"""Errors of the event runtime."""

from __future__ import annotations


class EventsError(Exception):
    """Base of every error raised by mnemo_events."""


class Rejected(EventsError):  # noqa: N818 (a verdict on a message, not a failure of the code)
    """Raised by a handler for a message that can never succeed: it is dead-lettered at once with
    `reason`, without further attempts, and the partition moves on."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class TopicCreationError(EventsError):
    """A topic could not be created (other than because it already exists)."""
