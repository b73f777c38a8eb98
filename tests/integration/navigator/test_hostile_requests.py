"""Hostile navigate requests over real Kafka, to a navigator consuming a requests topic of its own:
a `reply_to` naming a topic Mnemo does not answer on (another service's input, a topic that does not
exist), a `client` claim that names no end-client, and every request its bearer token does not
authorise (none, forged, expired, without `read`, for another tenant, naming another end-client,
a NUL in its query) are dead-lettered with their reasons at the first attempt, never answered, their
dead letters keep no token, and the request after them is still answered."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from mnemo_auth import DEVELOPMENT_SECRET, mint_token
from mnemo_events import NavigateRequested, new_envelope
from mnemo_events.dead_letters import ATTEMPTS, AUTHORIZATION, REASON
from mnemo_events.settings import KafkaSettings
from mnemo_events.topics import NAVIGATE_COMPLETED, NAVIGATE_REQUESTED, PERSIST
from mnemo_navigator.app import create_app
from mnemo_navigator.settings import Settings

from tests.integration.navigator.conftest import Declare, NewTenant, navigator_dsn

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
async def requests_topic(app_dsn: str, kafka_bootstrap: str) -> AsyncIterator[str]:
    """A navigator consuming `test.navigate.requested.<suffix>.v1` (its own group)."""
    suffix = uuid.uuid4().hex[:10]
    topic = f"test.navigate.requested.{suffix}.v1"
    settings = Settings(
        database_url=navigator_dsn(app_dsn),
        requests_topic=topic,
        group=f"test.navigator.{suffix}",
        pool_size=3,
        kafka=KafkaSettings(
            bootstrap=kafka_bootstrap, max_attempts=2, retry_backoff_seconds=0.05, partitions=1
        ),
    )
    runtime = create_app(settings)
    await runtime.start()
    try:
        yield topic
    finally:
        await runtime.stop()


Record = tuple[bytes, bytes, list[tuple[str, bytes]]]
"""A record to send: key, value, headers."""


def bearer(token: str) -> list[tuple[str, bytes]]:
    return [(AUTHORIZATION, f"Bearer {token}".encode())]


def _request(
    tenant: uuid.UUID,
    corpus: str,
    *,
    headers: list[tuple[str, bytes]] | None = None,
    query: str = "alpha",
    **fields: Any,
) -> tuple[uuid.UUID, Record]:
    """A request of `tenant`, carrying a valid read token of `tenant` unless `headers` is given."""
    request_id = uuid.uuid4()
    envelope = new_envelope(
        NavigateRequested.model_construct(
            request_id=request_id, corpus=corpus, query=query, **fields
        ),
        tenant=tenant,
        producer="test",
        event_type=NAVIGATE_REQUESTED,
    )
    if headers is None:
        headers = bearer(mint_token(tenant=tenant, secret=DEVELOPMENT_SECRET))
    # model_construct skips validation: a producer is free to send what the model would refuse.
    return request_id, (str(tenant).encode(), envelope.model_dump_json().encode(), headers)


async def _send(bootstrap: str, topic: str, records: list[Record]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        for key, value, headers in records:
            await producer.send_and_wait(topic, value, key=key, headers=headers)
    finally:
        await producer.stop()


async def _records_naming(
    bootstrap: str, topic: str, marks: set[bytes], wait: float
) -> dict[bytes, Any]:
    """The first record of `topic` holding each of `marks` in its value, within `wait` seconds."""
    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest", group_id=None
    )
    await consumer.start()
    found: dict[bytes, Any] = {}
    try:
        deadline = time.monotonic() + wait
        while marks - found.keys() and time.monotonic() < deadline:
            for batch in (await consumer.getmany(timeout_ms=300)).values():
                for record in batch:
                    for mark in marks:
                        if mark in (record.value or b"") and mark not in found:
                            found[mark] = record
    finally:
        await consumer.stop()
    return found


async def test_reply_to_another_topic_and_an_empty_client_are_dead_lettered_at_once(
    declare: Declare, new_tenant: NewTenant, requests_topic: str, kafka_bootstrap: str
) -> None:
    arena = await declare()
    tenant = await new_tenant()
    missing = f"test.no-such-topic.{uuid.uuid4().hex}"
    into_persist, persist = _request(tenant, arena.name, reply_to=PERSIST)
    into_nowhere, nowhere = _request(tenant, arena.name, reply_to=missing)
    empty_client, empty = _request(tenant, arena.name, client={})
    fine, good = _request(tenant, arena.name, reply_to=NAVIGATE_COMPLETED)
    started = time.monotonic()
    await _send(kafka_bootstrap, requests_topic, [persist, nowhere, empty, good])

    answered = await _records_naming(kafka_bootstrap, NAVIGATE_COMPLETED, {str(fine).encode()}, 60)
    assert str(fine).encode() in answered, "the request after the hostile ones was not answered"
    # Before the fix the request naming a missing topic held the consumer about 53 s per attempt.
    assert time.monotonic() - started < 30

    marks = {str(i).encode() for i in (into_persist, into_nowhere, empty_client)}
    letters = await _records_naming(kafka_bootstrap, requests_topic + ".dlt", marks, 30)
    reasons = {
        mark: {k: v.decode() for k, v in record.headers}[REASON] for mark, record in letters.items()
    }
    assert reasons.keys() == marks, reasons
    for request_id, topic in ((into_persist, PERSIST), (into_nowhere, missing)):
        reason = reasons[str(request_id).encode()]
        assert f"reply_to {topic!r} is not a completed topic" in reason, reason
        assert NAVIGATE_COMPLETED in reason, reason
        attempts = dict(letters[str(request_id).encode()].headers)[ATTEMPTS]
        assert attempts == b"1"
    reason = reasons[str(empty_client).encode()]
    assert reason.startswith("invalid envelope: data.client"), reason

    # Nothing was answered into the persist topic under those request ids.
    leaked = await _records_naming(kafka_bootstrap, PERSIST, {str(into_persist).encode()}, 3)
    assert not leaked


async def test_requests_their_token_does_not_authorise_are_dead_lettered_with_reasons_and_no_token(
    declare: Declare, new_tenant: NewTenant, requests_topic: str, kafka_bootstrap: str
) -> None:
    arena = await declare()
    tenant, other = await new_tenant(), await new_tenant()

    def token(**claims: Any) -> list[tuple[str, bytes]]:
        return bearer(mint_token(tenant=claims.pop("tenant", tenant), **claims))

    hostile = {
        "no token": _request(tenant, arena.name, headers=[]),
        "not a bearer header": _request(tenant, arena.name, headers=[(AUTHORIZATION, b"Basic x")]),
        "forged": _request(tenant, arena.name, headers=token(secret="not-the-navigator-key")),
        "expired": _request(
            tenant, arena.name, headers=token(secret=DEVELOPMENT_SECRET, ttl=timedelta(seconds=-60))
        ),
        "without read": _request(
            tenant, arena.name, headers=token(secret=DEVELOPMENT_SECRET, scopes=("write",))
        ),
        "another tenant's token": _request(
            tenant, arena.name, headers=token(tenant=other, secret=DEVELOPMENT_SECRET)
        ),
        "another end-client": _request(
            tenant,
            arena.name,
            headers=token(secret=DEVELOPMENT_SECRET, client={"tenant_id": "c1"}),
            client={"tenant_id": "c2"},
        ),
        "a client the token lacks": _request(tenant, arena.name, client={"tenant_id": "c2"}),
        "NUL in the query": _request(tenant, arena.name, query="alpha\x00' OR 1=1 --"),
    }
    expected = {
        "no token": "not authenticated: missing bearer token",
        "not a bearer header": "not authenticated: the Authorization header must be 'Bearer",
        "forged": "not authenticated: invalid token",
        "expired": "not authenticated: invalid token",
        "without read": "not authorised: this operation needs scope 'read'",
        "another tenant's token": f"but the token is for tenant {other}",
        "another end-client": "is not the token's client claim",
        "a client the token lacks": "is not the token's client claim",
        "NUL in the query": "invalid envelope: data.query",
    }
    fine, good = _request(tenant, arena.name)
    await _send(
        kafka_bootstrap, requests_topic, [record for _, record in hostile.values()] + [good]
    )

    answered = await _records_naming(kafka_bootstrap, NAVIGATE_COMPLETED, {str(fine).encode()}, 60)
    assert str(fine).encode() in answered, "the request after the hostile ones was not answered"

    marks = {str(request_id).encode(): case for case, (request_id, _) in hostile.items()}
    letters = await _records_naming(kafka_bootstrap, requests_topic + ".dlt", set(marks), 30)
    assert set(letters) == set(marks), f"not dead-lettered: {set(marks) - set(letters)}"
    for mark, record in letters.items():
        case: str = marks[mark]
        headers = {k.lower(): v for k, v in record.headers}
        assert expected[case] in headers[REASON].decode(), (case, headers[REASON])
        assert headers[ATTEMPTS] == b"1", case
        assert AUTHORIZATION not in headers, f"{case}: the dead letter kept the token"
        sent = [value.split()[-1] for _, value in hostile[case][1][2] if value.split()]
        kept = b"".join(value for _, value in record.headers)
        assert not [token for token in sent if token in kept], f"{case}: a token was kept"

    # None of them was answered, not even with an error.
    unanswered = await _records_naming(kafka_bootstrap, NAVIGATE_COMPLETED, set(marks), 3)
    assert not unanswered, [marks[m] for m in unanswered]
