"""`mnemo.persist.v1` → `Ingest.persist`: decode (the runtime already validated the envelope and
its key), call the use case, hand refusals back to be dead-lettered."""

from __future__ import annotations

from collections.abc import Sequence

import asyncpg
import structlog
from mnemo_events import PersistRow
from mnemo_events.consumer import Received, Rejection
from prometheus_client import Counter

from mnemo_ingest.use_cases import Command, Ingest

log = structlog.get_logger("mnemo_ingest")

ROWS = Counter("mnemo_ingest_messages_total", "persist messages handled", ["outcome"])

# A database verdict on one row (a duplicate key, a value the column's constraints refuse) can
# never succeed on a retry: alone in its batch, such a row is refused with the database's reason.
ROW_VERDICTS = (asyncpg.IntegrityConstraintViolationError, asyncpg.DataError)


def persist_handler(ingest: Ingest):  # type: ignore[no-untyped-def]  # returns a BatchHandler
    async def handle(items: Sequence[Received[PersistRow]]) -> Sequence[Rejection]:
        commands = [
            Command(
                ref=item.delivery,
                event_id=item.envelope.event_id,
                tenant=item.envelope.tenant,
                store=item.envelope.data.store,
                values=item.envelope.data.values,
                producer=item.envelope.producer,
                trace_id=item.trace_id,
            )
            for item in items
        ]
        try:
            refusals = await ingest.persist(commands)
        except ROW_VERDICTS as error:
            if len(items) > 1:
                raise
            refusals = []
            reason = f"the database refused the row: {type(error).__name__}: {error}"
            ROWS.labels("refused").inc()
            return [Rejection(items[0].delivery, reason)]
        ROWS.labels("refused").inc(len(refusals))
        ROWS.labels("written_or_duplicate").inc(len(items) - len(refusals))
        for refusal in refusals:
            log.info("row_refused", reason=refusal.reason, offset=refusal.ref.offset)
        return [Rejection(refusal.ref, refusal.reason) for refusal in refusals]

    return handle
