"""The audit producers' allow-list: who may write which audit records."""

from __future__ import annotations

from mnemo_audit.producers import DEFAULT_PRODUCERS, producer_refusal
from mnemo_audit.settings import Settings


def test_the_services_own_producers_may_write_their_own_kinds_only() -> None:
    assert producer_refusal("mnemo.ingest", "persist") is None
    assert producer_refusal("mnemo.ingest", "delete") is None  # forgetting a document
    assert producer_refusal("mnemo.navigator", "query") is None
    refused = producer_refusal("mnemo.navigator", "persist")
    assert refused is not None
    assert "may not write 'persist' audit records, only prefetch, query" in refused
    assert producer_refusal("mnemo.ingest", "query") is not None
    assert producer_refusal("mnemo.navigator", "delete") is not None


def test_an_unknown_producer_is_refused_with_the_producers_that_are_allowed() -> None:
    refused = producer_refusal("forger\n", "query")
    assert refused is not None
    assert "'forger\\n' may not write audit events" in refused
    assert "mnemo.ingest, mnemo.navigator" in refused


def test_the_allow_list_is_a_setting() -> None:
    assert Settings().producers == DEFAULT_PRODUCERS
    configured = Settings(producers={"bench": frozenset({"query"})})
    assert producer_refusal("bench", "query", configured.producers) is None
    assert producer_refusal("mnemo.ingest", "persist", configured.producers) is not None
