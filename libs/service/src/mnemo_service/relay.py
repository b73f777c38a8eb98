"""The outbox relay's Kafka side: `KafkaPublisher`, the relay's publisher port over a service's
broker (the relay itself is `mnemo_store.OutboxRelay`).

The records go straight to the Kafka client the broker holds (aiokafka's `AIOKafkaProducer`: one
producer per process, idempotent, the broker's partitioner), not through FastStream's `publish`,
whose command object, middleware chain and random correlation id cost more per record than the
client's own send. What FastStream would add is kept: the stored headers (content type and trace
context) and a `correlation_id` header, here the event id (an id that names the event, where
FastStream's was random). `mnemo_events.broker.send_record` finds the client and sends; a broker
whose client cannot be found (another FastStream layout) is published through as before.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence

from faststream.kafka import KafkaBroker
from mnemo_events.broker import send_record
from mnemo_events.tracing import context_from_headers, outgoing_headers, unsampled_as_is
from mnemo_store import OutboxMessage
from mnemo_telemetry.tracing import producer_span
from opentelemetry import context as otel_context

BATCH_COUNT = "messaging.batch.message_count"
"""OpenTelemetry's attribute for the number of messages a producer span sent."""


class KafkaPublisher:
    """A batch is sent in order and its acknowledgements awaited together (`GroupingPublisher`):
    consecutive events of one topic with the same stored headers (the rows one transaction wrote
    in one trace, e.g. an HTTP write's) go under one producer span, each record carrying its
    context, instead of a span each."""

    def __init__(self, broker: KafkaBroker) -> None:
        self._broker = broker

    async def publish(self, message: OutboxMessage) -> None:
        await (await self.enqueue(message))

    async def enqueue(self, message: OutboxMessage) -> Awaitable[object]:
        # The record continues the trace of the transaction that wrote it (its stored headers).
        stored = dict(message.headers)
        if unsampled_as_is(stored):  # a dropped trace: no span, the stored headers as they are
            return await self._send(message, stored)
        parent = context_from_headers([(k, v.encode()) for k, v in stored.items()])
        token = otel_context.attach(parent)
        try:
            with producer_span(message.topic):
                return await self._send(message, outgoing_headers(stored))
        finally:
            otel_context.detach(token)

    async def enqueue_all(self, messages: Sequence[OutboxMessage]) -> list[Awaitable[object]]:
        acks: list[Awaitable[object]] = []
        start = 0
        try:
            while start < len(messages):
                first = messages[start]
                end = start + 1
                while (
                    end < len(messages)
                    and messages[end].topic == first.topic
                    and messages[end].headers == first.headers
                ):
                    end += 1
                await self._enqueue_group(messages[start:end], acks)
                start = end
        except Exception as error:  # this one and every later one failed; earlier ones stand
            failed: asyncio.Future[object] = asyncio.get_running_loop().create_future()
            failed.set_exception(error)
            acks.extend([failed] * (len(messages) - len(acks)))
        return acks

    async def _enqueue_group(
        self, group: Sequence[OutboxMessage], acks: list[Awaitable[object]]
    ) -> None:
        """Events of one topic with equal stored headers: one producer span (when sampled)."""
        stored = dict(group[0].headers)
        if unsampled_as_is(stored):
            for message in group:
                acks.append(await self._send(message, stored))
            return
        parent = context_from_headers([(k, v.encode()) for k, v in stored.items()])
        token = otel_context.attach(parent)
        try:
            with producer_span(group[0].topic) as span:
                if span.recording and len(group) > 1:
                    span.span.set_attribute(BATCH_COUNT, len(group))
                headers = outgoing_headers(stored)
                for message in group:
                    acks.append(await self._send(message, headers))
        finally:
            otel_context.detach(token)

    async def _send(self, message: OutboxMessage, headers: dict[str, str]) -> Awaitable[object]:
        return await send_record(
            self._broker,
            message.topic,
            message.payload.encode(),
            message.key,
            headers,
            message.event_id,
        )
