"""Readiness checks for the Kafka side of a service (`/readyz`): the broker answers, and every
subscriber has partitions assigned. Each returns None when ready, else what is not."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from faststream.kafka import KafkaBroker

from mnemo_events.consumer import partitions_assigned

Check = Callable[[], Awaitable[str | None]]


def broker_reachable(broker: KafkaBroker, timeout: float = 1.5) -> Check:
    async def check() -> str | None:
        return None if await broker.ping(timeout=timeout) else "Kafka broker unreachable"

    return check


def partitions_ready(subscribers: Sequence[Any]) -> Check:
    async def check() -> str | None:
        waiting = [
            ",".join(t.name for t in s.topics) for s in subscribers if not partitions_assigned(s)
        ]
        return f"no partitions assigned yet for {'; '.join(waiting)}" if waiting else None

    return check
