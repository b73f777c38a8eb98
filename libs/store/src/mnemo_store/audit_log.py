"""The audit log in Postgres: appending events (the database links the chain) and reading it back.

Every query runs in a transaction with the tenant set (`set_config('mnemo.tenant', …, true)`), so
row-level security confines it to that tenant's rows. Appending needs the audit role (`mnemo_audit`,
the only role with INSERT on `mnemo.audit_log`); reading works for any role granted SELECT.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from datetime import datetime
from types import TracebackType
from typing import Any, Self

import asyncpg

from mnemo_store.audit_chain import (
    AuditValueError,
    ChainReport,
    ChainRow,
    ChainVerifier,
    check_chain_value,
)
from mnemo_store.pools import open_pool

_SET_TENANT = "SELECT set_config('mnemo.tenant', $1, true)"

_COLUMNS = (
    "axon_tenant, seq, event_id, kind, occurred_at, producer, trace, payload::text AS payload,"
    " prev_hash, hash, recorded_at, payload_digest, redacted_at"
)

_APPEND = """
INSERT INTO mnemo.audit_log (axon_tenant, event_id, kind, occurred_at, producer, trace, payload)
SELECT $1, e.event_id, e.kind, e.occurred_at, e.producer, e.trace, e.payload::jsonb
FROM unnest($2::uuid[], $3::text[], $4::timestamptz[], $5::text[], $6::text[], $7::text[])
     WITH ORDINALITY AS e(event_id, kind, occurred_at, producer, trace, payload, i)
ORDER BY e.i
ON CONFLICT (axon_tenant, event_id) DO NOTHING
RETURNING event_id, seq
"""

_PAGE = f"""
SELECT {_COLUMNS} FROM mnemo.audit_log
WHERE axon_tenant = $1 AND seq > $2
  AND ($3::text IS NULL OR payload->>'corpus' = $3)
  AND ($4::text IS NULL OR kind = $4 OR payload->>'action' = $4)
  AND ($5::timestamptz IS NULL OR occurred_at >= $5)
  AND ($6::timestamptz IS NULL OR occurred_at < $6)
  AND ($7::jsonb IS NULL OR payload->'client' = $7::jsonb)
ORDER BY seq
LIMIT $8
"""

_TENANT_EXISTS = "SELECT EXISTS (SELECT FROM mnemo.tenants WHERE tenant_id = $1)"


@dataclass(frozen=True, slots=True)
class NewAuditEvent:
    """An event to append; the database assigns its seq, prev_hash and hash."""

    event_id: uuid.UUID
    kind: str
    occurred_at: datetime
    producer: str
    trace: str | None
    payload: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class AuditFilter:
    """Filters of a page of audit rows; None means any."""

    corpus: str | None = None
    event_type: str | None = None
    """Matches the row's kind (`query`, `persist`) or its action (`corpus:<name>:query`)."""
    since: datetime | None = None
    until: datetime | None = None
    client: Mapping[str, str] | None = None
    """Only rows whose payload's `client` object equals this one (JSON equality, so exact: key
    order aside, every key and value must match); a row with no `client` never matches."""


def row_from_record(record: Mapping[str, Any]) -> ChainRow:
    """A `ChainRow` from a row selected with this module's columns (payload as JSON text)."""
    return ChainRow(
        tenant=record["axon_tenant"],
        seq=record["seq"],
        event_id=record["event_id"],
        kind=record["kind"],
        occurred_at=record["occurred_at"],
        producer=record["producer"],
        trace=record["trace"],
        payload=json.loads(record["payload"]),
        prev_hash=bytes(record["prev_hash"]),
        hash=bytes(record["hash"]),
        recorded_at=record["recorded_at"],
        payload_digest=bytes(record["payload_digest"]),
        redacted_at=record["redacted_at"],
    )


