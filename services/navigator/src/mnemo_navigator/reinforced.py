"""Reinforcements committed from a cached graph, kept to bring the graph forward later.

A navigation of an adaptive corpus reinforces the edges it followed in the transaction that
remembers it; the statement takes the corpus's revision row (the store's revision trigger), and
every writer of the corpus (ingest, the classifier) waits for that row until the transaction
commits. So the transaction commits right after the reinforcement, without reading the revision it
left. The next navigation of the scope reads the corpus's revision anyway: when it is one past the
revision the reinforcement was planned from, that reinforcement is the only change since (it moved
the revision by one, and nothing else moved it), and the cached graph is brought forward by it
exactly as Postgres applied it, instead of refreshed from the rows.

Two reinforcements from one revision make that ambiguous (both moved the revision; only the
revision says how many did): neither is kept, and the next navigation refreshes.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Sequence
from typing import Final

from mnemo_mdn.memory import EdgeReinforcement

MAX_SCOPES: Final = 4096
"""Scopes whose last reinforcement is kept; the least recently reinforced is forgotten first (its
next navigation refreshes, as it would have anyway)."""


class Reinforced:
    """Per cache key, the last reinforcement committed: the revision it was planned from and its
    plan. Used by the event loop only (no lock)."""

    def __init__(self, max_scopes: int = MAX_SCOPES) -> None:
        self._max_scopes = max_scopes
        # Per key: the revision planned from, and the plan (None: two from that revision).
        self._plans: OrderedDict[Hashable, tuple[int, tuple[EdgeReinforcement, ...] | None]] = (
            OrderedDict()
        )

    def record(self, key: Hashable, revision: int, plan: Sequence[EdgeReinforcement]) -> None:
        """A reinforcement of `plan` (not empty: it moved the revision) committed, planned on the
        graph of `key` at `revision`."""
        known = self._plans.pop(key, None)
        ambiguous = known is not None and known[0] == revision
        self._plans[key] = (revision, None if ambiguous else tuple(plan))
        while len(self._plans) > self._max_scopes:
            self._plans.popitem(last=False)

    def forget(self, key: Hashable) -> None:
        """Reinforcements of `key` committed that no kept plan accounts for."""
        self._plans.pop(key, None)

    def take(self, key: Hashable, revision: int) -> tuple[EdgeReinforcement, ...] | None:
        """The plan that moved `key`'s graph from `revision - 1` to `revision`, when it is the only
        change between the two; None otherwise. Either way it is forgotten."""
        known = self._plans.pop(key, None)
        if known is None or known[0] + 1 != revision:
            return None
        return known[1]
