"""Readiness checks for the Kafka side of a service (`/readyz`): the broker answers, every
subscriber has partitions assigned, and no consumer is stuck retrying an outage. Each returns
None when ready, else what is not."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from faststream.kafka import KafkaBroker

from mnemo_events.consumer import Consumer, partitions_assigned

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


def consumer_healthy(consumers: Sequence[Consumer[Any]]) -> Check:
    """Not ready while a consumer retries a transient failure (a database away, a missing grant):
    the message names the consumer's topic and the failure."""

    async def check() -> str | None:
        stuck = [f"{c.topic}: {c.outage}" for c in consumers if c.outage is not None]
        return "retrying a transient failure: " + "; ".join(stuck) if stuck else None

    return check
