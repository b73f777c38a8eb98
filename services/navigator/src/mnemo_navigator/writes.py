"""Writing rows over HTTP: a caller's rows become persist events, durably in Kafka before the
answer, written by ingest exactly as a producer's `mnemo.persist.v1` messages are.

The navigator writes no store row itself (ingest stays the only writer, ARCHITECTURE §1). A write
checks what it can before accepting anything: the token grants `write` and names an existing
tenant, the store is declared (a registered store corpus reads it), and every row passes the
store's column rules (`mnemo_axon.row_values`) and, for an edge store, the graph rules (G3, G4);
otherwise the whole request is refused and nothing is queued. A client-confined token (a `client`
claim) may write only a store that every corpus reading it pins by equalities on the store's own
columns (`column == '${client.name}'`): those columns are set from the claim, whatever the body
says. The accepted rows go to the outbox in one transaction, one persist envelope each, with the
caller named as the envelope's producer (so ingest's `store:<name>:persist` audit row names them);
a caller may name the event ids itself, so that a request it resends (after a timeout, a 503) queues
each row once (the same id with other data is a 409). The call returns once the relay has published
every one of them, and, when asked to wait, once
ingest has processed them (its inbox holds their ids: written, parked until an edge's document
arrives, or refused). What ingest refuses then (an edge whose documents are in another scope, a
duplicate key) is dead-lettered by ingest with the reason, as for any persist message.

Forgetting a document (`Writes.forget`) goes the same way, as one `mnemo.forget.v1` command: the
token grants `write`, the store is a corpus's documents store, and the document is there for the
caller (its tenant's; for a client-confined token, within the pinned scope, which the command also
carries as its match so ingest cannot remove anything outside it). A document the caller cannot
see is a 404, whether it is another tenant's, another end-client's or none at all; nothing is
queued.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from mnemo_auth import Principal
from mnemo_axon.errors import AxonError
from mnemo_axon.ir import StoreDecl
from mnemo_axon.row_values import InvalidRowError, check_store_row
from mnemo_axon.where import parse_filter
from mnemo_axon.where.syntax import Connector, Operator, ParameterRef, StringValue, TextPart
from mnemo_events import PERSIST, PersistRow, new_envelope
from mnemo_events.models import ForgetRow
from mnemo_events.topics import FORGET
from mnemo_store import OutboxEvent, StoreCorpus
from mnemo_store.errors import InvalidValueError
from mnemo_store.row_values import check_payload

from mnemo_navigator.errors import (
    InvalidRequestError,
    NavigatorError,
    ScopeForbiddenError,
    UnknownTenantError,
)

WRITE_SCOPE = "write"
MAX_ROWS = 1000
"""The most rows one request carries (the body limit bounds them too)."""
MAX_WAIT_SECONDS = 30.0
"""The longest `wait` served: longer ones answer 422."""


class UnknownStoreError(NavigatorError):
    status = 404
    code = "NOT_FOUND"


class EventIdReusedError(NavigatorError):
    """An event id the caller sent was already queued with another store or values."""

    status = 409
    code = "EVENT_ID_REUSED"


class UnknownDocumentError(NavigatorError):
    """No such document for this token: another tenant's, another end-client's, or none at all
    (one answer for all three, so a caller learns nothing of rows it cannot see)."""

    status = 404
    code = "NOT_FOUND"


class TenantErasedError(NavigatorError):
    """The tenant was erased (`mnemo tenant erase`) while the request waited: its queued rows were
    removed with everything else of the tenant and will never be written."""

    status = 410
    code = "TENANT_ERASED"


class NotPublishedError(NavigatorError):
    """The rows are in the outbox (they will be published) but the relay did not publish them in
    time; resending would write them twice."""

    status = 503
    code = "NOT_YET_PUBLISHED"


@dataclass(frozen=True, slots=True)
class StoreReaders:
    """A declared store and the corpora that read it, each with the role the store plays there."""

    store: StoreDecl
    documents_of: tuple[StoreCorpus, ...] = ()
    relations_of: tuple[StoreCorpus, ...] = ()

    @property
    def corpora(self) -> tuple[StoreCorpus, ...]:
        return (*self.documents_of, *self.relations_of)


class StoreDirectory(Protocol):
    """The declared stores, by name (the registry's store corpora). A miss is never stale."""

    async def store(self, name: str) -> StoreReaders | None: ...


class WriteLog(Protocol):
    """Where accepted rows go and how far they got: the outbox (committed together), then Kafka
    (the relay marks them published), then ingest (its inbox holds their ids)."""

    async def queue(self, tenant: uuid.UUID, events: Sequence[OutboxEvent]) -> None:
        """Queue `events` in one transaction. An event whose id is queued already with the same
        data (a resent request) is kept once; with other data, `EventIdReusedError`."""
        ...

    async def until_published(
        self, tenant: uuid.UUID, event_ids: Sequence[uuid.UUID], within: float
    ) -> bool:
        """Whether the relay published every one of `event_ids` within `within` seconds;
        `TenantErasedError` once the tenant is erased (its queued events are gone)."""
        ...

    async def processed(self, tenant: uuid.UUID, event_ids: Sequence[uuid.UUID]) -> set[uuid.UUID]:
        """Those of `event_ids` ingest has processed (written, parked, skipped as repeats or
        refused); `TenantErasedError` once the tenant is erased."""
        ...


class StoredDocuments(Protocol):
    """Whether a document is there, read under the tenant's row-level security."""

    async def exists(
        self,
        tenant: uuid.UUID,
        store: StoreDecl,
        id_column: str,
        document_id: str,
        match: Mapping[str, str],
    ) -> bool:
        """True when `tenant` has the document `document_id` (its id as text) in `store` and each
        column of `match` equals its value (as text)."""
        ...


class TenantCheck(Protocol):
    async def tenant_exists(self, tenant: uuid.UUID) -> bool: ...


@dataclass(frozen=True, slots=True)
class WritePolicy:
    pinned_scopes: Mapping[str, str]
    """Corpus id → scope template (the navigator's own table; reads and writes use one)."""
    persist_topic: str = PERSIST
    forget_topic: str = FORGET
    publish_seconds: float = 10.0
    """How long a write waits for the relay before answering 503 (the rows stay queued)."""


@dataclass(frozen=True, slots=True)
class WriteResult:
    event_ids: tuple[uuid.UUID, ...]
    processed: tuple[uuid.UUID, ...] | None
    """With a wait: the ids ingest processed within it (None without one)."""
    timings: Mapping[str, float] = field(default_factory=dict)
    """Milliseconds of each phase: check (token, store, rows, envelopes), queue (the outbox
    transaction), publish (until the relay has them in Kafka), ingest (the wait, when asked)."""


class Writes:
    def __init__(
        self,
        tenants: TenantCheck,
        directory: StoreDirectory,
        log: WriteLog,
        policy: WritePolicy,
        documents: StoredDocuments | None = None,
    ) -> None:
        self._tenants = tenants
        self._directory = directory
        self._log = log
        self._policy = policy
        self._documents = documents

    async def forget(
        self,
        principal: Principal,
        store_name: str,
        document_id: str,
        *,
        wait: float | None = None,
        traceparent: str | None = None,
        event_id: uuid.UUID | None = None,
    ) -> WriteResult:
        """Queue a forget command for the document `document_id` of `store_name` (a documents
        store), after checking that the caller can see it: its tenant's, and for a
        client-confined token within its pinned scope (the command carries that scope as its
        match, so ingest removes nothing outside it either). Not there: 404, nothing queued."""
        principal.require(WRITE_SCOPE)
        if not document_id or len(document_id) > 1024 or "\x00" in document_id:
            raise InvalidRequestError("id: 1 to 1024 characters, no NUL")
        _check_wait(wait)
        tenant = await self._existing_tenant(principal)
        readers = await self._directory.store(store_name)
        if readers is None or not readers.documents_of or self._documents is None:
            raise UnknownStoreError(
                f"unknown store {store_name!r}: no registered corpus reads it as its documents "
                "(forget names a document by its id)"
            )
        match = self._forced_columns(principal, readers) if principal.client else {}
        id_column = readers.documents_of[0].id_column
        if not await self._documents.exists(tenant, readers.store, id_column, document_id, match):
            raise UnknownDocumentError(
                f"no document {document_id!r} in store {store_name!r} for this token"
            )
        envelope = new_envelope(
            ForgetRow(store=store_name, id=document_id, match=match),
            tenant=tenant,
            producer=_producer(principal),
            event_type=FORGET,
            event_id=event_id,
            trace=traceparent,
        )
        headers = {"content-type": "application/json"}
        if traceparent:
            headers["traceparent"] = traceparent
        event = OutboxEvent(
            event_id=envelope.event_id,
            topic=self._policy.forget_topic,
            key=str(tenant).encode(),
            payload=envelope.model_dump(mode="json"),
            headers=headers,
        )
        await self._log.queue(tenant, [event])
        ids = (event.event_id,)
        if not await self._log.until_published(tenant, ids, self._policy.publish_seconds):
            raise NotPublishedError(
                f"the forget command is queued in the outbox but was not in Kafka within "
                f"{self._policy.publish_seconds:g} s; it will be published and carried out (do "
                f"not resend it): event id {event.event_id}"
            )
        if wait is None:
            return WriteResult(ids, None)
        done: set[uuid.UUID] = set()

        async def processed() -> bool:
            done.update(await self._log.processed(tenant, list(ids)))
            return bool(done)

        await _until(processed, wait)
        return WriteResult(ids, tuple(done))

    async def write(
        self,
        principal: Principal,
        store_name: str,
        rows: Sequence[Mapping[str, Any]],
        *,
        wait: float | None = None,
        traceparent: str | None = None,
        event_ids: Sequence[uuid.UUID] | None = None,
    ) -> WriteResult:
        """Queue `rows` for `store_name`; `event_ids` (one per row, the caller's) make a resent
        request write each row once."""
        started = time.perf_counter()
        principal.require(WRITE_SCOPE)
        if not rows or len(rows) > MAX_ROWS:
            raise InvalidRequestError(f"rows: send 1 to {MAX_ROWS} rows, got {len(rows)}")
        if event_ids is not None and (
            len(event_ids) != len(rows) or len(set(event_ids)) != len(event_ids)
        ):
            raise InvalidRequestError(
                f"event_ids: one distinct id per row ({len(rows)} rows), got {len(event_ids)} "
                f"ids, {len(set(event_ids))} distinct"
            )
        _check_wait(wait)
        tenant = await self._existing_tenant(principal)
        readers = await self._directory.store(store_name)
        if readers is None:
            raise UnknownStoreError(
                f"unknown store {store_name!r}: no registered corpus reads a store of that name "
                "(declare it and run `mnemo apply`)"
            )
        forced = self._forced_columns(principal, readers) if principal.client else {}
        values = [{**row, **forced} for row in rows]
        for index, row in enumerate(values):
            _check(readers, index, row)
        producer = _producer(principal)
        envelopes = [
            new_envelope(
                PersistRow(store=store_name, values=row),
                tenant=tenant,
                producer=producer,
                event_type=PERSIST,
                event_id=None if event_ids is None else event_ids[index],
                trace=traceparent,
            )
            for index, row in enumerate(values)
        ]
        headers = {"content-type": "application/json"}
        if traceparent:
            headers["traceparent"] = traceparent
        events = [
            OutboxEvent(
                event_id=envelope.event_id,
                topic=self._policy.persist_topic,
                key=str(tenant).encode(),
                payload=envelope.model_dump(mode="json"),
                headers=headers,
            )
            for envelope in envelopes
        ]
        timings = {"check": _ms_since(started)}
        queued = time.perf_counter()
        await self._log.queue(tenant, events)
        timings["queue"] = _ms_since(queued)
        ids = tuple(event.event_id for event in events)
        relayed = time.perf_counter()
        published = await self._log.until_published(tenant, ids, self._policy.publish_seconds)
        timings["publish"] = _ms_since(relayed)
        if not published:
            raise NotPublishedError(
                f"the {len(ids)} rows are queued in the outbox but were not in Kafka within "
                f"{self._policy.publish_seconds:g} s; they will be published and written (do not "
                f"resend them): event ids {', '.join(str(i) for i in ids[:20])}"
                + (" …" if len(ids) > 20 else "")
            )
        if wait is None:
            return WriteResult(ids, None, timings)
        seen: set[uuid.UUID] = set()

        async def all_processed() -> bool:
            seen.update(await self._log.processed(tenant, [i for i in ids if i not in seen]))
            return len(seen) == len(ids)

        waited = time.perf_counter()
        await _until(all_processed, wait)
        timings["ingest"] = _ms_since(waited)
        return WriteResult(ids, tuple(i for i in ids if i in seen), timings)

    async def _existing_tenant(self, principal: Principal) -> uuid.UUID:
        """The token's tenant, or UnknownTenantError when this deployment has no such tenant."""
        tenant = principal.tenant
        if not await self._tenants.tenant_exists(tenant):
            raise UnknownTenantError(
                f"unknown tenant {tenant}: the token names a tenant that does not exist in this "
                "deployment"
            )
        return tenant

    def _forced_columns(self, principal: Principal, readers: StoreReaders) -> dict[str, str]:
        """The columns a client-confined token's rows carry from its claim: from the pinned scope
        of every corpus reading the store, each an AND of equalities on this store's columns."""
        if not readers.corpora:
            raise ScopeForbiddenError(f"store {readers.store.name!r} is read by no corpus")
        forced: dict[str, str] = {}
        columns = {column.name for column in readers.store.columns}
        for corpus in readers.corpora:
            template = self._policy.pinned_scopes.get(corpus.name)
            if template is None:
                raise ScopeForbiddenError(
                    f"this token is confined to an end-client (its 'client' claim), and corpus "
                    f"{corpus.name!r}, which reads store {readers.store.name!r}, has no pinned "
                    "scope to confine its writes by; use a tenant-wide token"
                )
            for column, value in _pinned_values(template, principal.client, corpus.name).items():
                if column not in columns:
                    raise ScopeForbiddenError(
                        f"the pinned scope of {corpus.name!r} names column {column!r}, which "
                        f"store {readers.store.name!r} lacks: a client-confined token cannot be "
                        "confined when writing it; use a tenant-wide token"
                    )
                if forced.setdefault(column, value) != value:
                    raise ScopeForbiddenError(
                        f"the corpora reading store {readers.store.name!r} pin column {column!r} "
                        "to different values for this token"
                    )
        return forced


def _pinned_values(template: str, claim: Mapping[str, str], corpus: str) -> dict[str, str]:
    """Column → the value `template` pins it to for `claim`, or ScopeForbiddenError when the
    template is not an AND of `column == '…'` conditions or the claim cannot bind it."""
    try:
        parsed = parse_filter(template)
    except AxonError as error:
        raise ScopeForbiddenError(f"the pinned scope of {corpus!r} is invalid: {error}") from None
    refused = ScopeForbiddenError(
        f"the pinned scope of {corpus!r} is not made of equalities joined by AND, so a "
        "client-confined token's rows cannot be set to it; use a tenant-wide token"
    )
    if any(connector is not Connector.AND for connector in parsed.connectors):
        raise refused
    values: dict[str, str] = {}
    for condition in parsed.conditions:
        if condition.operator is not Operator.EQ or not isinstance(condition.value, StringValue):
            raise refused
        text = []
        for part in condition.value.parts:
            if isinstance(part, TextPart):
                text.append(part.text)
                continue
            assert isinstance(part, ParameterRef)  # the two kinds of parts
            if len(part.path) != 2 or part.path[0] != "client" or part.path[1] not in claim:
                raise ScopeForbiddenError(
                    f"the pinned scope of {corpus!r} needs ${{{part.name}}}, which this token's "
                    "'client' claim does not carry"
                )
            text.append(claim[part.path[1]])
        values[condition.column] = "".join(text)
    return values


def _ms_since(started: float) -> float:
    return (time.perf_counter() - started) * 1000


def _check_wait(wait: float | None) -> None:
    if wait is not None and not 0 <= wait <= MAX_WAIT_SECONDS:
        raise InvalidRequestError(f"wait: 0 to {MAX_WAIT_SECONDS:g} seconds, got {wait:g}")


def _check(readers: StoreReaders, index: int, values: Mapping[str, Any]) -> None:
    """Ingest's checks of one row (`check_store_row`: the store's column rules, G3 and G4 for
    each corpus reading it as its edges) and the outbox's jsonb rules, as a 422 naming the row."""
    edges = [(corpus.etype_column, corpus.weight_column) for corpus in readers.relations_of]
    try:
        check_store_row(readers.store, values, edges)
        check_payload(values, f"rows[{index}]")  # what the outbox's jsonb must hold
    except (InvalidRowError, InvalidValueError) as error:
        message = str(error)
        raise InvalidRequestError(
            message if message.startswith("rows[") else f"rows[{index}]: {message}"
        ) from None


def _producer(principal: Principal) -> str:
    """The envelope's producer: the navigator and the caller, which ingest's audit row names."""
    name = f"mnemo.navigator/http {principal.subject or 'anonymous'}"
    if principal.client:
        name += " (client " + ",".join(f"{k}={v}" for k, v in sorted(principal.client.items()))
        name += ")"
    return name.replace("\x00", "\ufffd")[:200]


async def _until(condition: Any, within: float) -> bool:
    """Poll `condition` (an async callable) until it holds or `within` seconds pass."""
    deadline = time.monotonic() + within
    pause = 0.005
    while True:
        if await condition():
            return True
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(min(pause, max(deadline - time.monotonic(), 0)))
        pause = min(pause * 2, 0.1)
