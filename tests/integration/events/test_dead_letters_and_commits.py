"""The event runtime against a real Kafka broker: dead letters and commit-after-work."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Sequence

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.structs import ConsumerRecord
from mnemo_events import PersistRow, new_envelope
from mnemo_events.broker import create_broker, encode
from mnemo_events.consumer import Received, Rejection, build_consumer
from mnemo_events.dead_letters import (
    ATTEMPTS,
    ORIGIN_OFFSET,
    ORIGIN_PARTITION,
    ORIGIN_TOPIC,
    REASON,
)
from mnemo_events.errors import Rejected
from mnemo_events.provisioning import ensure_topics
from mnemo_events.settings import KafkaSettings
from mnemo_events.topics import dead_letter_topic

from tests.waiting import eventually

pytestmark = pytest.mark.timeout(120)


def _settings(bootstrap: str) -> KafkaSettings:
    return KafkaSettings(
        bootstrap=bootstrap,
        partitions=1,
        max_attempts=3,
        retry_backoff_seconds=0.05,
        retry_backoff_max_seconds=0.2,
        batch_timeout_ms=50,
        graceful_timeout_seconds=3,
    )


def _row(tenant: uuid.UUID, name: str) -> tuple[bytes, bytes]:
    envelope = new_envelope(
        PersistRow(store="notes", values={"name": name}),
        tenant=tenant,
        producer="test",
        event_type="mnemo.persist.v1",
    )
    return encode(envelope)  # type: ignore[arg-type]


async def _produce(
    bootstrap: str, topic: str, records: Sequence[tuple[bytes | None, bytes]]
) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for key, value in records:
            await producer.send_and_wait(topic, value, key=key, headers=[("origin", b"test")])
    finally:
        await producer.stop()


async def _read_all(
    bootstrap: str, topic: str, count: int, wait: float = 30
) -> list[ConsumerRecord[bytes, bytes]]:
    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest", group_id=None
    )
    await consumer.start()
    records: list[ConsumerRecord[bytes, bytes]] = []
    try:
        deadline = asyncio.get_running_loop().time() + wait
        while len(records) < count and asyncio.get_running_loop().time() < deadline:
            batch = await consumer.getmany(timeout_ms=500)
            for items in batch.values():
                records.extend(items)
    finally:
        await consumer.stop()
    return records


async def _committed(bootstrap: str, topic: str, group: str) -> int | None:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False
    )
    await consumer.start()
    try:
        committed: int | None = await consumer.committed(TopicPartition(topic, 0))
        return committed
    finally:
        await consumer.stop()


async def _until(predicate: Callable[[], bool], wait: float = 30) -> None:
    async def holds() -> bool:
        return predicate()

    await eventually(holds, within=wait, every=0.05, what="condition not reached in time")


@pytest.mark.parametrize("batch", [False, True])
async def test_poison_messages_are_dead_lettered_with_reasons_and_the_rest_land(
    kafka_bootstrap: str, batch: bool
) -> None:
    settings = _settings(kafka_bootstrap)
    topic = f"test.events.{uuid.uuid4().hex[:12]}.v1"
    group = f"test.{uuid.uuid4().hex[:8]}"
    await ensure_topics(settings, [topic])
    tenant = uuid.uuid4()
    handled: list[str] = []

    async def handler(items: Sequence[Received[PersistRow]]) -> Sequence[Rejection]:
        rejections = []
        for item in items:
            name = str(item.envelope.data.values["name"])
            if name == "always-fails":
                raise RuntimeError("this row always fails")
            if name == "refused":
                if len(items) > 1:
                    rejections.append(Rejection(item.delivery, "refused by the handler"))
                    continue
                raise Rejected("refused by the handler")
        handled.extend(
            str(i.envelope.data.values["name"])
            for i in items
            if i.envelope.data.values["name"] != "refused"
        )
        return rejections

    broker = create_broker(settings, client_id="test")
    stopping = asyncio.Event()
    build_consumer(
        broker,
        topic=topic,
        group=group,
        data_model=PersistRow,
        handler=handler,
        settings=settings,
        stopping=stopping,
        batch=batch,
    )
    good_key, first = _row(tenant, "first")
    records: list[tuple[bytes | None, bytes]] = [
        (good_key, first),
        (good_key, b"{not json"),
        _row(tenant, "always-fails"),
        (str(uuid.uuid4()).encode(), _row(tenant, "wrong key")[1]),
        _row(tenant, "refused"),
        _row(tenant, "last"),
    ]
    await _produce(kafka_bootstrap, topic, records)
    await broker.start()
    try:
        await _until(lambda: "last" in handled)
        letters = await _read_all(kafka_bootstrap, dead_letter_topic(topic), 4)
    finally:
        stopping.set()
        await broker.stop()

    assert sorted(handled) == ["first", "last"]
    assert len(letters) == 4
    by_offset = {int(dict(r.headers)[ORIGIN_OFFSET]): r for r in letters}
    assert sorted(by_offset) == [1, 2, 3, 4]
    for offset, record in by_offset.items():
        headers = {k: v.decode() for k, v in record.headers}
        assert record.value == records[offset][1]
        assert record.key == records[offset][0]
        assert headers["origin"] == "test"
        assert headers[ORIGIN_TOPIC] == topic
        assert headers[ORIGIN_PARTITION] == "0"
    reasons = {
        offset: {k: v.decode() for k, v in r.headers}[REASON] for offset, r in by_offset.items()
    }
    attempts = {
        offset: {k: v.decode() for k, v in r.headers}[ATTEMPTS] for offset, r in by_offset.items()
    }
    assert reasons[1].startswith("invalid envelope")
    assert reasons[2] == "failed after 3 attempts: RuntimeError: this row always fails"
    assert attempts[2] == "3"
    assert reasons[3].startswith("key mismatch")
    assert reasons[4] == "refused by the handler"
    assert await _committed(kafka_bootstrap, topic, group) == len(records)


async def test_an_offset_commits_only_after_the_work_and_a_stop_mid_retry_loses_nothing(
    kafka_bootstrap: str,
) -> None:
    settings = _settings(kafka_bootstrap)
    topic = f"test.events.{uuid.uuid4().hex[:12]}.v1"
    group = f"test.{uuid.uuid4().hex[:8]}"
    await ensure_topics(settings, [topic])
    tenant = uuid.uuid4()
    await _produce(kafka_bootstrap, topic, [_row(tenant, "one"), _row(tenant, "two")])

    seen: list[str] = []
    outage = True

    async def handler(items: Sequence[Received[PersistRow]]) -> Sequence[Rejection]:
        for item in items:
            name = str(item.envelope.data.values["name"])
            seen.append(name)
            if name == "two" and outage:
                raise ConnectionError("database away")
        return []

    async def run_once() -> None:
        broker = create_broker(settings, client_id="test")
        stopping = asyncio.Event()
        build_consumer(
            broker,
            topic=topic,
            group=group,
            data_model=PersistRow,
            handler=handler,
            settings=settings,
            stopping=stopping,
            transient=(ConnectionError,),
        )
        await broker.start()
        try:
            if outage:
                # "two" fails transiently, again and again: it is never dead-lettered, and never
                # committed; "one" is.
                await _until(lambda: seen.count("two") >= 3)
            else:
                await _until(lambda: seen.count("two") >= 1 and seen[-1] == "two")
        finally:
            stopping.set()
            await broker.stop()

    await run_once()
    assert await _committed(kafka_bootstrap, topic, group) == 1
    outage = False
    seen.clear()
    await run_once()
    assert seen == ["two"]
    assert await _committed(kafka_bootstrap, topic, group) == 2
    assert await _read_all(kafka_bootstrap, dead_letter_topic(topic), 1, wait=2) == []
