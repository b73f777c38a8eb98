"""Consuming with commit-after-work, bounded retries and dead letters.

`Consumer.process` is the policy, free of FastStream: it decodes each record into an
`Envelope[data]` (a record that is not one, or whose key is not its tenant, is dead-lettered at
once), hands the valid ones to the service's handler, and retries a failing handler with
exponential back-off. A batch that fails as a whole is retried one message at a time, so one poison
message is dead-lettered alone and its neighbours still land. Only when every record of the batch
is either handled or dead-lettered does `process` return True and the caller commit the offsets.

`subscribe` wires it into a FastStream subscriber with `AckPolicy.MANUAL`: FastStream's default
commits before the handler runs (at most once); here the offset commits after the work.

Errors listed as `transient` (a database that is down, a broker that is away, a missing grant)
are retried without bound while the service runs: an outage delays messages, it never
dead-letters them, and `Consumer.outage` names it until a call succeeds again (readiness reports
it: `mnemo_events.readiness.consumer_healthy`). When the service stops mid-retry, the records are not committed (`nack` rewinds the partition), so the next
start processes them again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from faststream.kafka import KafkaBroker
from faststream.kafka.annotations import KafkaMessage
from faststream.middlewares import AckPolicy
from opentelemetry import context as otel_context
from pydantic import ValidationError

from mnemo_events.dead_letters import DeadLetter, Delivery, publish_dead_letter
from mnemo_events.errors import Rejected
from mnemo_events.models import Envelope, Message
from mnemo_events.settings import KafkaSettings
from mnemo_events.tracing import context_from_headers, trace_id_of

DataT = TypeVar("DataT", bound=Message)

log = logging.getLogger("mnemo_events.consumer")


@dataclass(frozen=True, slots=True)
class Received(Generic[DataT]):
    """A record decoded into its envelope, with the record itself and its trace context."""

    envelope: Envelope[DataT]
    delivery: Delivery
    context: otel_context.Context = field(default_factory=otel_context.Context)

    @property
    def trace_id(self) -> str | None:
        return trace_id_of(self.context)


@dataclass(frozen=True, slots=True)
class Rejection:
    """A handler's verdict that one record of its batch can never succeed, and why."""

    delivery: Delivery
    reason: str


BatchHandler = Callable[[Sequence[Received[DataT]]], Awaitable[Sequence[Rejection]]]
"""Processes a batch in one unit of work; returns the records it refuses (dead-lettered), raises
when the batch failed (retried, then message by message)."""
Handler = Callable[[Received[DataT]], Awaitable[None]]
"""Processes one record; raises `Rejected` to dead-letter it at once, anything else to retry."""


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    max_attempts: int = 5
    backoff_seconds: float = 0.2
    backoff_max_seconds: float = 5.0
    transient: tuple[type[BaseException], ...] = ()
    """Errors retried without bound (outages), never dead-lettered."""

    @classmethod
    def from_settings(
        cls, settings: KafkaSettings, transient: tuple[type[BaseException], ...] = ()
    ) -> RetryPolicy:
        return cls(
            max_attempts=settings.max_attempts,
            backoff_seconds=settings.retry_backoff_seconds,
            backoff_max_seconds=settings.retry_backoff_max_seconds,
            transient=transient,
        )

    def pause(self, failures: int) -> float:
        return float(
            min(self.backoff_max_seconds, self.backoff_seconds * 2.0 ** max(0, failures - 1))
        )


DeadLetterSink = Callable[[DeadLetter], Awaitable[None]]


class Stopped(Exception):  # noqa: N818 (a state, not a failure)
    """The service is stopping: leave the batch uncommitted."""


def single(handler: Handler[DataT]) -> BatchHandler[DataT]:
    """A batch handler that calls `handler` for each record in turn (for one-record batches)."""

    async def handle(items: Sequence[Received[DataT]]) -> Sequence[Rejection]:
        rejections: list[Rejection] = []
        for item in items:
            token = otel_context.attach(item.context)
            try:
                await handler(item)
            except Rejected as error:
                rejections.append(Rejection(item.delivery, error.reason))
            finally:
                otel_context.detach(token)
        return rejections

    return handle


