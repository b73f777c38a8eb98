"""The reinforcements a navigator keeps to bring a cached graph forward (`mnemo_navigator.reinforced`)."""

from __future__ import annotations

from mnemo_mdn.memory import EdgeReinforcement
from mnemo_navigator.reinforced import Reinforced

PLAN = (EdgeReinforcement("a", "b", "cite", 0.05),)
OTHER = (EdgeReinforcement("b", "c", "cite", -0.05),)


def test_a_plan_brings_its_graph_one_revision_forward_once() -> None:
    kept = Reinforced()
    kept.record("scope", 7, list(PLAN))
    assert kept.take("scope", 8) == PLAN
    assert kept.take("scope", 8) is None  # taken


def test_a_plan_is_no_use_past_the_next_revision_or_for_another_scope() -> None:
    kept = Reinforced()
    kept.record("scope", 7, list(PLAN))
    assert kept.take("other", 8) is None
    assert kept.take("scope", 9) is None  # someone else wrote too: the graph refreshes
    assert kept.take("scope", 8) is None  # and it is forgotten


def test_two_plans_from_one_revision_keep_neither() -> None:
    kept = Reinforced()
    kept.record("scope", 7, list(PLAN))
    kept.record("scope", 7, list(OTHER))
    assert kept.take("scope", 8) is None


def test_a_later_plan_replaces_an_earlier_one() -> None:
    kept = Reinforced()
    kept.record("scope", 7, list(PLAN))
    kept.record("scope", 8, list(OTHER))
    assert kept.take("scope", 9) == OTHER


def test_the_least_recently_reinforced_scope_is_forgotten_first() -> None:
    kept = Reinforced(max_scopes=2)
    for scope in ("a", "b", "a", "c"):
        kept.record(scope, 1, list(PLAN))
    assert kept.take("b", 2) is None
    assert kept.take("c", 2) == PLAN
