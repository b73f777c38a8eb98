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

Telemetry (one instrumentation: the runtime's, nothing in FastStream): each record is handled
inside its own `process <topic>` consumer span, a child of the producer's trace context from the
record's headers, and `Received.context` is that span's context, so everything a handler does for
the record joins the producer's trace. When the sampler drops the record (its producer's context is
not sampled, under a parent-based sampler) no span is made: `Received.context` is the producer's
context itself, which still carries the trace id. Per consumer it records the contract metrics
(deploy/prometheus/METRICS.md): `mnemo_handler_duration_seconds` per batch (commit included),
`mnemo_messages_total` and `mnemo_dead_letters_total` per record (reason codes from `reason_code`),
and `mnemo_consumer_lag` per partition after each commit.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from aiokafka import TopicPartition
from faststream.kafka import KafkaBroker
from faststream.kafka.annotations import KafkaMessage
from faststream.middlewares import AckPolicy
from mnemo_telemetry import metrics
from mnemo_telemetry.tracing import SpanHandle, start_consumer_span
from opentelemetry import context as otel_context
from pydantic import ValidationError

from mnemo_events.dead_letters import DeadLetter, Delivery, publish_dead_letters
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


DeadLetterSink = Callable[[Sequence[DeadLetter]], Awaitable[None]]


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
        service: str | None = None,
    ) -> None:
        self.topic = topic
        self.group = group
        self.service = service or service_of(group)
        """The `service` label of this consumer's metrics (`mnemo.ingest` → `ingest`)."""
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
        """The record as an envelope of this topic's data, or `Rejected` with the reason.
        `context` is the producer's trace context (the record's headers)."""
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
        spans: dict[tuple[int, int], SpanHandle] = {}
        try:
            for delivery in deliveries:
                where = (delivery.partition, delivery.offset)
                try:
                    item = self.decode(delivery)
                except Rejected as error:
                    letters.append(DeadLetter(delivery, error.reason, attempts=1))
                    spans[where] = self._span(delivery, context_from_headers(delivery.headers))
                    continue
                span = spans[where] = self._span(delivery, item.context)
                if span.recording:
                    span.set(tenant=str(item.envelope.tenant), event_id=str(item.envelope.event_id))
                received.append(
                    Received(envelope=item.envelope, delivery=delivery, context=span.context)
                )
            if received:
                letters.extend(await self._handle(received))
            await self._settle(deliveries, letters, spans)
        except BaseException as error:
            for span in spans.values():
                span.fail(f"not finished: {type(error).__name__}")
            raise
        finally:
            for span in spans.values():
                span.end()

    def _span(self, delivery: Delivery, parent: otel_context.Context) -> SpanHandle:
        return start_consumer_span(
            self.topic, parent, partition=delivery.partition, offset=delivery.offset
        )

    async def _settle(
        self,
        deliveries: Sequence[Delivery],
        letters: Sequence[DeadLetter],
        spans: dict[tuple[int, int], SpanHandle],
    ) -> None:
        for letter in letters:
            code = reason_code(letter.reason)
            span = spans.get((letter.delivery.partition, letter.delivery.offset))
            if span is not None:
                span.fail(f"dead-lettered ({code}): {letter.reason}"[:500])
            log.warning(
                "dead-lettered %s[%d]@%d: %s",
                letter.delivery.topic,
                letter.delivery.partition,
                letter.delivery.offset,
                letter.reason,
            )
            metrics.DEAD_LETTERS.labels(self.service, self.topic, code).inc()
        if letters:
            await self._dead_letters(letters)
        self.dead_lettered += len(letters)
        self.processed += len(deliveries)
        messages = metrics.MESSAGES
        messages.labels(self.service, self.topic, "ok").inc(len(deliveries) - len(letters))
        messages.labels(self.service, self.topic, "dead_lettered").inc(len(letters))

    async def _handle(self, items: Sequence[Received[DataT]]) -> list[DeadLetter]:
        if len(items) > 1:
            try:
                rejections = await self._call_until_settled(items)
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
                rejections = await self._call_until_settled([item])
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

    async def _call_until_settled(self, items: Sequence[Received[DataT]]) -> Sequence[Rejection]:
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


REASON_CODES = ("invalid_envelope", "key_mismatch", "rejected", "attempts_exhausted")
"""The `reason` label values of `mnemo_dead_letters_total` this runtime records."""


def reason_code(reason: str) -> str:
    """The short code of a dead-letter reason this module wrote (the metric's `reason` label)."""
    if reason.startswith("invalid envelope"):
        return "invalid_envelope"
    if reason.startswith(("key mismatch", "message has no key")):
        return "key_mismatch"
    if reason.startswith("failed after"):
        return "attempts_exhausted"
    return "rejected"


def service_of(group: str) -> str:
    """A consumer group's service name: `mnemo.edge-classifier` → `edge-classifier`."""
    return group.removeprefix("mnemo.")


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
        max_partition_fetch_bytes=settings.max_partition_fetch_bytes,
        decoder=_raw,
    )

    duration = metrics.HANDLER_DURATION.labels(consumer.service, consumer.topic)
    for code in REASON_CODES:  # present at 0, so rates and alerts see the series from the start
        metrics.DEAD_LETTERS.labels(consumer.service, consumer.topic, code)
    for outcome in ("ok", "dead_lettered"):
        metrics.MESSAGES.labels(consumer.service, consumer.topic, outcome)

    async def on_records(message: KafkaMessage) -> None:
        started = time.perf_counter()
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
        duration.observe(time.perf_counter() - started)
        record_lag(subscriber, consumer, records)

    subscriber(on_records)
    return subscriber


def record_lag(subscriber: Any, consumer: Consumer[Any], records: Sequence[Any]) -> None:
    """`mnemo_consumer_lag` of the partitions just committed: the partition's end offset (as of
    the last fetch) minus the committed offset (the last record's + 1)."""
    client = getattr(subscriber, "consumer", None)
    if client is None:
        return
    last: dict[int, int] = {}
    for record in records:
        last[record.partition] = max(last.get(record.partition, -1), record.offset)
    assigned = client.assignment()
    for partition, offset in last.items():
        where = TopicPartition(consumer.topic, partition)
        if where not in assigned:  # revoked by a rebalance meanwhile: its new owner reports it
            continue
        end = client.highwater(where)
        if end is not None:
            metrics.CONSUMER_LAG.labels(consumer.service, consumer.topic, str(partition)).set(
                max(0, end - offset - 1)
            )


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
    service: str | None = None,
) -> tuple[Consumer[DataT], Any]:
    """A `Consumer` that dead-letters through `broker`, subscribed on it; returns both.
    `service` labels its metrics (default: the group without its `mnemo.` prefix)."""

    async def dead_letter(letters: Sequence[DeadLetter]) -> None:
        await publish_dead_letters(broker, letters, consumer=group)

    consumer = Consumer(
        topic=topic,
        group=group,
        data_model=data_model,
        handler=handler,
        dead_letters=dead_letter,
        retry=RetryPolicy.from_settings(settings, transient),
        stopping=stopping,
        service=service,
    )
    return consumer, subscribe(broker, consumer, settings=settings, batch=batch)


def partitions_assigned(subscriber: Any) -> bool:
    """Whether the subscriber's consumer has partitions assigned (`/readyz?consumers=true`)."""
    return assigned_partitions(subscriber) > 0


def assigned_partitions(subscriber: Any) -> int:
    """How many partitions the subscriber's consumer holds now (0 before it has joined)."""
    client = getattr(subscriber, "consumer", None)
    return 0 if client is None else len(client.assignment())