class Consumer(Generic[DataT]):
    """The records of `topic` for consumer group `group`, handled by `handler`."""

    def __init__(
        self,
        *,
        topic: str,
        group: str,
        data_model: type[DataT],
        handler: BatchHandler[DataT],
        dead_letters: DeadLetterSink,
        retry: RetryPolicy,
        stopping: asyncio.Event,
    ) -> None:
        self.topic = topic
        self.group = group
        self._envelope: type[Envelope[Any]] = Envelope[data_model]  # type: ignore[valid-type]  # a runtime generic alias
        self._handler = handler
        self._dead_letters = dead_letters
        self._retry = retry
        self._stopping = stopping
        self.processed = 0
        self.dead_lettered = 0
        self.outage: str | None = None
        """The transient failure being retried now (None once a call succeeds)."""

    def decode(self, delivery: Delivery) -> Received[DataT]:
        """The record as an envelope of this topic's data, or `Rejected` with the reason."""
        try:
            envelope = self._envelope.model_validate_json(delivery.value)
        except ValidationError as error:
            raise Rejected(f"invalid envelope: {_summary(error)}") from error
        if delivery.key is None:
            raise Rejected(
                f"message has no key; the key must be the envelope's tenant {envelope.tenant}"
            )
        key = delivery.key.decode("utf-8", "replace").strip().lower()
        if key != str(envelope.tenant):
            raise Rejected(
                f"key mismatch: the key {key[:80]!r} is not the envelope's tenant {envelope.tenant}"
            )
        context = context_from_headers(delivery.headers, envelope.trace)
        return Received(envelope=envelope, delivery=delivery, context=context)

    async def process(self, deliveries: Sequence[Delivery]) -> None:
        """Handle or dead-letter every record; raises `Stopped` (nothing to commit) when the
        service stops first, or the dead-letter publisher's error."""
        letters: list[DeadLetter] = []
        received: list[Received[DataT]] = []
        for delivery in deliveries:
            try:
                received.append(self.decode(delivery))
            except Rejected as error:
                letters.append(DeadLetter(delivery, error.reason, attempts=1))
        if received:
            letters.extend(await self._handle(received))
        for letter in letters:
            log.warning(
                "dead-lettered %s[%d]@%d: %s",
                letter.delivery.topic,
                letter.delivery.partition,
                letter.delivery.offset,
                letter.reason,
            )
            await self._dead_letters(letter)
        self.dead_lettered += len(letters)
        self.processed += len(deliveries)

    async def _handle(self, items: Sequence[Received[DataT]]) -> list[DeadLetter]:
        if len(items) > 1:
            try:
                rejections = await self._call_until_settled(items, bounded=False)
            except Exception as error:
                log.info("batch of %d failed (%r); retrying one by one", len(items), error)
            else:
                return self._letters(rejections, attempts=1)
        letters: list[DeadLetter] = []
        for item in items:
            letters.extend(await self._handle_one(item))
        return letters

    async def _handle_one(self, item: Received[DataT]) -> list[DeadLetter]:
        failures = 0
        while True:
            try:
                rejections = await self._call_until_settled([item], bounded=True)
            except Rejected as error:
                return [DeadLetter(item.delivery, error.reason, attempts=failures + 1)]
            except Exception as error:
                failures += 1
                if failures >= self._retry.max_attempts:
                    return [
                        DeadLetter(
                            item.delivery,
                            f"failed after {failures} attempts: {type(error).__name__}: {error}",
                            attempts=failures,
                        )
                    ]
                await self._pause(failures)
            else:
                return self._letters(rejections, attempts=failures + 1)

    async def _call_until_settled(
        self, items: Sequence[Received[DataT]], *, bounded: bool
    ) -> Sequence[Rejection]:
        """Call the handler, retrying transient errors without bound; other errors propagate."""
        outages = 0
        while True:
            if self._stopping.is_set():
                raise Stopped()
            try:
                settled = await self._handler(items)
            except self._retry.transient as error:
                outages += 1
                self.outage = f"{type(error).__name__}: {error}"[:300]
                log.warning("transient failure (%r); retrying", error)
                await self._pause(outages)
            else:
                self.outage = None
                return settled

    async def _pause(self, failures: int) -> None:
        try:
            await asyncio.wait_for(self._stopping.wait(), self._retry.pause(failures))
        except TimeoutError:
            return
        raise Stopped()

    @staticmethod
    def _letters(rejections: Sequence[Rejection], attempts: int) -> list[DeadLetter]:
        return [DeadLetter(r.delivery, r.reason, attempts=attempts) for r in rejections]


