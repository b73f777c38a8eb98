"""The event runtime against a real Kafka broker: a partition with a large backlog does not keep a
consumer's other partitions waiting."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence

import pytest
from aiokafka import AIOKafkaProducer
from mnemo_events import PersistRow, new_envelope
from mnemo_events.broker import create_broker, encode
from mnemo_events.consumer import Received, Rejection, build_consumer
from mnemo_events.provisioning import ensure_topics
from mnemo_events.settings import KafkaSettings

pytestmark = pytest.mark.timeout(120)

BACKLOG = 3000
"""Records of the busy tenant (about 1.8 MB: more than the client's default fetch per partition)."""
QUIET = 20


def _record(tenant: uuid.UUID, name: str) -> tuple[bytes, bytes]:
    envelope = new_envelope(
        PersistRow(store="notes", values={"name": name, "body": "x" * 400}),
        tenant=tenant,
        producer="test",
        event_type="mnemo.persist.v1",
    )
    return encode(envelope)  # type: ignore[arg-type]


async def _produce(bootstrap: str, topic: str, partition: int, tenant: uuid.UUID, n: int) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=20)
    await producer.start()
    try:
        futures = []
        for k in range(n):
            key, value = _record(tenant, f"{tenant}-{k}")
            futures.append(await producer.send(topic, value, key=key, partition=partition))
        await asyncio.gather(*futures)
    finally:
        await producer.stop()


@pytest.mark.parametrize("batch", [False, True])
async def test_a_tenant_on_a_quiet_partition_is_served_while_another_partition_has_a_backlog(
    kafka_bootstrap: str, batch: bool
) -> None:
    settings = KafkaSettings(
        bootstrap=kafka_bootstrap, partitions=3, batch_timeout_ms=50, graceful_timeout_seconds=3
    )
    topic = f"test.fairness.{uuid.uuid4().hex[:12]}.v1"
    await ensure_topics(settings, [topic])
    busy, quiet = uuid.uuid4(), uuid.uuid4()
    # The backlog is on the broker first, then the quiet tenant's few records.
    await _produce(kafka_bootstrap, topic, 2, busy, BACKLOG)
    await _produce(kafka_bootstrap, topic, 0, quiet, QUIET)

    order: list[uuid.UUID] = []
    done = asyncio.Event()

    async def handler(items: Sequence[Received[PersistRow]]) -> Sequence[Rejection]:
        for item in items:
            order.append(item.envelope.tenant)
        if order.count(quiet) == QUIET:
            done.set()
        await asyncio.sleep(0.001 * len(items))  # simulated work per record, not synchronisation
        return []

    broker = create_broker(settings, client_id="test")
    stopping = asyncio.Event()
    build_consumer(
        broker,
        topic=topic,
        group=f"test.{uuid.uuid4().hex[:8]}",
        data_model=PersistRow,
        handler=handler,
        settings=settings,
        stopping=stopping,
        batch=batch,
    )
    await broker.start()
    try:
        await asyncio.wait_for(done.wait(), 90)
    finally:
        stopping.set()
        await broker.stop()

    waited = order.index(quiet)
    last_quiet = len(order) - order[::-1].index(quiet)
    before_done = last_quiet - QUIET
    # One partition's fetch is bounded (`max_partition_fetch_bytes`): the quiet tenant waits for
    # at most two fetches of the backlog, not for its first megabyte (the client's default: about
    # 1,700 of these records).
    per_fetch = settings.max_partition_fetch_bytes // len(_record(busy, "size")[1])
    assert 2 * per_fetch < 1_200
    assert before_done < 2 * per_fetch, (waited, before_done, per_fetch)
