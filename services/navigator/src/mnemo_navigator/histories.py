"""The recent outcomes of the scopes navigated lately, kept so that a navigation reads only the
outcomes recorded since its scope's last one.

Every navigation of an adaptive corpus takes the procedural bias from its scope's last `horizon`
(1,000) outcomes. Read whole each time, with their paths, and made into objects, they were about a
tenth of the navigator's samples under issue 22's load (a py-spy profile, 60 s).

Why what is kept is exact. A scope's outcomes are only ever added, each with the sequence after the
last one there (taken holding the scope's lock), and only ever taken away by forgetting a document,
which deletes the document's row in the same transaction and so moves the corpus's reset mark
(`GraphReads.marks`: the revision of its last delete; it only grows). Between two snapshots with
the same reset mark, then, no outcome went away, and one holds all the other's outcomes or the
other way round. A navigation reads its scope's outcomes from the last one kept on (that one
included): when its snapshot has the same reset mark and holds that last outcome, it holds every
outcome kept, and its last outcomes are those followed by the ones read after it. Otherwise (the
reset mark moved, or the snapshot is older than what was kept and lacks that outcome, or the
tenant was erased) the scope's outcomes are read whole.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Final

from mnemo_mdn.memory import Outcome

MAX_OUTCOMES: Final = 50_000
"""Outcomes kept over all scopes: fifty scopes' full horizon, about 37 MB (some 750 bytes each with
a path of five UUID ids, `bench/outcome_history_bench.py`). The least recently navigated scope goes
first, and its next navigation reads it whole."""


@dataclass(frozen=True, slots=True)
class History:
    """A scope's last outcomes, oldest first, read in a snapshot with this reset mark."""

    reset: int
    outcomes: tuple[Outcome, ...]

    @property
    def last_sequence(self) -> int:
        """The sequence a navigation reads from (its outcome included); 0: read whole."""
        return self.outcomes[-1].sequence if self.outcomes else 0


class ScopeHistories:
    """Per cache key, the history last read. Used by the event loop only (no lock)."""

    def __init__(self, horizon: int, max_outcomes: int = MAX_OUTCOMES) -> None:
        self._horizon = horizon
        self._max_outcomes = max_outcomes
        self._held = 0
        self._histories: OrderedDict[Hashable, History] = OrderedDict()

    async def last_outcomes(
        self, key: Hashable, reset: int, read: Callable[[int], Awaitable[Sequence[Outcome]]]
    ) -> tuple[Outcome, ...]:
        """The last outcomes of `key` in a snapshot whose reset mark is `reset`, oldest first.
        `read(since)` reads that snapshot's last ones from sequence `since` on (0: from the
        first). From the last one kept on when that holds, else whole; kept for the next."""
        known = self.known(key, reset)
        if known is not None:
            outcomes = self.extended(key, known, reset, await read(known.last_sequence))
            if outcomes is not None:
                return outcomes
        return self.whole(key, reset, await read(0))

    def known(self, key: Hashable, reset: int) -> History | None:
        """What a snapshot whose reset mark is `reset` may take of `key`'s outcomes, reading its
        outcomes from `last_sequence` on (None: read them whole)."""
        history = self._histories.get(key)
        if history is None or history.reset != reset or not history.outcomes:
            return None
        self._histories.move_to_end(key)
        return history

    def extended(
        self, key: Hashable, known: History, reset: int, since: Sequence[Outcome]
    ) -> tuple[Outcome, ...] | None:
        """The last outcomes of `key` in a snapshot whose reset mark is `reset`, oldest first,
        given `since`: the snapshot's last ones from `known.last_sequence` on (`known` from
        `known(key, reset)`); kept for the next navigation. None when the snapshot lacks `known`'s
        last outcome (it is older than what was kept): read them whole then (`whole`)."""
        if len(since) >= self._horizon:  # the snapshot's last ones, all of them
            return self.whole(key, reset, since)
        if not since or since[0] != known.outcomes[-1]:
            return None
        return self._keep(key, History(reset, (*known.outcomes, *since[1:])[-self._horizon :]))

    def whole(self, key: Hashable, reset: int, last: Sequence[Outcome]) -> tuple[Outcome, ...]:
        """`last`, the last outcomes of `key` read whole in a snapshot whose reset mark is
        `reset` (oldest first), kept for the next navigation."""
        return self._keep(key, History(reset, tuple(last[-self._horizon :])))

    def _keep(self, key: Hashable, history: History) -> tuple[Outcome, ...]:
        old = self._histories.pop(key, None)
        if old is not None:
            self._held -= len(old.outcomes)
        if len(history.outcomes) <= self._max_outcomes:
            self._histories[key] = history
            self._held += len(history.outcomes)
        while self._held > self._max_outcomes:
            _, evicted = self._histories.popitem(last=False)
            self._held -= len(evicted.outcomes)
        return history.outcomes

    @property
    def outcomes_held(self) -> int:
        return self._held

    def __len__(self) -> int:
        return len(self._histories)