class AuditLog:
    """A connection pool over `mnemo.audit_log`."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool

    @classmethod
    async def connect(cls, dsn: str, *, min_size: int = 1, max_size: int = 4) -> AuditLog:
        return cls(await open_pool(dsn, min_size=min_size, max_size=max_size))

    async def close(self) -> None:
        await self._pool.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    async def ping(self) -> None:
        await self._pool.fetchval("SELECT 1")

    async def tenant_exists(self, tenant: uuid.UUID) -> bool:
        return bool(await self._pool.fetchval(_TENANT_EXISTS, tenant))

    async def tenant_id_by_name(self, name: str) -> uuid.UUID | None:
        found: uuid.UUID | None = await self._pool.fetchval(
            "SELECT tenant_id FROM mnemo.tenants WHERE lower(name) = lower($1)", name
        )
        return found

    async def head_seq(self, tenant: uuid.UUID) -> int:
        """The tenant's last seq (0 when its chain is empty)."""
        async with self._pool.acquire() as connection, connection.transaction(readonly=True):
            await connection.execute(_SET_TENANT, str(tenant))
            value = await connection.fetchval(
                "SELECT max(seq) FROM mnemo.audit_log WHERE axon_tenant = $1", tenant
            )
        return int(value or 0)

    async def head(self, tenant: uuid.UUID) -> tuple[int, bytes] | None:
        """The tenant's last seq and its hash (None when its chain is empty)."""
        async with self._pool.acquire() as connection, connection.transaction(readonly=True):
            await connection.execute(_SET_TENANT, str(tenant))
            record = await connection.fetchrow(
                "SELECT seq, hash FROM mnemo.audit_log WHERE axon_tenant = $1"
                " ORDER BY seq DESC LIMIT 1",
                tenant,
            )
        return None if record is None else (int(record["seq"]), bytes(record["hash"]))

    async def hash_at(self, tenant: uuid.UUID, seq: int) -> bytes | None:
        """The hash of the tenant's row `seq` (None when there is no such row)."""
        async with self._pool.acquire() as connection, connection.transaction(readonly=True):
            await connection.execute(_SET_TENANT, str(tenant))
            value = await connection.fetchval(
                "SELECT hash FROM mnemo.audit_log WHERE axon_tenant = $1 AND seq = $2", tenant, seq
            )
        return None if value is None else bytes(value)

    async def append(
        self, tenant: uuid.UUID, events: Sequence[NewAuditEvent]
    ) -> dict[uuid.UUID, int]:
        """Append `events` in order, in one transaction; events already in the log are skipped.

        Returns the seq of each newly appended event. Raises `AuditValueError` before touching
        the database when a payload holds a value the chain cannot carry.
        """
        for event in events:
            check_chain_value(dict(event.payload), f"event {event.event_id}")
        if not events:
            return {}
        try:
            records = await self._insert(tenant, events)
        except asyncpg.DataError as error:
            raise AuditValueError(f"the database refused the events: {error}") from error
        return {record["event_id"]: record["seq"] for record in records}

    async def _insert(self, tenant: uuid.UUID, events: Sequence[NewAuditEvent]) -> list[Any]:
        async with self._pool.acquire() as connection, connection.transaction():
            await connection.execute(_SET_TENANT, str(tenant))
            return list(
                await connection.fetch(
                    _APPEND,
                    tenant,
                    [e.event_id for e in events],
                    [e.kind for e in events],
                    [e.occurred_at for e in events],
                    [e.producer for e in events],
                    [e.trace for e in events],
                    [json.dumps(dict(e.payload), allow_nan=False) for e in events],
                )
            )

    async def page(
        self,
        tenant: uuid.UUID,
        *,
        after_seq: int = 0,
        limit: int = 100,
        filters: AuditFilter | None = None,
    ) -> list[ChainRow]:
        """Up to `limit` rows with seq > `after_seq` matching `filters`, in seq order."""
        f = filters or AuditFilter()
        async with self._pool.acquire() as connection, connection.transaction(readonly=True):
            await connection.execute(_SET_TENANT, str(tenant))
            records = await connection.fetch(
                _PAGE,
                tenant,
                after_seq,
                f.corpus,
                f.event_type,
                f.since,
                f.until,
                None if f.client is None else json.dumps(dict(f.client)),
                limit,
            )
        return [row_from_record(record) for record in records]

    async def rows(
        self, tenant: uuid.UUID, *, after_seq: int = 0, batch: int = 2000
    ) -> AsyncGenerator[ChainRow, None]:
        """Every row after `after_seq`, in seq order, from one snapshot, fetched in batches."""
        async with (
            self._pool.acquire() as connection,
            aclosing(stream_rows(connection, tenant, after_seq=after_seq, batch=batch)) as rows,
        ):
            async for row in rows:
                yield row

    async def verify(self, tenant: uuid.UUID) -> ChainReport:
        """Verify the tenant's whole chain (one snapshot)."""
        async with self._pool.acquire() as connection:
            return await verify_tenant(connection, tenant)


async def stream_rows(
    connection: asyncpg.Connection, tenant: uuid.UUID, *, after_seq: int = 0, batch: int = 2000
) -> AsyncGenerator[ChainRow, None]:
    """The tenant's rows after `after_seq` in seq order, from one snapshot.

    Its own REPEATABLE READ transaction, or a savepoint of the caller's transaction. Close the
    iterator (`contextlib.aclosing`) when leaving it early.
    """
    nested = connection.is_in_transaction()
    isolation = None if nested else "repeatable_read"
    async with connection.transaction(isolation=isolation, readonly=not nested):
        await connection.execute(_SET_TENANT, str(tenant))
        last = after_seq
        while True:
            records = await connection.fetch(
                f"SELECT {_COLUMNS} FROM mnemo.audit_log WHERE axon_tenant = $1 AND seq > $2"
                " ORDER BY seq LIMIT $3",
                tenant,
                last,
                batch,
            )
            for record in records:
                yield row_from_record(record)
            if len(records) < batch:
                return
            last = records[-1]["seq"]


async def verify_tenant(connection: asyncpg.Connection, tenant: uuid.UUID) -> ChainReport:
    """Verify the tenant's chain over `connection` (any role that may read the audit log).

    Runs in its own transaction, or as a savepoint inside the caller's.
    """
    verifier = ChainVerifier()
    async with aclosing(stream_rows(connection, tenant)) as rows:
        async for row in rows:
            if verifier.feed(row) is not None:
                break
    return verifier.report()
