"""The Kafka broker every service uses (FastStream's `KafkaBroker`), built from `KafkaSettings`,
and the one way to publish an event: JSON envelope, tenant as key, W3C trace headers.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Sequence
from typing import Any, Protocol

from aiokafka.partitioner import DefaultPartitioner, murmur2
from faststream.kafka import KafkaBroker
from mnemo_telemetry.tracing import producer_span

from mnemo_events.models import Envelope, Message
from mnemo_events.security import broker_security
from mnemo_events.settings import KafkaSettings
from mnemo_events.tracing import outgoing_headers

CONTENT_TYPE = "application/json"


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
    """Send `envelope` to `topic` keyed by its tenant; returns once the broker has it. The send is
    a `send <topic>` producer span whose context the record's `traceparent` header carries."""
    key, value = encode(envelope)
    with producer_span(topic, tenant=str(envelope.tenant)):
        headers = outgoing_headers({"content-type": CONTENT_TYPE})
        if envelope.trace and "traceparent" not in headers:
            headers["traceparent"] = envelope.trace
        await broker.publish(value, topic=topic, key=key, headers=headers)
