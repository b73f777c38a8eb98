"""The Kafka broker every service uses (FastStream's `KafkaBroker`), built from `KafkaSettings`,
and the one way to publish an event: JSON envelope, tenant as key, W3C trace headers.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Mapping, Sequence
from typing import Any, Protocol

from aiokafka.partitioner import DefaultPartitioner, murmur2
from faststream.kafka import KafkaBroker
from mnemo_telemetry.tracing import producer_span

from mnemo_events.models import Envelope, Message
from mnemo_events.security import broker_security
from mnemo_events.settings import KafkaSettings
from mnemo_events.tracing import outgoing_headers

CONTENT_TYPE = "application/json"
PRODUCER_BATCH_BYTES = 256 * 1024
"""Most bytes the producer gathers per partition into one request (the client's default is
16 KiB, about twenty persist commands: a classifier batch's thousands of edges, all keyed by one
tenant, took a broker round trip per twenty). Under the broker's 1 MiB message limit."""
CORRELATION_ID = "correlation_id"
"""FastStream's header for a message's correlation id (its consumers read it from there). A record
sent straight through the Kafka client carries its event id in it."""


class KafkaClient(Protocol):
    """What the relay uses of aiokafka's `AIOKafkaProducer`."""

    async def send(
        self,
        topic: str,
        value: bytes,
        key: bytes | None = None,
        *,
        headers: Sequence[tuple[str, bytes]] | None = None,
    ) -> Awaitable[object]: ...


def kafka_producer(broker: KafkaBroker) -> KafkaClient | None:
    """The started aiokafka producer `broker` publishes through, or None (not started yet, or a
    FastStream whose producer lives elsewhere)."""
    state: Any = getattr(getattr(broker.config, "producer", None), "_producer", None)
    producer: Any = getattr(state, "producer", None)
    if producer is None or not callable(getattr(producer, "send", None)):
        return None
    client: KafkaClient = producer
    return client


class KeyHashPartitioner:
    """Kafka's default partitioning (murmur2 of the key, as the Java client and aiokafka's
    `DefaultPartitioner` do) with each key's hash remembered: every Mnemo record is keyed by its
    tenant, so a process sees few keys, and aiokafka's pure-Python murmur2 cost about 5 us per
    record sent (ingest's relay sends one per outbox event). At most `max_keys` are kept; past
    that the memory starts again. A record without a key goes to a random partition, as before."""

    def __init__(self, max_keys: int = 4096) -> None:
        self._default = DefaultPartitioner()
        self._max_keys = max_keys
        self._hashes: dict[bytes, int] = {}

    def __call__(
        self, key: bytes | None, all_partitions: Sequence[int], available: Sequence[int]
    ) -> int:
        if key is None:
            return int(self._default(key, all_partitions, available))
        hashed = self._hashes.get(key)
        if hashed is None:
            if len(self._hashes) >= self._max_keys:
                self._hashes.clear()
            hashed = self._hashes[key] = murmur2(key) & 0x7FFFFFFF
        return all_partitions[hashed % len(all_partitions)]


def create_broker(
    settings: KafkaSettings, *, client_id: str, logger: logging.Logger | None = None
) -> KafkaBroker:
    """A broker for `settings`; nothing connects until it is started.

    Producers wait for the leader's acknowledgement and are idempotent, so a retried send never
    writes a message twice. FastStream's own topic auto-creation stays off: topics come from
    `mnemo_events.provisioning`. SASL and TLS come from the settings (`mnemo_events.security`).
    """
    return KafkaBroker(
        settings.bootstrap,
        client_id=client_id,
        request_timeout_ms=settings.request_timeout_ms,
        enable_idempotence=True,
        max_batch_size=PRODUCER_BATCH_BYTES,
        graceful_timeout=settings.graceful_timeout_seconds,
        allow_auto_create_topics=False,
        partitioner=KeyHashPartitioner(),
        logger=logger,
        security=broker_security(settings),
    )


def encode(envelope: Envelope[Message]) -> tuple[bytes, bytes]:
    """The (key, value) bytes of `envelope`: the tenant's uuid text and the JSON envelope."""
    return str(envelope.tenant).encode(), envelope.model_dump_json().encode()


async def publish(broker: KafkaBroker, topic: str, envelope: Envelope[Message]) -> None:
    """Send `envelope` to `topic` keyed by its tenant; returns once the broker has it."""
    await (await enqueue(broker, topic, envelope))


async def enqueue(
    broker: KafkaBroker, topic: str, envelope: Envelope[Message]
) -> Awaitable[object]:
    """Queue `envelope` for `topic`, keyed by its tenant; returns once it is queued, with what
    settles when the broker has it (or raises why it could not). The queueing is a `send <topic>`
    producer span whose context the record's `traceparent` header carries.

    Many records are sent faster queued one after the other and awaited together than sent
    concurrently: the producer batches what is queued, while concurrent senders finding a full
    batch all wait for it to drain and all wake when it does (thousands of wake-ups per batch)."""
    key, value = encode(envelope)
    with producer_span(topic, tenant=str(envelope.tenant)):
        headers = outgoing_headers({"content-type": CONTENT_TYPE})
        if envelope.trace and "traceparent" not in headers:
            headers["traceparent"] = envelope.trace
        return await send_record(broker, topic, value, key, headers, envelope.event_id)


async def send_record(
    broker: KafkaBroker,
    topic: str,
    value: bytes,
    key: bytes | None,
    headers: Mapping[str, str],
    event_id: uuid.UUID,
) -> Awaitable[object]:
    """Queue one record straight to the Kafka client the broker holds (FastStream's `publish` when
    it cannot be found), with `headers` and a `correlation_id` header naming the event; returns
    what settles when the broker has it."""
    producer = kafka_producer(broker)
    if producer is None:
        queued: Awaitable[object] = await broker.publish(
            value,
            topic=topic,
            key=key,
            headers=dict(headers),
            correlation_id=str(event_id),
            no_confirm=True,
        )
        return queued
    encoded = [(name, text.encode()) for name, text in headers.items()]
    encoded.append((CORRELATION_ID, str(event_id).encode()))
    return await producer.send(topic, value, key=key, headers=encoded)
