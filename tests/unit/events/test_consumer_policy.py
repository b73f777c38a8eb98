"""The consumer's policy over in-memory records and a recording dead-letter sink: outages are
retried and never dead-lettered (a missing grant included), poison is dead-lettered alone."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence

import asyncpg
import pytest
from mnemo_events import PersistRow, new_envelope
from mnemo_events.consumer import Consumer, Received, Rejection, RetryPolicy, Stopped
from mnemo_events.dead_letters import DeadLetter, Delivery
from mnemo_events.readiness import consumer_healthy
from mnemo_service import TRANSIENT

TENANT = uuid.uuid4()


def delivery(offset: int, title: str, key: bytes | None = None) -> Delivery:
    envelope = new_envelope(
        PersistRow(store="Docs", values={"title": title}),
        tenant=TENANT,
        producer="test",
        event_type="mnemo.persist.v1",
    )
    return Delivery(
        topic="t",
        partition=0,
        offset=offset,
        key=str(TENANT).encode() if key is None else key,
        value=envelope.model_dump_json().encode(),
    )


class Recorder:
    def __init__(self, failures: list[BaseException] | None = None) -> None:
        self.failures = list(failures or [])
        self.handled: list[str] = []
        self.letters: list[DeadLetter] = []

    async def handle(self, items: Sequence[Received[PersistRow]]) -> Sequence[Rejection]:
        if any(i.envelope.data.values["title"] == "poison" for i in items):
            raise ValueError("cannot write poison")
        if self.failures:
            raise self.failures.pop(0)
        self.handled.extend(str(i.envelope.data.values["title"]) for i in items)
        return []

    async def dead_letter(self, letters: Sequence[DeadLetter]) -> None:
        self.letters.extend(letters)


def consumer(recorder: Recorder, stopping: asyncio.Event | None = None) -> Consumer[PersistRow]:
    return Consumer(
        topic="t",
        group="g",
        data_model=PersistRow,
        handler=recorder.handle,
        dead_letters=recorder.dead_letter,
        retry=RetryPolicy(
            max_attempts=3, backoff_seconds=0.001, backoff_max_seconds=0.005, transient=TRANSIENT
        ),
        stopping=stopping or asyncio.Event(),
    )


async def test_a_missing_grant_is_retried_reported_by_readiness_and_never_dead_lettered() -> None:
    denied = asyncpg.InsufficientPrivilegeError("permission denied for table docs")
    recorder = Recorder(failures=[denied] * 8)  # more failures than max_attempts
    subject = consumer(recorder)
    ready = consumer_healthy([subject])
    seen_while_failing: list[str | None] = []

    async def watch() -> None:
        while not recorder.handled:  # sample readiness between the handler's failed attempts
            seen_while_failing.append(await ready())
            await asyncio.sleep(0.001)

    watcher = asyncio.create_task(watch())
    await subject.process([delivery(0, "a"), delivery(1, "b")])
    await watcher
    assert recorder.letters == []
    assert recorder.handled == ["a", "b"]
    assert any(p and "InsufficientPrivilegeError" in p for p in seen_while_failing)
    assert await ready() is None


async def test_stopping_during_an_outage_leaves_the_records_uncommitted() -> None:
    stopping = asyncio.Event()
    recorder = Recorder(failures=[ConnectionRefusedError("database away")] * 1000)
    subject = consumer(recorder, stopping)
    asyncio.get_running_loop().call_later(0.05, stopping.set)
    with pytest.raises(Stopped):
        await subject.process([delivery(0, "a")])
    assert recorder.letters == []
    assert recorder.handled == []


async def test_a_poison_record_is_dead_lettered_alone_after_the_bounded_attempts() -> None:
    recorder = Recorder()
    await consumer(recorder).process([delivery(0, "a"), delivery(1, "poison"), delivery(2, "c")])
    assert recorder.handled == ["a", "c"]
    [letter] = recorder.letters
    assert letter.delivery.offset == 1
    assert letter.attempts == 3
    assert "cannot write poison" in letter.reason


async def test_bad_bytes_and_a_foreign_key_are_dead_lettered_at_once_with_reasons() -> None:
    recorder = Recorder()
    bad = Delivery(topic="t", partition=0, offset=0, key=b"k", value=b"{not json")
    foreign = delivery(1, "x", key=str(uuid.uuid4()).encode())
    await consumer(recorder).process([bad, foreign, delivery(2, "ok")])
    assert recorder.handled == ["ok"]
    reasons = {letter.delivery.offset: letter.reason for letter in recorder.letters}
    assert reasons[0].startswith("invalid envelope")
    assert reasons[1].startswith("key mismatch")
    assert all(letter.attempts == 1 for letter in recorder.letters)
