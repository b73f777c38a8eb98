"""A dead letter keeps its record's headers but the bearer token: a dead-letter topic holds no
credentials (a navigate request carries its caller's token in an `authorization` header)."""

from __future__ import annotations

import pytest
from mnemo_events.dead_letters import (
    AUTHORIZATION,
    REASON,
    DeadLetter,
    Delivery,
    dead_letter_headers,
)


@pytest.mark.parametrize("name", [AUTHORIZATION, "Authorization", "AUTHORIZATION"])
def test_a_dead_letter_drops_the_authorization_header_and_keeps_the_others(name: str) -> None:
    delivery = Delivery(
        topic="mnemo.navigate.requested.v1",
        partition=0,
        offset=7,
        key=b"k",
        value=b"{}",
        headers=((name, b"Bearer secret-token"), ("traceparent", b"00-abc")),
    )
    headers = dead_letter_headers(DeadLetter(delivery, "refused", 1), "mnemo.navigator")
    assert {k.lower() for k in headers} & {AUTHORIZATION} == set()
    assert "secret-token" not in "".join(headers.values())
    assert headers["traceparent"] == "00-abc"
    assert headers[REASON] == "refused"
