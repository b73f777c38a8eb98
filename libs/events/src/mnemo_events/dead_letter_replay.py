"""Reading and replaying dead letters (`<topic>.dlt`, written by `mnemo_events.dead_letters`).

A dead letter is named `<dlt topic>:<partition>:<offset>`. Reading one takes the records of the
dead-letter topics as they are when the read starts (from the beginning to the end offsets then),
with no consumer group, so reading changes nothing. Filters: origin topic, tenant (the record's key,
else its envelope's `tenant`), reason (a case-insensitive substring), and when it was dead-lettered.

A replay republishes a dead letter's original value bytes, key and headers (the `mnemo-dlt-*`
explanation headers taken off) to its origin topic, with one more header naming the dead letter
(`mnemo-replay-of`). The event id is in the value, so a consumer's inbox processes a replayed event
at most once even if it is replayed twice or had in fact been processed. A replayed dead letter is
also marked in `mnemo.dlt.replays` (a compacted topic keyed by the dead letter's name), and a later
replay skips it unless asked again. What fails again is dead-lettered again by the consumer,
carrying `mnemo-replay-of`, so the replay can count it.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from aiokafka import AIOKafkaProducer, TopicPartition
from aiokafka.structs import ConsumerRecord

from mnemo_events.dead_letters import (
    ATTEMPTS,
    CONSUMER,
    DEAD_LETTERED_AT,
    ORIGIN_OFFSET,
    ORIGIN_PARTITION,
    ORIGIN_TOPIC,
    REASON,
)
from mnemo_events.provisioning import ensure_compacted_topic
from mnemo_events.security import client_options
from mnemo_events.settings import KafkaSettings
from mnemo_events.topic_snapshot import groupless_consumer, read_to_end, topic_partitions
from mnemo_events.topics import DEAD_LETTER_SUFFIX, dead_letter_topic

REPLAY_OF = "mnemo-replay-of"
"""The header a replayed record carries: the name of the dead letter it replays."""
REPLAYS_TOPIC = "mnemo.dlt.replays"
"""Compacted: one record per replayed dead letter, keyed by its name."""
EXPLANATION_PREFIX = "mnemo-dlt-"


@dataclass(frozen=True, slots=True)
class StoredDeadLetter:
    """One record of a dead-letter topic."""

    topic: str
    partition: int
    offset: int
    timestamp_ms: int
    key: bytes | None
    value: bytes
    headers: tuple[tuple[str, bytes], ...]

    @property
    def name(self) -> str:
        return f"{self.topic}:{self.partition}:{self.offset}"

    def header(self, name: str) -> str | None:
        found = None
        for header_name, value in self.headers:
            if header_name.lower() == name.lower():
                found = value.decode("utf-8", "replace")
        return found

    @property
    def origin_topic(self) -> str:
        return self.header(ORIGIN_TOPIC) or self.topic.removesuffix(DEAD_LETTER_SUFFIX)

    @property
    def reason(self) -> str:
        return self.header(REASON) or ""

    @property
    def attempts(self) -> int | None:
        text = self.header(ATTEMPTS)
        return int(text) if text and text.isdigit() else None

    @property
    def dead_lettered_at(self) -> datetime:
        text = self.header(DEAD_LETTERED_AT)
        if text:
            try:
                moment = datetime.fromisoformat(text)
                return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
            except ValueError:
                pass
        return datetime.fromtimestamp(self.timestamp_ms / 1000, UTC)

    @property
    def tenant(self) -> uuid.UUID | None:
        """The record's key as a tenant id, else its envelope's `tenant`, else None."""
        return next(iter(self.named_tenants), None)

    @property
    def named_tenants(self) -> tuple[uuid.UUID, ...]:
        """Every tenant the record names, its key's first, then its envelope's (they differ in
        a record refused for that): a replay that must not publish a tenant's data checks all."""
        found: list[uuid.UUID] = []
        for text in (self._key_text(), self._envelope_field("tenant")):
            try:
                tenant = uuid.UUID(text) if text else None
            except ValueError:
                continue
            if tenant is not None and tenant not in found:
                found.append(tenant)
        return tuple(found)

    @property
    def event_id(self) -> str | None:
        return self._envelope_field("event_id")

    @property
    def original_headers(self) -> list[tuple[str, bytes]]:
        """The headers the record arrived with: the explanation and any earlier replay mark off."""
        return [
            (name, value)
            for name, value in self.headers
            if not name.lower().startswith(EXPLANATION_PREFIX) and name.lower() != REPLAY_OF
        ]

    def summary(self) -> dict[str, object]:
        """What `mnemo dlt list` shows of it (never the value: it may hold a tenant's data)."""
        return {
            "name": self.name,
            "origin_topic": self.origin_topic,
            "origin_partition": self.header(ORIGIN_PARTITION),
            "origin_offset": self.header(ORIGIN_OFFSET),
            "tenant": None if self.tenant is None else str(self.tenant),
            "event_id": self.event_id,
            "reason": self.reason,
            "attempts": self.attempts,
            "consumer": self.header(CONSUMER),
            "dead_lettered_at": self.dead_lettered_at.isoformat(),
            "replay_of": self.header(REPLAY_OF),
        }

    def _key_text(self) -> str | None:
        return None if self.key is None else self.key.decode("utf-8", "replace")

    def _envelope_field(self, field: str) -> str | None:
        try:
            document = json.loads(self.value)
        except ValueError:
            return None
        value = document.get(field) if isinstance(document, dict) else None
        return value if isinstance(value, str) else None


