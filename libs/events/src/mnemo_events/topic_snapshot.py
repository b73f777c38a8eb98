"""Reading whole topics as they stand: every record from the beginning up to the end offsets the
read starts with, without a consumer group (nothing is committed, no other reader is disturbed).

The audit checkpoints and the dead-letter replay both read this way.
"""

from __future__ import annotations

from collections.abc import Sequence

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.structs import ConsumerRecord

from mnemo_events.security import client_options
from mnemo_events.settings import KafkaSettings


def groupless_consumer(settings: KafkaSettings) -> AIOKafkaConsumer:
    """A consumer with no group and no auto-commit, for assigning partitions by hand."""
    return AIOKafkaConsumer(
        bootstrap_servers=settings.bootstrap,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        request_timeout_ms=settings.request_timeout_ms,
        **client_options(settings),
    )


async def topic_partitions(settings: KafkaSettings, topics: Sequence[str]) -> list[TopicPartition]:
    """The partitions of those of `topics` that exist, by topic and partition (a consumer without
    a subscription has no metadata of them, so the administrator's description is asked)."""
    if not topics:
        return []
    admin = AIOKafkaAdminClient(
        bootstrap_servers=settings.bootstrap,
        request_timeout_ms=settings.request_timeout_ms,
        **client_options(settings),
    )
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        present = [topic for topic in dict.fromkeys(topics) if topic in existing]
        described = await admin.describe_topics(present) if present else []
    finally:
        await admin.close()
    return sorted(
        (
            TopicPartition(entry["topic"], part["partition"])
            for entry in described
            if entry.get("error_code") == 0
            for part in entry.get("partitions", ())
        ),
        key=lambda tp: (tp.topic, tp.partition),
    )


async def read_to_end(
    settings: KafkaSettings, topics: Sequence[str]
) -> list[ConsumerRecord[bytes, bytes]]:
    """Every record of `topics` (those that exist) below the end offsets as the read starts, each
    partition's in offset order. Kafka and connection errors propagate."""
    partitions = await topic_partitions(settings, topics)
    if not partitions:
        return []
    consumer = groupless_consumer(settings)
    await consumer.start()
    records: list[ConsumerRecord[bytes, bytes]] = []
    try:
        consumer.assign(partitions)
        ends = await consumer.end_offsets(partitions)
        await consumer.seek_to_beginning(*partitions)
        pending = {tp for tp in partitions if ends[tp] > 0}
        while pending:
            batch = await consumer.getmany(*pending, timeout_ms=1000)
            for tp, items in batch.items():
                records.extend(item for item in items if item.offset < ends[tp])
            for tp in list(pending):
                if await consumer.position(tp) >= ends[tp]:
                    pending.discard(tp)
    finally:
        await consumer.stop()
    return records
