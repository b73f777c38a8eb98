"""Hostile navigate requests over real Kafka, to a navigator consuming a requests topic of its own:
a `reply_to` naming a topic Mnemo does not answer on (another service's input, a topic that does not
exist) and a `client` claim that names no end-client are dead-lettered with their reasons at the
first attempt, and the request after them is still answered."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from mnemo_events import NavigateRequested, new_envelope
from mnemo_events.dead_letters import ATTEMPTS, REASON
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


def _request(tenant: uuid.UUID, corpus: str, **fields: Any) -> tuple[uuid.UUID, bytes, bytes]:
    request_id = uuid.uuid4()
    envelope = new_envelope(
        NavigateRequested.model_construct(
            request_id=request_id, corpus=corpus, query="alpha", **fields
        ),
        tenant=tenant,
        producer="test",
        event_type=NAVIGATE_REQUESTED,
    )
    # model_construct skips validation: a producer is free to send what the model would refuse.
    return request_id, str(tenant).encode(), envelope.model_dump_json().encode()


async def _send(bootstrap: str, topic: str, records: list[tuple[bytes, bytes]]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        for key, value in records:
            await producer.send_and_wait(topic, value, key=key)
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
    into_persist, *_ = persist = _request(tenant, arena.name, reply_to=PERSIST)
    into_nowhere, *_ = nowhere = _request(tenant, arena.name, reply_to=missing)
    empty_client, *_ = empty = _request(tenant, arena.name, client={})
    fine, *_ = good = _request(tenant, arena.name, reply_to=NAVIGATE_COMPLETED)
    started = time.monotonic()
    await _send(kafka_bootstrap, requests_topic, [r[1:] for r in (persist, nowhere, empty, good)])

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
