"""Idempotent topic creation: every topic Mnemo uses and its dead-letter topic.

The broker runs with auto-creation off, so topics exist only because this module made them, with
the partitions and retention of `KafkaSettings`. `make up` runs it (`python -m
mnemo_events.provisioning`) and every service runs `ensure_topics` at start-up; a topic that already
exists is left as it is (its partition count is never changed behind an operator's back).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import TopicAlreadyExistsError

from mnemo_events.errors import TopicCreationError
from mnemo_events.security import client_options
from mnemo_events.settings import KafkaSettings
from mnemo_events.topics import AUDIT_CHECKPOINTS, DEAD_LETTER_SUFFIX, TOPICS, dead_letter_topic


def with_dead_letters(topics: Iterable[str]) -> tuple[str, ...]:
    """`topics` followed by each one's `<topic>.dlt` (dead-letter topics get no `.dlt` of their own)."""
    names = list(dict.fromkeys(topics))
    extra = [dead_letter_topic(t) for t in names if not t.endswith(DEAD_LETTER_SUFFIX)]
    return tuple(dict.fromkeys([*names, *extra]))


async def ensure_topics(
    settings: KafkaSettings,
    topics: Sequence[str] = TOPICS,
    *,
    client_id: str = "mnemo-provisioning",
) -> list[str]:
    """Create whichever of `topics` (and their dead-letter topics) do not exist; returns the names
    created. Safe to run concurrently from several processes."""
    wanted = with_dead_letters(topics)
    admin = _admin(settings, client_id)
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        missing = [name for name in wanted if name not in existing]
        created: list[str] = []
        for name in missing:
            retention = (
                settings.dead_letter_retention_ms
                if name.endswith(DEAD_LETTER_SUFFIX)
                else settings.retention_ms
            )
            topic = NewTopic(
                name=name,
                num_partitions=settings.partitions,
                replication_factor=settings.replication_factor,
                topic_configs={"retention.ms": str(retention)},
            )
            try:
                response = await admin.create_topics([topic])
            except TopicAlreadyExistsError:
                continue
            for topic_name, code, *rest in _errors(response):
                if code == TopicAlreadyExistsError.errno:
                    continue
                if code != 0:
                    message = rest[0] if rest else ""
                    raise TopicCreationError(
                        f"could not create topic {topic_name!r}: error {code} {message}".strip()
                    )
                created.append(topic_name)
        return created
    finally:
        await admin.close()


async def ensure_compacted_topic(
    settings: KafkaSettings, topic: str, *, client_id: str = "mnemo-provisioning"
) -> None:
    """`topic`, compacted with one partition, when it does not exist (nothing when the settings
    leave provisioning to an administrator). Safe to run concurrently."""
    if not settings.provision_topics:
        return
    admin = _admin(settings, client_id)
    await admin.start()
    try:
        if topic in set(await admin.list_topics()):
            return
        compacted = NewTopic(
            name=topic,
            num_partitions=1,
            replication_factor=settings.replication_factor,
            topic_configs={"cleanup.policy": "compact"},
        )
        try:
            await admin.create_topics([compacted])
        except TopicAlreadyExistsError:
            return
    finally:
        await admin.close()


def _admin(settings: KafkaSettings, client_id: str) -> AIOKafkaAdminClient:
    return AIOKafkaAdminClient(
        bootstrap_servers=settings.bootstrap,
        client_id=client_id,
        request_timeout_ms=settings.request_timeout_ms,
        **client_options(settings),
    )


def _errors(response: object) -> list[tuple[str, int, str]]:
    """The (topic, error code, message) triples of a CreateTopics response of any version."""
    return [tuple(entry) for entry in getattr(response, "topic_errors", [])]


async def provision(settings: KafkaSettings) -> list[str]:
    """Every Mnemo topic with its `.dlt`, and the audit service's compacted checkpoint topic (an
    administrator's run: a service whose user may not create topics finds them all made)."""
    created = await ensure_topics(settings)
    await ensure_compacted_topic(settings, AUDIT_CHECKPOINTS)
    return created


def main() -> None:
    """`python -m mnemo_events.provisioning`: create every Mnemo topic from the environment."""
    created = asyncio.run(provision(KafkaSettings()))
    wanted = with_dead_letters(TOPICS)
    print(f"topics: {len(wanted)} present, {len(created)} created now; audit checkpoints present")


if __name__ == "__main__":
    main()