def _summary(error: ValidationError) -> str:
    parts = []
    for detail in error.errors(include_url=False)[:5]:
        where = ".".join(str(part) for part in detail["loc"]) or "(message)"
        parts.append(f"{where}: {detail['msg']}")
    more = error.error_count() - len(parts)
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def delivery_of(record: Any) -> Delivery:
    """A `Delivery` from an aiokafka `ConsumerRecord`."""
    return Delivery(
        topic=record.topic,
        partition=record.partition,
        offset=record.offset,
        key=record.key,
        value=record.value if record.value is not None else b"",
        headers=tuple((name, value or b"") for name, value in record.headers),
    )


def _raw(message: Any) -> Any:
    """Decoder that leaves the body alone: `Consumer` decodes, so bad JSON becomes a dead letter
    instead of an exception inside FastStream."""
    return message.body


def subscribe(
    broker: KafkaBroker,
    consumer: Consumer[Any],
    *,
    settings: KafkaSettings,
    batch: bool = False,
) -> Any:
    """Register `consumer` on `broker` (manual acknowledgement: commit after work); returns the
    FastStream subscriber (for readiness: its partitions)."""
    subscriber = broker.subscriber(
        consumer.topic,
        group_id=consumer.group,
        ack_policy=AckPolicy.MANUAL,
        auto_offset_reset="earliest",
        batch=batch,
        max_records=settings.batch_max_records if batch else None,
        batch_timeout_ms=settings.batch_timeout_ms,
        decoder=_raw,
    )

    async def on_records(message: KafkaMessage) -> None:
        raw = message.raw_message
        records = raw if isinstance(raw, tuple) else (raw,)
        try:
            await consumer.process([delivery_of(record) for record in records])
        except Stopped:
            await message.nack()
            return
        except BaseException:
            await message.nack()
            raise
        await message.ack()

    subscriber(on_records)
    return subscriber


def build_consumer(
    broker: KafkaBroker,
    *,
    topic: str,
    group: str,
    data_model: type[DataT],
    handler: BatchHandler[DataT],
    settings: KafkaSettings,
    stopping: asyncio.Event,
    transient: tuple[type[BaseException], ...] = (),
    batch: bool = False,
) -> tuple[Consumer[DataT], Any]:
    """A `Consumer` that dead-letters through `broker`, subscribed on it; returns both."""

    async def dead_letter(letter: DeadLetter) -> None:
        await publish_dead_letter(broker, letter, consumer=group)

    consumer = Consumer(
        topic=topic,
        group=group,
        data_model=data_model,
        handler=handler,
        dead_letters=dead_letter,
        retry=RetryPolicy.from_settings(settings, transient),
        stopping=stopping,
    )
    return consumer, subscribe(broker, consumer, settings=settings, batch=batch)


def partitions_assigned(subscriber: Any) -> bool:
    """Whether the subscriber's consumer has partitions assigned (readiness)."""
    client = getattr(subscriber, "consumer", None)
    return client is not None and bool(client.assignment())
