"""A Kafka navigate request's `client` object confines it like a token's claim: an empty one is
refused (a dead letter with the reason), never read as "the whole tenant"."""

from __future__ import annotations

import uuid

import pytest
from mnemo_events.models import NavigateRequested
from pydantic import ValidationError


def _request(client: object) -> NavigateRequested:
    return NavigateRequested.model_validate(
        {"request_id": str(uuid.uuid4()), "corpus": "Memory", "query": "q", "client": client}
    )


@pytest.mark.parametrize("client", [{}, {"tenant_id": ""}, {"": "c1"}, [], ""], ids=repr)
def test_a_client_that_names_no_end_client_is_refused(client: object) -> None:
    with pytest.raises(ValidationError, match="client"):
        _request(client)


def test_a_named_client_and_no_client_are_accepted() -> None:
    assert _request({"tenant_id": "c1"}).client == {"tenant_id": "c1"}
    assert _request(None).client is None


@pytest.mark.parametrize(
    "field",
    [
        {"query": "a\x00b"},
        {"where": "title = 'a\x00'"},
        {"from_id": "\x00"},
        {"params": {"p": "x\x00"}},
        {"params": {"p\x00": "x"}},
    ],
    ids=repr,
)
def test_a_nul_in_any_text_postgres_would_receive_is_refused_at_decoding(
    field: dict[str, object],
) -> None:
    with pytest.raises(ValidationError):
        NavigateRequested.model_validate(
            {"request_id": str(uuid.uuid4()), "corpus": "Memory", "query": "q", **field}
        )


@pytest.mark.parametrize("query", ["", "  "])
def test_a_blank_query_is_a_request_only_with_a_seed_document(query: str) -> None:
    fields = {"request_id": str(uuid.uuid4()), "corpus": "Memory", "query": query}
    assert NavigateRequested.model_validate({**fields, "from_id": "d1"}).from_id == "d1"
    with pytest.raises(ValidationError, match="query is empty"):
        NavigateRequested.model_validate(fields)
