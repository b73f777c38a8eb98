"""Publishing persist commands from the CLI: `PersistCommand` (libs/corpus, pure) becomes the one
persist event model, `mnemo_events.PersistRow`, in an envelope keyed by its tenant."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from mnemo_corpus import PersistCommand
from mnemo_events import PERSIST, PersistRow, new_envelope
from mnemo_events.broker import create_broker, publish
from mnemo_events.settings import KafkaSettings

PRODUCER = "mnemo-cli"
WINDOW = 256
"""Sends in flight at once (each waits for the broker's acknowledgement)."""


def persist_row(command: PersistCommand | Mapping[str, Any]) -> PersistRow:
    """The event data of one command (a `PersistCommand`, or a `{store, values}` mapping)."""
    if isinstance(command, PersistCommand):
        return PersistRow(store=command.store, values=dict(command.values))
    return PersistRow.model_validate(command)


@dataclass(frozen=True, slots=True)
class Sent:
    sent: int
    failed: int
    errors: tuple[str, ...]
    event_ids: tuple[uuid.UUID, ...] = ()
    """The events the broker acknowledged."""


async def publish_rows(
    rows: Iterable[PersistRow],
    tenant: uuid.UUID,
    *,
    settings: KafkaSettings | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> Sent:
    """Publish every row to `mnemo.persist.v1` for `tenant`; counts what the broker acknowledged."""
    broker = create_broker(settings or KafkaSettings(), client_id=PRODUCER)
    await broker.connect()
    sent = failed = 0
    errors: list[str] = []
    acknowledged: list[uuid.UUID] = []

    async def one(row: PersistRow) -> None:
        nonlocal sent, failed
        envelope = new_envelope(row, tenant=tenant, producer=PRODUCER, event_type=PERSIST)
        try:
            await publish(broker, PERSIST, envelope)  # type: ignore[arg-type]  # Envelope is covariant in use
            sent += 1
            acknowledged.append(envelope.event_id)
        except Exception as error:
            failed += 1
            if len(errors) < 5:
                errors.append(f"{type(error).__name__}: {error}")
        if on_progress is not None:
            on_progress(sent, failed)

    try:
        window: list[asyncio.Task[None]] = []
        for row in rows:
            window.append(asyncio.create_task(one(row)))
            if len(window) >= WINDOW:
                await asyncio.gather(*window)
                window = []
        await asyncio.gather(*window)
    finally:
        await broker.stop()
    return Sent(sent, failed, tuple(errors), tuple(acknowledged))
