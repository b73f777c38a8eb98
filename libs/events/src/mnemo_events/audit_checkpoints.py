"""Checkpoints of the audit chains' heads on a compacted Kafka topic, `mnemo.audit.checkpoints.v1`.

The audit service publishes, per tenant whose chain grew, `{tenant, seq, hash, at}` keyed by the
tenant, so compaction keeps each tenant's latest. The topic lives outside the database: the owner
role, which can disable the log's triggers and rewrite or cut its rows, cannot reach it, so
comparing a chain with its latest checkpoint shows a tail that was cut (the chain ends before the
checkpoint's seq) or rewritten (the row at that seq has another hash). `read_checkpoints` reads the
topic from its beginning to its end as the read starts (no consumer group).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from aiokafka.errors import KafkaError

from mnemo_events.provisioning import ensure_compacted_topic
from mnemo_events.settings import KafkaSettings
from mnemo_events.topic_snapshot import read_to_end
from mnemo_events.topics import AUDIT_CHECKPOINTS

CHECKPOINTS: Final = AUDIT_CHECKPOINTS


class CheckpointReadError(Exception):
    """The checkpoint topic could not be read (the broker's error, in one line)."""


class CheckpointFormatError(ValueError):
    """A record of the checkpoint topic that is not a checkpoint."""


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A tenant's chain head as the audit service saw it at `at`."""

    tenant: uuid.UUID
    seq: int
    hash: bytes
    at: datetime

    def encode(self) -> bytes:
        return json.dumps(
            {
                "tenant": str(self.tenant),
                "seq": self.seq,
                "hash": self.hash.hex(),
                "at": self.at.isoformat(),
            },
            sort_keys=True,
        ).encode()

    @classmethod
    def decode(cls, value: bytes) -> Checkpoint:
        try:
            data: Any = json.loads(value)
            checkpoint = cls(
                tenant=uuid.UUID(data["tenant"]),
                seq=int(data["seq"]),
                hash=bytes.fromhex(data["hash"]),
                at=datetime.fromisoformat(data["at"]),
            )
        except (ValueError, KeyError, TypeError) as error:
            raise CheckpointFormatError(f"not a checkpoint: {error}") from None
        if checkpoint.seq < 1 or len(checkpoint.hash) != 32 or checkpoint.at.tzinfo is None:
            raise CheckpointFormatError("not a checkpoint: seq, hash or time out of range")
        return checkpoint


async def ensure_checkpoint_topic(settings: KafkaSettings, topic: str = CHECKPOINTS) -> None:
    """The checkpoint topic, compacted with one partition, when it does not exist."""
    await ensure_compacted_topic(settings, topic)


async def read_checkpoints(
    settings: KafkaSettings, topic: str = CHECKPOINTS
) -> dict[uuid.UUID, Checkpoint]:
    """Each tenant's latest checkpoint (by offset), from the topic's beginning to its end as the
    read starts; records that are not checkpoints, or whose key is not their tenant, are skipped.
    Raises `CheckpointReadError` when the broker cannot be read."""
    try:
        return await _read(settings, topic)
    except (KafkaError, OSError) as error:
        raise CheckpointReadError(
            f"cannot read {topic} from Kafka: {error or type(error).__name__}"
        ) from None


async def _read(settings: KafkaSettings, topic: str) -> dict[uuid.UUID, Checkpoint]:
    latest: dict[uuid.UUID, Checkpoint] = {}
    for record in await read_to_end(settings, [topic]):
        if record.value is None:
            continue
        try:
            checkpoint = Checkpoint.decode(record.value)
        except CheckpointFormatError:
            continue
        if record.key != str(checkpoint.tenant).encode():
            continue
        latest[checkpoint.tenant] = checkpoint
    return latest
