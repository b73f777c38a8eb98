"""Topic names (ARCHITECTURE §4) and which event model each carries. Every topic is keyed by tenant."""

from __future__ import annotations

from typing import Final

from mnemo_events.models import (
    AuditRecorded,
    DocumentPersisted,
    ForgetRow,
    Message,
    NavigateCompleted,
    NavigateRequested,
    PersistRow,
)

PERSIST: Final = "mnemo.persist.v1"
FORGET: Final = "mnemo.forget.v1"
DOCUMENT_PERSISTED: Final = "mnemo.document.persisted.v1"
NAVIGATE_REQUESTED: Final = "mnemo.navigate.requested.v1"
NAVIGATE_COMPLETED: Final = "mnemo.navigate.completed.v1"
AUDIT: Final = "mnemo.audit.v1"
# The audit service's compacted checkpoint topic (one partition, not in TOPICS: no data model).
AUDIT_CHECKPOINTS: Final = "mnemo.audit.checkpoints.v1"
DEAD_LETTER_SUFFIX: Final = ".dlt"

DATA_MODELS: Final[dict[str, type[Message]]] = {
    PERSIST: PersistRow,
    FORGET: ForgetRow,
    DOCUMENT_PERSISTED: DocumentPersisted,
    NAVIGATE_REQUESTED: NavigateRequested,
    NAVIGATE_COMPLETED: NavigateCompleted,
    AUDIT: AuditRecorded,
}
"""The `data` model of each topic; the envelope's `type` is the topic name."""

TOPICS: Final = tuple(DATA_MODELS)


def dead_letter_topic(topic: str) -> str:
    """`<topic>.dlt`: where a consumer of `topic` republishes what it cannot process."""
    return topic + DEAD_LETTER_SUFFIX