@dataclass(frozen=True, slots=True)
class DeadLetterFilter:
    """Which dead letters to take; every part given must hold."""

    tenant: uuid.UUID | None = None
    reason: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    names: frozenset[str] = frozenset()

    def matches(self, letter: StoredDeadLetter) -> bool:
        if self.names and letter.name not in self.names:
            return False
        if self.tenant is not None and letter.tenant != self.tenant:
            return False
        if self.reason and self.reason.lower() not in letter.reason.lower():
            return False
        at = letter.dead_lettered_at
        if self.since is not None and at < self.since:
            return False
        return self.until is None or at <= self.until


async def read_dead_letters(
    settings: KafkaSettings,
    origin_topics: Iterable[str],
    wanted: DeadLetterFilter = DeadLetterFilter(),  # frozen: one shared value is safe
    *,
    limit: int | None = None,
) -> list[StoredDeadLetter]:
    """The dead letters of `origin_topics` (their `<topic>.dlt`) that `wanted` takes, oldest offset
    first per partition, as the topics are when the read starts. A topic with no dead-letter topic
    has none."""
    topics = [dead_letter_topic(t) for t in dict.fromkeys(origin_topics)]
    found: list[StoredDeadLetter] = []
    for record in await _read(settings, topics):
        if wanted.matches(record):
            found.append(record)
            if limit is not None and len(found) >= limit:
                break
    return found


@dataclass(frozen=True, slots=True)
class ReplayResult:
    replayed: tuple[str, ...]
    """The dead letters republished now."""
    skipped: tuple[str, ...]
    """Replayed before (`mnemo.dlt.replays`), so not again."""
    failed_again: tuple[StoredDeadLetter, ...]
    """Dead letters the replayed records became, seen within the wait."""
    errors: tuple[str, ...] = ()
    """Dead letters the broker did not take, with why."""


async def replay(
    settings: KafkaSettings,
    letters: Sequence[StoredDeadLetter],
    *,
    again: bool = False,
    wait_seconds: float = 0.0,
    client_id: str = "mnemo-dlt-replay",
) -> ReplayResult:
    """Republish each of `letters` once to its origin topic (those replayed before only with
    `again`), then watch the dead-letter topics for `wait_seconds` for the ones that fail again."""
    await ensure_compacted_topic(settings, REPLAYS_TOPIC, client_id=client_id)
    done_before = {r.key.decode() for r in await _read(settings, [REPLAYS_TOPIC]) if r.key}
    todo = [letter for letter in letters if again or letter.name not in done_before]
    skipped = tuple(letter.name for letter in letters if letter not in todo)
    watched = sorted({letter.topic for letter in todo})
    start = await _end_offsets(settings, watched)
    producer = AIOKafkaProducer(
        bootstrap_servers=settings.bootstrap,
        client_id=client_id,
        enable_idempotence=True,
        request_timeout_ms=settings.request_timeout_ms,
        **client_options(settings),
    )
    await producer.start()
    replayed: list[str] = []
    errors: list[str] = []
    try:
        for letter in todo:
            headers = [*letter.original_headers, (REPLAY_OF, letter.name.encode())]
            try:
                await producer.send_and_wait(
                    letter.origin_topic, letter.value, key=letter.key, headers=headers
                )
            except Exception as error:  # the broker's verdict on this record; go on with the rest
                errors.append(f"{letter.name}: {type(error).__name__}: {error}")
                continue
            mark = {"replayed_at": datetime.now(UTC).isoformat(), "topic": letter.origin_topic}
            await producer.send_and_wait(
                REPLAYS_TOPIC, json.dumps(mark).encode(), key=letter.name.encode()
            )
            replayed.append(letter.name)
    finally:
        await producer.stop()
    failed = await _failed_again(settings, start, set(replayed), wait_seconds)
    return ReplayResult(tuple(replayed), skipped, tuple(failed), tuple(errors))


async def _failed_again(
    settings: KafkaSettings,
    start: dict[TopicPartition, int],
    replayed: set[str],
    wait_seconds: float,
) -> list[StoredDeadLetter]:
    """The new dead letters (after `start`) of replayed records, watched until every replayed one
    has failed again or `wait_seconds` pass."""
    if not replayed or not start:
        return []
    consumer = groupless_consumer(settings)
    await consumer.start()
    found: dict[str, StoredDeadLetter] = {}
    try:
        consumer.assign(list(start))
        for partition, offset in start.items():
            consumer.seek(partition, offset)
        deadline = time.monotonic() + wait_seconds
        while len(found) < len(replayed):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            batch = await consumer.getmany(timeout_ms=int(min(remaining, 0.5) * 1000))
            for records in batch.values():
                for record in records:
                    letter = _letter(record)
                    origin = letter.header(REPLAY_OF)
                    if origin in replayed:
                        found[origin] = letter
    finally:
        await consumer.stop()
    return list(found.values())


async def _end_offsets(settings: KafkaSettings, topics: Sequence[str]) -> dict[TopicPartition, int]:
    partitions = await topic_partitions(settings, topics)
    if not partitions:
        return {}
    consumer = groupless_consumer(settings)
    await consumer.start()
    try:
        ends: dict[TopicPartition, int] = await consumer.end_offsets(partitions)
        return ends
    finally:
        await consumer.stop()


async def _read(settings: KafkaSettings, topics: Sequence[str]) -> list[StoredDeadLetter]:
    """Every record of `topics` up to their end offsets as the read starts."""
    records = [_letter(record) for record in await read_to_end(settings, topics)]
    records.sort(key=lambda r: (r.topic, r.partition, r.offset))
    return records


def _letter(record: ConsumerRecord[bytes, bytes]) -> StoredDeadLetter:
    return StoredDeadLetter(
        topic=record.topic,
        partition=record.partition,
        offset=record.offset,
        timestamp_ms=record.timestamp,
        key=record.key,
        value=record.value or b"",
        headers=tuple((str(name), bytes(value)) for name, value in record.headers),
    )
