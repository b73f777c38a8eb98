"""Mnemo's event contracts: the envelope, the event models, topic names (and, for services, the
broker factory and dead-letter handling). Producers outside Mnemo can depend on this package alone."""

from mnemo_events.models import (
    SCHEMA_VERSION,
    AuditData,
    AuditRecorded,
    DocumentPersisted,
    Envelope,
    Message,
    NavigateCompleted,
    NavigateHit,
    NavigateRequested,
    PersistAudited,
    PersistRow,
    QueryAudited,
    envelope_json,
    new_envelope,
)
from mnemo_events.topics import (
    AUDIT,
    DATA_MODELS,
    DOCUMENT_PERSISTED,
    NAVIGATE_COMPLETED,
    NAVIGATE_REQUESTED,
    PERSIST,
    TOPICS,
    dead_letter_topic,
)

__all__ = [
    "AUDIT",
    "DATA_MODELS",
    "DOCUMENT_PERSISTED",
    "NAVIGATE_COMPLETED",
    "NAVIGATE_REQUESTED",
    "PERSIST",
    "SCHEMA_VERSION",
    "TOPICS",
    "AuditData",
    "AuditRecorded",
    "DocumentPersisted",
    "Envelope",
    "Message",
    "NavigateCompleted",
    "NavigateHit",
    "NavigateRequested",
    "PersistAudited",
    "PersistRow",
    "QueryAudited",
    "dead_letter_topic",
    "envelope_json",
    "new_envelope",
]
