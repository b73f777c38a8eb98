"""The query audit events go to the audit topic the settings name (the stack's by default)."""

from __future__ import annotations

import uuid

import pytest
from mnemo_auth import Principal
from mnemo_events.topics import AUDIT
from mnemo_navigator.app import build_navigator
from mnemo_navigator.fakes import InMemoryCatalogue, InMemoryStore
from mnemo_navigator.settings import Settings
from mnemo_navigator.use_cases import Caller, Navigator


def audit_topic_of(navigator: Navigator) -> str:
    caller = Caller(Principal(tenant=uuid.uuid4(), subject="agent"))
    event = navigator.query_audit(caller, "Memory", "navigate", "q", ["d1"], 1.0, 0.5, "digest", 7)
    return event.topic


@pytest.mark.parametrize(
    ("environment", "expected"),
    [({}, AUDIT), ({"MNEMO_NAVIGATOR_AUDIT_TOPIC": "bench.audit.v1"}, "bench.audit.v1")],
)
def test_query_audit_events_go_to_the_configured_topic(
    monkeypatch: pytest.MonkeyPatch, environment: dict[str, str], expected: str
) -> None:
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    navigator = build_navigator(Settings(), InMemoryStore(), InMemoryCatalogue())
    assert audit_topic_of(navigator) == expected
