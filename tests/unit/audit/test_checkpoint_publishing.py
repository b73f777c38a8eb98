"""PublishCheckpoints: one checkpoint per chain that grew, read back from the log; a tenant whose
checkpoint could not be sent is tried again next round."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
from mnemo_audit.use_cases import PublishCheckpoints
from mnemo_events.audit_checkpoints import Checkpoint, CheckpointFormatError

AT = datetime(2026, 12, 5, tzinfo=UTC)


class Heads:
    def __init__(self, heads: dict[uuid.UUID, tuple[int, bytes]]) -> None:
        self.heads = heads

    async def head(self, tenant: uuid.UUID) -> tuple[int, bytes] | None:
        return self.heads.get(tenant)


class Sink:
    def __init__(self, fail_for: set[uuid.UUID] | None = None) -> None:
        self.sent: list[Checkpoint] = []
        self.fail_for = fail_for or set()

    async def publish(self, checkpoint: Checkpoint) -> None:
        if checkpoint.tenant in self.fail_for:
            raise ConnectionError("broker away")
        self.sent.append(checkpoint)


async def test_only_the_chains_that_grew_are_checkpointed_once_each_with_their_head() -> None:
    a, b, quiet = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    heads = Heads({a: (3, b"a" * 32), b: (9, b"b" * 32), quiet: (1, b"q" * 32)})
    sink = Sink()
    publish = PublishCheckpoints(heads, sink, clock=lambda: AT)
    publish.grew(a)
    publish.grew(b)
    publish.grew(a)
    assert await publish() == 2
    assert sorted((c.tenant, c.seq, c.hash, c.at) for c in sink.sent) == sorted(
        [(a, 3, b"a" * 32, AT), (b, 9, b"b" * 32, AT)]
    )
    assert await publish() == 0


async def test_a_checkpoint_that_could_not_be_sent_is_pending_for_the_next_round() -> None:
    a, b = sorted([uuid.uuid4(), uuid.uuid4()])
    sink = Sink(fail_for={a})
    publish = PublishCheckpoints(Heads({a: (1, b"a" * 32), b: (2, b"b" * 32)}), sink)
    publish.grew(a)
    publish.grew(b)
    with pytest.raises(ConnectionError):
        await publish()
    assert publish.pending == {a, b}
    sink.fail_for.clear()
    assert await publish() == 2


def test_a_checkpoint_reads_back_as_itself_and_garbage_is_refused() -> None:
    checkpoint = Checkpoint(uuid.uuid4(), 7, bytes(range(32)), AT)
    assert Checkpoint.decode(checkpoint.encode()) == checkpoint
    for value in (b"", b"{}", b'{"tenant": "x", "seq": 1, "hash": "00", "at": "2026-01-01"}'):
        with pytest.raises(CheckpointFormatError):
            Checkpoint.decode(value)
