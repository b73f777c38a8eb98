"""The transactional outbox: events written with the rows they announce, published by a relay.

A write appends its event in the same transaction (`TenantTransaction.append_outbox`); the relay,
connected as the relay role (whose policy reaches the outbox and nothing else), claims unpublished
rows with `FOR UPDATE SKIP LOCKED`, hands each to a publisher port, and marks what it published
in one statement. A publisher that can pipeline (`PipelinedPublisher`) is handed the whole batch
in order first and its acknowledgements are awaited together; a plain `EventPublisher` is awaited
one event at a time. If publishing fails mid-batch, each tenant's events before its first failure
are still marked (and committed) before the error propagates, so a restarted relay continues, per
tenant, with the first unpublished one and the order within a tenant holds.
A crash between a broker acknowledgement and that commit can still repeat an event: consumers
deduplicate by event id (the inbox), which makes delivery effectively once.

A writer in the relay's process that answers once its events are on Kafka (the navigator's HTTP
writes) asks `OutboxRelay.published_waiter` to be told when this relay has marked them, instead of
polling the outbox; another relay (another replica) may publish them too, so it still reads the
outbox now and then.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import asyncpg


@dataclass(frozen=True, slots=True)
class OutboxEvent:
    """An event to publish once its transaction commits. `payload` must be JSON-serialisable."""

    event_id: uuid.UUID
    topic: str
    key: bytes
    payload: Mapping[str, Any]
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class OutboxMessage:
    """An outbox row as the relay hands it to the publisher (`payload` is the JSON text)."""

    tenant_id: uuid.UUID
    seq: int
    event_id: uuid.UUID
    topic: str
    key: bytes
    payload: str
    headers: Mapping[str, str]


class EventPublisher(Protocol):
    """Where the relay sends events (a Kafka producer in the services; a list in tests).

    `publish` returns once the broker has the event; raising means it was not published.
    """

    async def publish(self, message: OutboxMessage) -> None: ...


@runtime_checkable
class PipelinedPublisher(Protocol):
    """A publisher that takes events in order without waiting for each acknowledgement (a Kafka
    producer: one partition's events keep their order).

    `enqueue` returns once `message` is queued, after every message enqueued before it; awaiting
    what it returns waits for the broker's acknowledgement (raising means not published).
    """

    async def publish(self, message: OutboxMessage) -> None: ...

    async def enqueue(self, message: OutboxMessage) -> Awaitable[object]: ...


@runtime_checkable
class GroupingPublisher(Protocol):
    """A pipelining publisher that takes a claimed batch at once (`enqueue_all`), in order: it may
    then do once what events of one trace share (the services' Kafka publisher opens one producer
    span for consecutive events written together, rather than one each). Returns one awaitable
    per message, as `PipelinedPublisher.enqueue` would (several may be the same); a message it
    could not hand over has an awaitable that raises, as has every one after it."""

    async def publish(self, message: OutboxMessage) -> None: ...

    async def enqueue(self, message: OutboxMessage) -> Awaitable[object]: ...

    async def enqueue_all(self, messages: Sequence[OutboxMessage]) -> list[Awaitable[object]]: ...


INSERT_SQL = (
    "INSERT INTO mnemo.outbox (axon_tenant, event_id, topic, key, payload, headers)"
    " VALUES ($1, $2, $3, $4, $5::jsonb, $6::jsonb)"
)

_CLAIM_SQL = (
    "SELECT axon_tenant, seq, event_id, topic, key, payload::text AS payload, headers::text AS headers"
    " FROM mnemo.outbox WHERE published_at IS NULL {tenants}"
    " ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED"
)
_MARK_SQL = (
    "UPDATE mnemo.outbox SET published_at = now()"
    " WHERE (axon_tenant, seq) IN (SELECT * FROM unnest($1::uuid[], $2::bigint[]))"
)


INSERT_MANY_SQL = (
    "INSERT INTO mnemo.outbox (axon_tenant, event_id, topic, key, payload, headers)"
    " SELECT $1, e, t, k, $5::jsonb -> (n::int - 1), $6::jsonb -> (n::int - 1)"
    " FROM unnest($2::uuid[], $3::text[], $4::bytea[])"
    " WITH ORDINALITY AS u (e, t, k, n) ORDER BY n"
)


def insert_many_args(tenant_id: uuid.UUID, events: Sequence[OutboxEvent]) -> tuple[object, ...]:
    """The arguments of `INSERT_MANY_SQL`: many events of one tenant in one statement, in the
    given order (the outbox's `seq`, which the relay publishes by, follows it). The payloads and
    the headers are encoded as one JSON array each (one encoder call a batch, not two an event) and
    taken apart by position in the statement; `jsonb` keeps the same values either way."""
    return (
        tenant_id,
        [event.event_id for event in events],
        [event.topic for event in events],
        [event.key for event in events],
        json.dumps([event.payload for event in events], separators=(",", ":")),
        json.dumps([dict(event.headers) for event in events], separators=(",", ":")),
    )


def insert_args(tenant_id: uuid.UUID, event: OutboxEvent) -> tuple[object, ...]:
    return (
        tenant_id,
        event.event_id,
        event.topic,
        event.key,
        json.dumps(event.payload, sort_keys=True, separators=(",", ":")),
        json.dumps(dict(event.headers), sort_keys=True),
    )


class OutboxRelay:
    """Publishes outbox rows through `publisher`, oldest first, each exactly once per success.

    `tenants` restricts the relay to some tenants (sharding relays, or tests sharing a database);
    `None` relays every tenant; `topics` likewise restricts it to the topics it knows (a relay
    never holds rows it cannot publish). Several relays may run at once: `SKIP LOCKED` keeps them off each
    other's rows (ordering per tenant then holds only within one relay's batches).
    """

    def __init__(
        self,
        pool: asyncpg.Pool,
        publisher: EventPublisher,
        *,
        batch_size: int = 100,
        idle_seconds: float = 0.2,
        tenants: Sequence[uuid.UUID] | None = None,
        topics: Sequence[str] | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self._pool = pool
        self._publisher = publisher
        self._batch_size = batch_size
        self._idle_seconds = idle_seconds
        self._tenants = None if tenants is None else list(tenants)
        self._topics = None if topics is None else sorted(set(topics))
        self._woken = asyncio.Event()
        self._waiters: dict[uuid.UUID, list[PublishedWaiter]] = {}

    def published_waiter(self, event_ids: Sequence[uuid.UUID]) -> PublishedWaiter:
        """A waiter told when this relay has published (and marked, committed) every one of
        `event_ids`; `close()` it when done waiting. Register it before checking the outbox, so
        that nothing published in between is missed."""
        waiter = PublishedWaiter(self, event_ids)
        for event_id in waiter.remaining:
            self._waiters.setdefault(event_id, []).append(waiter)
        if not waiter.remaining:
            waiter.done.set()
        return waiter

    def _forget(self, waiter: PublishedWaiter) -> None:
        for event_id in waiter.remaining:
            waiting = self._waiters.get(event_id)
            if waiting is not None and waiter in waiting:
                waiting.remove(waiter)
                if not waiting:
                    del self._waiters[event_id]

    def _published(self, event_ids: Sequence[uuid.UUID]) -> None:
        """Tell the waiters of `event_ids` (committed as published)."""
        if not self._waiters:
            return
        for event_id in event_ids:
            for waiter in self._waiters.pop(event_id, ()):
                waiter.remaining.discard(event_id)
                if not waiter.remaining:
                    waiter.done.set()

    def wake(self) -> None:
        """Relay now instead of at the end of the idle pause: a writer that waits for its events
        to be published calls it once they are committed."""
        self._woken.set()

    async def relay_once(self) -> int:
        """Claim one batch, publish it, mark what was published; returns how many were published."""
        filters = ""
        args: list[object] = [self._batch_size]
        if self._tenants is not None:
            args.append(self._tenants)
            filters += f" AND axon_tenant = ANY(${len(args)}::uuid[])"
        if self._topics is not None:
            args.append(self._topics)
            filters += f" AND topic = ANY(${len(args)}::text[])"
        async with self._pool.acquire() as connection:
            transaction = connection.transaction()
            await transaction.start()
            try:
                rows = await connection.fetch(_CLAIM_SQL.format(tenants=filters), *args)
                published, failure = await self._publish(rows)
                if published:
                    await connection.execute(
                        _MARK_SQL,
                        [row["axon_tenant"] for row in published],
                        [row["seq"] for row in published],
                    )
            except BaseException:
                await transaction.rollback()
                raise
            await transaction.commit()
        if published:
            self._published([row["event_id"] for row in published])
        if failure is not None:
            raise failure
        return len(published)

    async def _publish(
        self, rows: Sequence[asyncpg.Record]
    ) -> tuple[list[asyncpg.Record], BaseException | None]:
        """Publish `rows` in order; returns those published (each tenant's events before its
        first failure) and the first failure."""
        publisher = self._publisher
        if not isinstance(publisher, PipelinedPublisher):
            published: list[asyncpg.Record] = []
            for row in rows:
                try:
                    await publisher.publish(_message(row))
                except BaseException as error:  # re-raised by the caller, after marking
                    return published, error
                published.append(row)
            return published, None
        failure: BaseException | None = None
        acks: list[Awaitable[object]] = []
        if isinstance(publisher, GroupingPublisher):
            try:
                acks = await publisher.enqueue_all([_message(row) for row in rows])
            except BaseException as error:  # none is marked; any handed over goes again
                failure = error
        else:
            for row in rows:
                try:
                    acks.append(await publisher.enqueue(_message(row)))
                except BaseException as error:
                    failure = error
                    break
        results = await asyncio.gather(*acks, return_exceptions=True)
        published = []
        failed_tenants: set[uuid.UUID] = set()
        for row, result in zip(rows, results, strict=False):
            tenant = row["axon_tenant"]
            if tenant in failed_tenants:
                continue
            if isinstance(result, BaseException):
                failed_tenants.add(tenant)
                failure = failure or result
                continue
            published.append(row)
        return published, failure

    async def run(self, stop: asyncio.Event) -> None:
        """Relay until `stop` is set, pausing `idle_seconds` whenever the outbox is empty (or
        until `wake` is called)."""
        while not stop.is_set():
            self._woken.clear()
            if await self.relay_once() == 0:
                waits = {
                    asyncio.ensure_future(stop.wait()),
                    asyncio.ensure_future(self._woken.wait()),
                }
                try:
                    await asyncio.wait(
                        waits, timeout=self._idle_seconds, return_when=asyncio.FIRST_COMPLETED
                    )
                finally:
                    for waiting in waits:
                        waiting.cancel()


class PublishedWaiter:
    """`OutboxRelay.published_waiter`: `done` is set once every event is published."""

    def __init__(self, relay: OutboxRelay, event_ids: Sequence[uuid.UUID]) -> None:
        self._relay = relay
        self.remaining = set(event_ids)
        self.done = asyncio.Event()

    async def wait(self, seconds: float) -> bool:
        """Whether every event was published within `seconds` (or already)."""
        if not self.done.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.done.wait(), seconds)
        return self.done.is_set()

    def close(self) -> None:
        self._relay._forget(self)
        self.remaining.clear()


def _message(row: asyncpg.Record) -> OutboxMessage:
    return OutboxMessage(
        tenant_id=row["axon_tenant"],
        seq=row["seq"],
        event_id=row["event_id"],
        topic=row["topic"],
        key=bytes(row["key"]),
        payload=row["payload"],
        headers=json.loads(row["headers"]),
    )
