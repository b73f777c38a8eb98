"""The relay's Kafka publisher sends straight through the client the broker holds: the records
carry the stored headers (content type, trace context) and the event id as FastStream's
`correlation_id`, keyed by tenant into the partition the broker's own publish picks; a sampled
event still gets a producer span whose context the record carries, one span for the events one
transaction wrote in one trace."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest
from aiokafka import AIOKafkaConsumer
from faststream.kafka import KafkaBroker
from mnemo_events.broker import create_broker, kafka_producer
from mnemo_events.provisioning import ensure_topics
from mnemo_events.settings import KafkaSettings
from mnemo_service.relay import KafkaPublisher
from mnemo_store import GroupingPublisher, OutboxMessage
from mnemo_telemetry import tracing
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARTITIONS = 6


@pytest.fixture
async def broker(kafka_bootstrap: str) -> AsyncIterator[KafkaBroker]:
    started = create_broker(
        KafkaSettings(bootstrap=kafka_bootstrap, partitions=PARTITIONS), client_id="relay-test"
    )
    await started.start()
    yield started
    await started.stop()


async def read(bootstrap: str, topic: str, count: int) -> list[object]:
    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False
    )
    await consumer.start()
    try:
        records: list[object] = []
        while len(records) < count:
            batches = await consumer.getmany(timeout_ms=10_000)
            if not batches:
                raise AssertionError(f"{len(records)} of {count} records within 10 s")
            for batch in batches.values():
                records.extend(batch)
        return records
    finally:
        await consumer.stop()


def message(tenant: uuid.UUID, topic: str, n: int, flags: str) -> OutboxMessage:
    return OutboxMessage(
        tenant_id=tenant,
        seq=n,
        event_id=uuid.uuid4(),
        topic=topic,
        key=str(tenant).encode(),
        payload=f'{{"n":{n}}}',
        headers={
            "content-type": "application/json",
            "traceparent": f"00-{TRACE_ID}-{n + 1:016x}-{flags}",
        },
    )


async def test_records_go_through_the_brokers_client_with_their_headers_and_event_id(
    broker: KafkaBroker, kafka_bootstrap: str
) -> None:
    exporter = InMemorySpanExporter()
    tracing.configure_tracing(
        "test",
        None,
        sampler=tracing.sampler_from("parentbased_traceidratio", "0.01"),
        processor=SimpleSpanProcessor(exporter),
    )
    assert (
        kafka_producer(broker) is not None
    )  # the broker's client, found where FastStream keeps it
    topic = f"mnemo.test.relay-publisher.{uuid.uuid4().hex[:8]}.v1"
    await ensure_topics(KafkaSettings(bootstrap=kafka_bootstrap, partitions=PARTITIONS), [topic])
    tenant = uuid.uuid4()
    publisher = KafkaPublisher(broker)
    # A dropped trace (random flag set, sampled bit clear), then a sampled one.
    sent = [message(tenant, topic, 0, "02"), message(tenant, topic, 1, "01")]
    acks = [await publisher.enqueue(m) for m in sent]
    for ack in acks:
        await ack
    # The partition the broker's own publish picks for this key.
    reference = await broker.publish(b"{}", topic=topic, key=str(tenant).encode())
    records = await read(kafka_bootstrap, topic, 3)
    assert {r.partition for r in records} == {reference.partition}  # type: ignore[attr-defined]
    by_n = {r.value: dict(r.headers) for r in records}  # type: ignore[attr-defined]
    dropped = by_n[b'{"n":0}']
    assert dropped == {
        "content-type": b"application/json",
        "traceparent": sent[0].headers["traceparent"].encode(),
        "correlation_id": str(sent[0].event_id).encode(),
    }
    sampled = by_n[b'{"n":1}']
    assert sampled["correlation_id"] == str(sent[1].event_id).encode()
    spans = exporter.get_finished_spans()
    assert len(spans) == 1  # the sampled event's producer span, none for the dropped one
    assert format(spans[0].context.trace_id, "032x") == TRACE_ID
    assert sampled["traceparent"] == (f"00-{TRACE_ID}-{spans[0].context.span_id:016x}-01".encode())


async def test_events_written_together_in_a_sampled_trace_share_one_producer_span(
    broker: KafkaBroker, kafka_bootstrap: str
) -> None:
    exporter = InMemorySpanExporter()
    tracing.configure_tracing(
        "test",
        None,
        sampler=tracing.sampler_from("parentbased_traceidratio", "0.01"),
        processor=SimpleSpanProcessor(exporter),
    )
    topic = f"mnemo.test.relay-publisher.{uuid.uuid4().hex[:8]}.v1"
    await ensure_topics(KafkaSettings(bootstrap=kafka_bootstrap, partitions=PARTITIONS), [topic])
    tenant = uuid.uuid4()
    publisher = KafkaPublisher(broker)
    assert isinstance(publisher, GroupingPublisher)
    together = [message(tenant, topic, 0, "01") for _ in range(3)]  # one transaction's rows
    alone = message(tenant, topic, 7, "01")  # another trace
    acks = await publisher.enqueue_all([*together, alone])
    assert len(acks) == 4
    for ack in acks:
        await ack
    records = await read(kafka_bootstrap, topic, 4)
    spans = exporter.get_finished_spans()
    assert len(spans) == 2
    shared = next(
        s for s in spans if (s.attributes or {}).get("messaging.batch.message_count") == 3
    )
    parents = [dict(r.headers)["traceparent"] for r in records]  # type: ignore[attr-defined]
    assert parents.count(f"00-{TRACE_ID}-{shared.context.span_id:016x}-01".encode()) == 3
    assert [dict(r.headers)["correlation_id"] for r in records[:3]] == [  # type: ignore[attr-defined]
        str(m.event_id).encode() for m in together
    ]
