"""Which producer may write which audit records: an allow-list checked before an event is appended.

Kafka carries no proof of who produced a record (not even with SASL: the broker authenticates a
producer and checks its ACLs, but a consumer never learns the producer's principal). So the audit
service judges the envelope's `producer` field, which the producer writes itself. The allow-list
keeps out events from producers the deployment does not know and records of a kind their producer
never writes (a navigator does not persist rows); it cannot tell a service from an impersonator of
that service that can write the topic. That part rests on the topic's ACLs (only the services'
principals may write `mnemo.audit.v1`): see docs/ARCHITECTURE.md §2.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from typing import Final, Literal

AuditKind = Literal["query", "persist", "prefetch", "delete"]

DEFAULT_PRODUCERS: Final[Mapping[str, frozenset[AuditKind]]] = {
    "mnemo.ingest": frozenset({"persist", "delete"}),
    "mnemo.navigator": frozenset({"query", "prefetch"}),
}
"""The deployment's own producers of audit events and the record kinds each writes."""


def producer_refusal(
    producer: str, kind: str, allowed: Mapping[str, Set[str]] = DEFAULT_PRODUCERS
) -> str | None:
    """Why an audit event from `producer` with a record of `kind` is not appended, or None."""
    kinds = allowed.get(producer)
    if kinds is None:
        known = ", ".join(sorted(allowed)) or "none"
        return (
            f"producer {producer[:80]!r} may not write audit events: the audit producers are "
            f"{known} (MNEMO_AUDIT_PRODUCERS)"
        )
    if kind not in kinds:
        return (
            f"producer {producer!r} may not write {kind!r} audit records, only "
            f"{', '.join(sorted(kinds)) or 'none'} (MNEMO_AUDIT_PRODUCERS)"
        )
    return None
