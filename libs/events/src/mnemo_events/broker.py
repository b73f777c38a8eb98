"""The Kafka broker every service uses (FastStream's `KafkaBroker`), built from `KafkaSettings`,
and the one way to publish an event: JSON envelope, tenant as key, W3C trace headers.
"""

from __future__ import annotations

import logging

from faststream.kafka import KafkaBroker
from mnemo_telemetry.tracing import producer_span

from mnemo_events.models import Envelope, Message
from mnemo_events.settings import KafkaSettings
from mnemo_events.tracing import outgoing_headers

CONTENT_TYPE = "application/json"


def create_broker(
    settings: KafkaSettings, *, client_id: str, logger: logging.Logger | None = None
) -> KafkaBroker:
    """A broker for `settings`; nothing connects until it is started.

    Producers wait for the leader's acknowledgement and are idempotent, so a retried send never
    writes a message twice. FastStream's own topic auto-creation stays off: topics come from
    `mnemo_events.provisioning`.
    """
    return KafkaBroker(
        settings.bootstrap,
        client_id=client_id,
        request_timeout_ms=settings.request_timeout_ms,
        enable_idempotence=True,
        graceful_timeout=settings.graceful_timeout_seconds,
        allow_auto_create_topics=False,
        logger=logger,
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
