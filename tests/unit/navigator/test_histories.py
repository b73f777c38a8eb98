"""`ScopeHistories`: what a navigation keeps of its scope's outcomes gives, with the outcomes read
since, exactly the scope's last outcomes of its own snapshot, whatever happened in between:
outcomes remembered, documents forgotten (their outcomes deleted, the reset mark moved), the
tenant erased, and snapshots read late (older than what another navigation kept)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from hypothesis import example, given, settings
from hypothesis import strategies as st
from mnemo_mdn.memory import Outcome
from mnemo_navigator.histories import History, ScopeHistories

HORIZON = 5
DOCUMENTS = ("a", "b", "c", "d")


@dataclass(frozen=True)
class Snapshot:
    reset: int
    outcomes: tuple[Outcome, ...]  # every outcome of the scope, oldest first


@dataclass
class Scope:
    """One scope's outcomes and its corpus's marks, as Postgres holds them."""

    outcomes: list[Outcome] = field(default_factory=list)
    revision: int = 0
    reset: int = 0
    erased: bool = False

    def remember(self, paths: list[tuple[str, ...]]) -> None:
        if self.erased:  # an erased tenant's writes are refused (`TenantErasedError`)
            return
        for path in paths:
            last = self.outcomes[-1].sequence if self.outcomes else 0
            self.outcomes.append(Outcome(path, 0.1 * len(path), last + 1))

    def forget(self, document: str) -> None:
        if self.erased:
            return
        self.outcomes = [o for o in self.outcomes if document not in o.path]
        self.revision += 1
        self.reset = self.revision

    def erase(self) -> None:
        """Every row of the tenant gone, its marks with them; it takes no write again."""
        self.outcomes, self.revision, self.reset, self.erased = [], 0, 0, True

    def snapshot(self) -> Snapshot:
        return Snapshot(self.reset, tuple(self.outcomes))


def navigate(histories: ScopeHistories, key: str, snapshot: Snapshot) -> tuple[Outcome, ...]:
    """What the navigator does, against `snapshot`."""

    async def read(since: int) -> list[Outcome]:
        return [o for o in snapshot.outcomes if o.sequence >= since][-HORIZON:]

    return asyncio.run(histories.last_outcomes(key, snapshot.reset, read))


paths = st.lists(
    st.lists(st.sampled_from(DOCUMENTS), min_size=1, max_size=3).map(tuple), min_size=1, max_size=4
)
keys = st.sampled_from(("x", "y"))
steps = st.lists(
    st.one_of(
        st.tuples(st.just("remember"), keys, paths),
        st.tuples(st.just("forget"), keys, st.sampled_from(DOCUMENTS)),
        st.tuples(st.just("erase"), keys, st.none()),
        # A navigation in a snapshot taken now (0), or in one taken that many navigations ago.
        st.tuples(st.just("navigate"), keys, st.integers(0, 3)),
    ),
    max_size=60,
)


@settings(max_examples=500, deadline=None)
@example(  # a navigation reads, late, a snapshot older than the one the last navigation kept
    steps=[
        ("remember", "x", [("a",)]),
        ("navigate", "x", 0),
        ("remember", "x", [("b",)]),
        ("navigate", "x", 0),
        ("navigate", "x", 2),
    ],
    max_outcomes=4 * HORIZON,
)
@given(steps=steps, max_outcomes=st.sampled_from([0, 3, HORIZON, 4 * HORIZON]))
def test_what_is_kept_and_what_is_read_since_are_the_snapshots_last_outcomes(
    steps: list[tuple[str, str, object]], max_outcomes: int
) -> None:
    histories = ScopeHistories(HORIZON, max_outcomes)
    scopes = {"x": Scope(), "y": Scope()}
    taken: dict[str, list[Snapshot]] = {"x": [], "y": []}
    for action, key, argument in steps:
        scope = scopes[key]
        if action == "remember":
            assert isinstance(argument, list)
            scope.remember(argument)
        elif action == "forget":
            assert isinstance(argument, str)
            scope.forget(argument)
        elif action == "erase":
            scope.erase()
        else:
            assert isinstance(argument, int)
            taken[key].append(scope.snapshot())
            snapshot = taken[key][-1 - min(argument, len(taken[key]) - 1)]
            assert navigate(histories, key, snapshot) == snapshot.outcomes[-HORIZON:]
        assert histories.outcomes_held <= max_outcomes


def outcomes(*sequences: int) -> tuple[Outcome, ...]:
    return tuple(Outcome(("a",), 0.5, s) for s in sequences)


def test_a_snapshot_with_another_reset_mark_takes_nothing_kept() -> None:
    histories = ScopeHistories(HORIZON)
    histories.whole("k", 3, outcomes(1, 2))
    assert histories.known("k", 4) is None
    assert histories.known("k", 3) == History(3, outcomes(1, 2))


def test_a_snapshot_lacking_the_last_outcome_kept_is_read_whole() -> None:
    histories = ScopeHistories(HORIZON)
    histories.whole("k", 0, outcomes(1, 2, 3))
    known = histories.known("k", 0)
    assert known is not None
    assert histories.extended("k", known, 0, ()) is None  # read late: nothing from 3 on
    assert histories.extended("k", known, 0, outcomes(4)) is None  # no 3
    other = (Outcome(("b",), 0.5, 3), *outcomes(4))  # a 3, but not the one kept
    assert histories.extended("k", known, 0, other) is None
    assert histories.extended("k", known, 0, outcomes(3, 4)) == outcomes(1, 2, 3, 4)
    assert histories.known("k", 0) == History(0, outcomes(1, 2, 3, 4))


def test_the_least_recently_navigated_scope_goes_first_past_the_bound() -> None:
    histories = ScopeHistories(HORIZON, max_outcomes=6)
    histories.whole("old", 0, outcomes(1, 2, 3))
    histories.whole("new", 0, outcomes(1, 2, 3))
    assert histories.known("old", 0) is not None  # navigated again: now the most recent
    histories.whole("third", 0, outcomes(1))
    assert (histories.known("new", 0), len(histories), histories.outcomes_held) == (None, 2, 4)
