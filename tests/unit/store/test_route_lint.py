"""Route lint (CORPUS.md part A), pure: every scoped id of an active route is a published corpus."""

from __future__ import annotations

from mnemo_store.registry import Route, lint_routes

STATUSES = {"fees": "published", "drafty": "draft", "old": "deprecated", "rates": "published"}


def route(
    route_id: str, *scope: object, mode: str = "deterministic_prefetch", active: bool = True
) -> Route:
    return Route(route_id, "1", mode, scope, active)


def test_a_route_scoping_only_published_corpora_has_no_findings() -> None:
    assert lint_routes([route("qa", "fees", "rates")], STATUSES) == []


def test_an_unknown_id_and_an_unpublished_corpus_are_named_with_their_route() -> None:
    findings = lint_routes([route("qa", "fees", "typo", "drafty", "old")], STATUSES)
    assert findings == [
        "qa@1: unknown corpus typo",
        "qa@1: corpus not published drafty",
        "qa@1: corpus not published old",
    ]


def test_tool_routes_are_linted_too() -> None:
    assert lint_routes([route("ask", "drafty", mode="tool")], STATUSES) == [
        "ask@1: corpus not published drafty"
    ]


def test_inactive_routes_are_not_linted() -> None:
    assert lint_routes([route("retired", "typo", "old", active=False)], STATUSES) == []


def test_findings_come_in_route_order_then_scope_order() -> None:
    routes = [route("b", "old"), route("a", "typo", "drafty"), route("c", "fees")]
    assert lint_routes(routes, STATUSES) == [
        "b@1: corpus not published old",
        "a@1: unknown corpus typo",
        "a@1: corpus not published drafty",
    ]


def test_a_scope_entry_that_is_not_a_string_is_a_finding_not_a_crash() -> None:
    assert lint_routes([route("odd", 42, "fees")], STATUSES) == [
        "odd@1: scope entry 42 is not a corpus id (a string)"
    ]


def test_an_empty_registry_makes_every_scoped_id_unknown() -> None:
    assert lint_routes([route("qa", "fees")], {}) == ["qa@1: unknown corpus fees"]
