"""The memory history of adaptive store corpora (`mnemo.nav_outcomes`, MDN.md §5).

One row per navigation: (tenant, corpus, scope digest, sequence), the query, the selected path,
the edges actually traversed and the outcome score. The sequence is per (tenant, corpus, scope) and
is allocated while the corpus's revision row is locked (`TenantTransaction.lock_graph_revision`),
so concurrent navigations of one scope never take the same number.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

RECENT_SQL: Final = (
    "SELECT seq, path, score FROM mnemo.nav_outcomes"
    " WHERE corpus_id = $1 AND scope = $2 ORDER BY seq DESC LIMIT $3"
)
INSERT_SQL: Final = (
    "INSERT INTO mnemo.nav_outcomes"
    " (axon_tenant, corpus_id, scope, seq, query, path, traversed, score)"
    " VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8)"
)
LOCK_REVISION_SQL: Final = (
    "SELECT revision FROM mnemo.graph_revisions WHERE corpus_id = $1 FOR UPDATE"
)
# A corpus never written has no revision row to lock; its navigations serialise on this instead.
ADVISORY_LOCK_SQL: Final = "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))"


@dataclass(frozen=True, slots=True)
class StoredOutcome:
    """One remembered navigation, as memory reads it back."""

    sequence: int
    path: tuple[str, ...]
    score: float
