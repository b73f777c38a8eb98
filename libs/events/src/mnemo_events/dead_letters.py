"""Dead letters: what a consumer cannot process goes to `<topic>.dlt`, whole and explained.

The dead-letter record carries the original value bytes, key and headers unchanged, plus headers
saying why (`mnemo-dlt-reason`), after how many attempts, which consumer group gave up, and where
the message came from (topic, partition, offset). After it is published the consumer commits the
original offset, so one bad message never stops its partition.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from faststream.kafka import KafkaBroker

from mnemo_events.broker import kafka_producer
from mnemo_events.topics import dead_letter_topic

REASON = "mnemo-dlt-reason"
ATTEMPTS = "mnemo-dlt-attempts"
CONSUMER = "mnemo-dlt-consumer"
ORIGIN_TOPIC = "mnemo-dlt-origin-topic"
ORIGIN_PARTITION = "mnemo-dlt-origin-partition"
ORIGIN_OFFSET = "mnemo-dlt-origin-offset"
DEAD_LETTERED_AT = "mnemo-dlt-at"
AUTHORIZATION = "authorization"
"""The header a record carries its caller's bearer token in (`Bearer <token>`); never copied into
a dead letter, so a dead-letter topic holds no credentials."""
MAX_REASON_CHARS = 2000


@dataclass(frozen=True, slots=True)
class Delivery:
    """One Kafka record exactly as it arrived."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes
    headers: tuple[tuple[str, bytes], ...] = ()

    def header(self, name: str) -> str | None:
        for header_name, value in self.headers:
            if header_name.lower() == name.lower():
                return value.decode("utf-8", "replace")
        return None


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """A record to dead-letter and why."""

    delivery: Delivery
    reason: str
    attempts: int


def dead_letter_headers(letter: DeadLetter, consumer: str) -> dict[str, str]:
    """The original headers but a bearer token (decoded as UTF-8; Kafka allows repeated names, the
    last one wins) and the explanation headers."""
    reason = (
        letter.reason
        if len(letter.reason) <= MAX_REASON_CHARS
        else letter.reason[:MAX_REASON_CHARS] + "…"
    )
    headers = {
        name: value.decode("utf-8", "replace")
        for name, value in letter.delivery.headers
        if name.lower() != AUTHORIZATION
    }
    headers.update(
        {
            REASON: reason,
            ATTEMPTS: str(letter.attempts),
            CONSUMER: consumer,
            ORIGIN_TOPIC: letter.delivery.topic,
            ORIGIN_PARTITION: str(letter.delivery.partition),
            ORIGIN_OFFSET: str(letter.delivery.offset),
            DEAD_LETTERED_AT: datetime.now(UTC).isoformat(),
        }
    )
    return headers


async def publish_dead_letter(broker: KafkaBroker, letter: DeadLetter, consumer: str) -> None:
    """Republish `letter`'s record to its `<topic>.dlt`; returns once the broker has it."""
    await publish_dead_letters(broker, [letter], consumer)


async def publish_dead_letters(
    broker: KafkaBroker, letters: Sequence[DeadLetter], consumer: str
) -> None:
    """Republish each letter's record to its `<topic>.dlt`, in order, and return once the broker
    has them all: the records are queued one after another on the broker's Kafka client and their
    acknowledgements awaited together (one round trip for a batch's poison, not one per record,
    and without FastStream's per-publish command and middleware chain). A broker whose client
    cannot be found is published through one record at a time."""
    producer = kafka_producer(broker)
    if producer is None:
        for letter in letters:
            await broker.publish(
                letter.delivery.value,
                topic=dead_letter_topic(letter.delivery.topic),
                key=letter.delivery.key,
                headers=dead_letter_headers(letter, consumer),
            )
        return
    acks: list[Awaitable[object]] = []
    for letter in letters:
        headers = [
            (name, value.encode()) for name, value in dead_letter_headers(letter, consumer).items()
        ]
        acks.append(
            await producer.send(
                dead_letter_topic(letter.delivery.topic),
                letter.delivery.value,
                key=letter.delivery.key,
                headers=headers,
            )
        )
    await asyncio.gather(*acks)
