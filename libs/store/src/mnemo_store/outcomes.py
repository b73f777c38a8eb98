"""The memory history of adaptive store corpora (`mnemo.nav_outcomes`, MDN.md §5).

One row per navigation: (tenant, corpus, scope digest, sequence), the query, the selected path,
the edges actually traversed and the outcome score. The sequence is per (tenant, corpus, scope) and
is allocated while the scope's memory lock is held (`TenantTransaction.serialise_memory`), so
concurrent navigations of one scope never take the same number.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

# The last $3 outcomes of a scope from sequence $4 on (0: the last $3), newest first.
RECENT_SQL: Final = (
    "SELECT seq, path, score FROM mnemo.nav_outcomes"
    " WHERE corpus_id = $1 AND scope = $2 AND seq >= $4 ORDER BY seq DESC LIMIT $3"
)
# What a memory write needs of the outcomes before it, in one row: the last sequence and the scores
# oldest first (not their paths: it runs holding the scope's lock).
SCORES_SQL: Final = (
    "SELECT coalesce(max(seq), 0) AS last, coalesce(array_agg(score ORDER BY seq), '{}') AS scores"
    " FROM (SELECT seq, score FROM mnemo.nav_outcomes"
    " WHERE corpus_id = $1 AND scope = $2 ORDER BY seq DESC LIMIT $3) AS recent"
)
INSERT_SQL: Final = (
    "INSERT INTO mnemo.nav_outcomes"
    " (axon_tenant, corpus_id, scope, seq, query, path, traversed, score)"
    " VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8)"
)
# One transaction-scoped advisory lock per (tenant, corpus, scope): only that scope's memory
# writers wait on it, never a writer of the corpus's rows.
MEMORY_LOCK_SQL: Final = "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))"


def memory_lock_key(tenant: object, corpus_id: str, scope_digest: str) -> str:
    """The advisory lock's key: its own namespace, so it meets no other advisory lock."""
    return f"mnemo.memory/{tenant}/{corpus_id}/{scope_digest}"


@dataclass(frozen=True, slots=True)
class StoredOutcome:
    """One remembered navigation, as memory reads it back."""

    sequence: int
    path: tuple[str, ...]
    score: float


@dataclass(frozen=True, slots=True)
class RecentScores:
    """The scores of a scope's last outcomes, oldest first, and the last sequence taken (0: none)."""

    last_sequence: int
    scores: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class NewOutcome:
    """One navigation to remember: its sequence, query, selected path, the edges it followed
    (`{"from", "to", "etype"}` each) and its score."""

    sequence: int
    query: str
    path: tuple[str, ...]
    traversed: Sequence[Mapping[str, object]]
    score: float
