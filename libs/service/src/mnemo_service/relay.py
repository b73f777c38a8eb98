"""The outbox relay's Kafka side: `KafkaPublisher`, the relay's publisher port over a service's
broker (the relay itself is `mnemo_store.OutboxRelay`)."""

from __future__ import annotations

from collections.abc import Awaitable

from faststream.kafka import KafkaBroker
from mnemo_events.tracing import context_from_headers, outgoing_headers, unsampled_as_is
from mnemo_store import OutboxMessage
from mnemo_telemetry.tracing import producer_span
from opentelemetry import context as otel_context


class KafkaPublisher:
    """A batch is sent in order and its acknowledgements awaited together (`PipelinedPublisher`)."""

    def __init__(self, broker: KafkaBroker) -> None:
        self._broker = broker

    async def publish(self, message: OutboxMessage) -> None:
        await (await self.enqueue(message))

    async def enqueue(self, message: OutboxMessage) -> Awaitable[object]:
        # The record continues the trace of the transaction that wrote it (its stored headers).
        stored = dict(message.headers)
        if unsampled_as_is(stored):  # a dropped trace: no span, the stored headers as they are
            passed: Awaitable[object] = await self._broker.publish(
                message.payload.encode(),
                topic=message.topic,
                key=message.key,
                headers=stored,
                no_confirm=True,
            )
            return passed
        parent = context_from_headers([(k, v.encode()) for k, v in stored.items()])
        token = otel_context.attach(parent)
        try:
            with producer_span(message.topic):
                headers = outgoing_headers(stored)
                sent: Awaitable[object] = await self._broker.publish(
                    message.payload.encode(),
                    topic=message.topic,
                    key=message.key,
                    headers=headers,
                    no_confirm=True,
                )
                return sent
        finally:
            otel_context.detach(token)
