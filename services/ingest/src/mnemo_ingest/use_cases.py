"""Persisting rows: the only writer of store rows (ARCHITECTURE §3).

One transaction per tenant of a batch (the tenants' at once, each on its own connection): claim
each event in the inbox (a duplicate is skipped), take the revision rows of every corpus the batch
writes (in name order: no deadlock), insert the rows store by store, check every edge (G2: both
endpoints exist for this tenant and in the edge's scope; an edge whose endpoint has not arrived
waits in `pending_edges`), apply the waiting edges the new documents complete, and append to the outbox one `document.persisted` per document and one
`store:<name>:persist` audit event per store. Rows that can never be written come back as
`Refusal`s (the subscriber dead-letters them); everything else commits together.

Nothing is dropped without a record: of two messages with one event id, a refused first one does
not hide the second (each is judged on its own), and a message whose event id was already taken
with another payload (earlier in the batch, or processed before: the inbox keeps the payload's
digest) is refused as "duplicate event id with a different payload". Only a true repeat (same id,
same store and values) is skipped quietly.

`Forget` forgets documents (`mnemo.forget.v1`): per command, one unit of work claims the event in
the inbox (a redelivery does nothing twice), takes the revisions of every corpus reading the
document's store (or its edges' store), deletes the document (only this tenant's, and only when
the command's `match` columns agree: an end-client's pinned scope), every edge touching it in each
corpus's relations store and the parked edges naming it (except in a relations store that a corpus
with another documents store shares, while that store still holds a document of the id for the
tenant: the edges are that corpus's too), the navigation outcomes whose path went through it, and
appends one `store:<name>:delete` audit event naming who asked and what went, never
the content. A document that is not there (for this tenant and match) is refused, nothing removed.

The use cases reach storage only through the ports of `mnemo_ingest.ports` (Postgres adapters in
`adapters.py`, in-memory ones in `fakes.py`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import uuid
from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from mnemo_events import (
    AUDIT,
    DOCUMENT_PERSISTED,
    AuditRecorded,
    DocumentPersisted,
    PersistAudited,
    envelope_json,
    new_envelope,
)
from mnemo_events.models import DeleteAudited
from mnemo_store import OutboxEvent, StoreCorpus
from mnemo_store.erasure import TenantErasedError
from mnemo_store.ingest_writes import PendingEdge
from mnemo_telemetry.metrics import ROWS_PERSISTED

from mnemo_ingest.errors import InvalidRow
from mnemo_ingest.ports import (
    DeadLetters,
    Directory,
    IngestStore,
    IngestTransaction,
    StoreUse,
)
from mnemo_ingest.rows import coerce_row, key_text

PRODUCER = "mnemo.ingest"
DIFFERENT_PAYLOAD = "duplicate event id with a different payload"


@dataclass(frozen=True, slots=True)
class Command:
    """One persist command: a row for a store of `tenant`. `ref` is the caller's handle on the
    message, given back in a `Refusal`."""

    ref: Any
    event_id: uuid.UUID
    tenant: uuid.UUID
    store: str
    values: Mapping[str, Any]
    producer: str
    trace_id: str | None = None
    traceparent: str | None = None
    """The trace context the events this row causes carry (its `mnemo.persist` span)."""


@dataclass(frozen=True, slots=True)
class Refusal:
    ref: Any
    reason: str


@dataclass
class _Prepared:
    command: Command
    use: StoreUse
    row: dict[str, Any]
    repeats: list[Command] = field(default_factory=list)
    """Later commands of the batch with the identical row: claimed, never written; refused with
    this one when it is refused."""


class Ingest:
    def __init__(
        self,
        store: IngestStore,
        directory: Directory,
        dead_letters: DeadLetters,
        *,
        consumer: str,
        persisted_topic: str = DOCUMENT_PERSISTED,
        audit_topic: str = AUDIT,
    ) -> None:
        self._store = store
        self._directory = directory
        self._dead_letters = dead_letters
        self._consumer = consumer
        self._persisted_topic = persisted_topic
        self._audit_topic = audit_topic

    async def persist(self, commands: Sequence[Command]) -> list[Refusal]:
        """Write `commands` (any tenants); returns the ones refused, with reasons."""
        refusals: list[Refusal] = []
        by_tenant: dict[uuid.UUID, list[Command]] = defaultdict(list)
        for command in commands:
            by_tenant[command.tenant].append(command)
        known: list[tuple[uuid.UUID, list[Command]]] = []
        for tenant, group in by_tenant.items():
            if await self._directory.tenant_exists(tenant):
                known.append((tenant, group))
            else:
                refusals.extend(Refusal(c.ref, f"unknown tenant {tenant}") for c in group)
        # The tenants' units of work run at once (each on its own connection; no two share a
        # row), so a batch of several tenants waits for the slowest, not for their sum. Every one
        # finishes (commits or rolls back) before the first failure is raised.
        outcomes = await asyncio.gather(
            *(self._persist_known_tenant(tenant, group) for tenant, group in known),
            return_exceptions=True,
        )
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome
            refusals.extend(outcome)
        return refusals

    async def _persist_known_tenant(
        self, tenant: uuid.UUID, commands: Sequence[Command]
    ) -> list[Refusal]:
        try:
            return await self._persist_tenant(tenant, commands)
        except TenantErasedError as erased:  # the directory knew it from before the erase
            return [Refusal(c.ref, str(erased)) for c in commands]

    async def _prepare(
        self, commands: Sequence[Command]
    ) -> tuple[list[_Prepared], list[Refusal], dict[uuid.UUID, str]]:
        """The commands to write, the ones refused, and the payload digest of each event id taken.
        A command that repeats the row of an earlier command of the batch rides on it (one row,
        one write, one audit line). Of commands with one event id the first valid one is taken; a
        later one with the same payload is a repeat (skipped), with another payload refused."""
        prepared: list[_Prepared] = []
        refusals: list[Refusal] = []
        taken: dict[uuid.UUID, str] = {}
        rows: dict[tuple[str, Hashable], _Prepared] = {}
        for command in commands:
            digest = payload_digest(command.store, command.values)
            earlier = taken.get(command.event_id)
            if earlier is not None:
                if earlier != digest:
                    refusals.append(
                        Refusal(
                            command.ref,
                            f"{DIFFERENT_PAYLOAD}: event {command.event_id} came earlier in this "
                            "batch with another store or values (an event id names one event)",
                        )
                    )
                continue  # the same event twice in one batch: the first one is written
            use = await self._directory.store(command.store)
            if use is None:
                refusals.append(
                    Refusal(
                        command.ref,
                        f"unknown store {command.store!r}: no registered corpus reads a store of "
                        "that name (declare it and run `mnemo apply`)",
                    )
                )
                continue
            try:
                relations = use.role("relations")
                edges = (
                    [] if relations is None else [(relations.etype_column, relations.weight_column)]
                )
                row = coerce_row(use.store, command.values, edges)
            except InvalidRow as error:
                refusals.append(Refusal(command.ref, str(error)))
                continue
            taken[command.event_id] = digest
            identity = (use.store.name, _row_identity(row))
            first = rows.get(identity)
            if first is not None:
                first.repeats.append(command)
                continue
            rows[identity] = _Prepared(command, use, row)
            prepared.append(rows[identity])
        return prepared, refusals, taken

    async def _persist_tenant(
        self, tenant: uuid.UUID, commands: Sequence[Command]
    ) -> list[Refusal]:
        prepared, refusals, digests = await self._prepare(commands)
        if not prepared:
            return refusals
        late: list[tuple[PendingEdge, str]] = []
        async with self._store.tenant(tenant) as tx:
            fresh, different = await tx.inbox.claim(self._consumer, digests)
            refusals.extend(
                Refusal(
                    c.ref,
                    f"{DIFFERENT_PAYLOAD}: event {c.event_id} was processed before with another "
                    "store or values (an event id names one event; send a new event with a new id)",
                )
                for p in prepared
                for c in (p.command, *p.repeats)
                if c.event_id in different
            )
            claimed = [p for p in prepared if p.command.event_id in fresh]
            if not claimed:
                return refusals
            await tx.rows.take_revisions(c.name for p in claimed for c, _ in p.use.corpora)
            plain = [p for p in claimed if p.use.role("relations") is None]
            edges = [p for p in claimed if p.use.role("relations") is not None]
            written: dict[str, list[_Prepared]] = defaultdict(list)
            await _insert(tx, plain, written)
            new_documents = _document_ids(plain)
            to_write, edge_refusals = await self._place_edges(tx, edges)
            refusals.extend(edge_refusals)
            await _insert(tx, to_write, written)
            late = await self._apply_pending(tx, new_documents, written)
            await self._announce(tx, tenant, written)
        for store_name, rows in written.items():  # committed
            ROWS_PERSISTED.labels(store=store_name).inc(len(rows))
        for edge, reason in late:
            await self._dead_letters.dead_letter_edge(tenant, edge, reason)
        return refusals

    async def _place_edges(
        self, tx: IngestTransaction, edges: Sequence[_Prepared]
    ) -> tuple[list[_Prepared], list[Refusal]]:
        """Edges whose endpoints exist in scope (to insert now); others are parked or refused."""
        ready: list[_Prepared] = []
        refusals: list[Refusal] = []
        for corpus, group in _by_corpus(edges).items():
            scope = corpus.scope_columns
            ids = [
                key_text(p.row[c]) for p in group for c in (corpus.from_column, corpus.to_column)
            ]
            found = await tx.rows.existing_documents(corpus.documents, corpus.id_column, ids, scope)
            for item in group:
                verdict = _endpoints(item.row, corpus, scope, found)
                if verdict is None:
                    ready.append(item)
                elif isinstance(verdict, str):
                    refusals.append(Refusal(item.command.ref, verdict))
                    refusals.extend(
                        Refusal(
                            repeat.ref,
                            f"{verdict} (the same row as event {item.command.event_id} of this "
                            "batch, refused with it)",
                        )
                        for repeat in item.repeats
                    )
                else:
                    await tx.pending.hold(
                        item.command.event_id,
                        item.use.store.name,
                        _json_values(item.command.values),
                        verdict,
                    )
        return ready, refusals

    async def _apply_pending(
        self,
        tx: IngestTransaction,
        new_documents: dict[str, list[str]],
        written: dict[str, list[_Prepared]],
    ) -> list[tuple[PendingEdge, str]]:
        """Apply the parked edges the new documents complete; returns the ones to dead-letter."""
        ids = sorted({i for group in new_documents.values() for i in group})
        if not ids:
            return []
        waiting = await tx.pending.take_for(ids)
        late: list[tuple[PendingEdge, str]] = []
        apply: list[_Prepared] = []
        for edge in waiting:
            use = await self._directory.store(edge.store)
            corpus = use.role("relations") if use else None
            if use is None or corpus is None:
                late.append((edge, f"store {edge.store!r} is no longer a relations store"))
                continue
            try:
                row = coerce_row(use.store, edge.values)
            except InvalidRow as error:
                late.append((edge, str(error)))
                continue
            scope = corpus.scope_columns
            ends = [key_text(row[corpus.from_column]), key_text(row[corpus.to_column])]
            found = await tx.rows.existing_documents(
                corpus.documents, corpus.id_column, ends, scope
            )
            verdict = _endpoints(row, corpus, scope, found)
            if verdict is None:
                command = Command(None, edge.event_id, tx.tenant, edge.store, edge.values, PRODUCER)
                apply.append(_Prepared(command, use, row))
            elif isinstance(verdict, str):
                late.append((edge, verdict))
            else:
                await tx.pending.hold(
                    edge.event_id, edge.store, edge.values, verdict, edge.received_at
                )
        await _insert(tx, apply, written)
        return late

    async def _announce(
        self, tx: IngestTransaction, tenant: uuid.UUID, written: dict[str, list[_Prepared]]
    ) -> None:
        events: list[OutboxEvent] = []
        for store_name, items in written.items():
            documents_of = items[0].use.role("documents")
            relations_of = items[0].use.role("relations")
            row_ids: list[str] = []
            for item in items:
                if documents_of is not None:
                    doc_id = key_text(item.row[documents_of.id_column])
                    row_ids.append(doc_id)
                    for corpus, role in item.use.corpora:
                        if role != "documents":
                            continue
                        events.append(
                            persisted_event(
                                self._persisted_topic,
                                tenant,
                                corpus=corpus.name,
                                store=store_name,
                                doc_id=doc_id,
                                values=item.command.values,
                                event_id=uuid.uuid5(
                                    item.command.event_id, f"persisted:{corpus.name}"
                                ),
                                trace=item.command.traceparent,
                            )
                        )
                elif relations_of is not None:
                    row = item.row
                    row_ids.append(
                        f"{row[relations_of.from_column]}-{row[relations_of.etype_column]}->"
                        f"{row[relations_of.to_column]}"
                    )
                else:
                    row_ids.append(str(item.command.event_id))
            sources = tuple(sorted({i.command.event_id for i in items}))
            principals = sorted({i.command.producer for i in items})
            traces = [i.command.trace_id for i in items if i.command.trace_id]
            contexts = [i.command.traceparent for i in items if i.command.traceparent]
            audit = new_envelope(
                AuditRecorded(
                    record=PersistAudited(
                        action=f"store:{store_name}:persist",
                        store=store_name,
                        row_ids=tuple(row_ids),
                        source_event_ids=sources,
                        principal=",".join(principals),
                        trace_id=traces[0] if traces else None,
                    )
                ),
                tenant=tenant,
                producer=PRODUCER,
                event_type=AUDIT,
                # Random, never derived from the source events: a producer that could compute it
                # could send its own event with this id first and the audit log, which keeps the
                # first event of an id, would drop this one. Redelivery stays idempotent: the id
                # is fixed once, in the outbox row committed with the inbox claim of the sources.
                event_id=uuid.uuid4(),
                trace=contexts[0] if contexts else None,
            )
            events.append(_outbox(self._audit_topic, tenant, audit))
        await tx.outbox.append(events)

    async def sweep_expired(self, hold: timedelta) -> int:
        """Dead-letter the parked edges older than `hold`, every tenant; returns how many."""
        count = 0
        cutoff = datetime.now(UTC) - hold
        for tenant in await self._directory.tenants():
            async with self._store.tenant(tenant) as tx:
                expired = await tx.pending.take_expired(cutoff)
                for edge in expired:
                    await self._dead_letters.dead_letter_edge(
                        tenant,
                        edge,
                        f"edge waited {hold.total_seconds():g} s for document(s) "
                        f"{', '.join(edge.missing)}, which never arrived (G2)",
                    )
                count += len(expired)
        return count


@dataclass(frozen=True, slots=True)
class ForgetCommand:
    """Forget the document `document_id` of `store` for `tenant`, if its `match` columns equal
    those values. `ref` is the caller's handle on the message, given back in a `Refusal`."""

    ref: Any
    event_id: uuid.UUID
    tenant: uuid.UUID
    store: str
    document_id: str
    producer: str
    match: Mapping[str, str] = field(default_factory=dict)
    trace_id: str | None = None
    traceparent: str | None = None


@dataclass(frozen=True, slots=True)
class Forgotten:
    """What one forget removed (for the caller's log; the audit event says the same)."""

    event_id: uuid.UUID
    store: str
    document_id: str
    edges: int
    pending: int
    outcomes: int


class Forget:
    def __init__(
        self,
        store: IngestStore,
        directory: Directory,
        *,
        consumer: str,
        audit_topic: str = AUDIT,
    ) -> None:
        self._store = store
        self._directory = directory
        self._consumer = consumer
        self._audit_topic = audit_topic

    async def forget(
        self, commands: Sequence[ForgetCommand]
    ) -> tuple[list[Forgotten], list[Refusal]]:
        """Forget each command's document (any tenants, one unit of work each); returns what was
        forgotten and the commands refused, with reasons. A redelivered command is neither."""
        done: list[Forgotten] = []
        refusals: list[Refusal] = []
        for command in commands:
            try:
                outcome = await self._forget_one(command)
            except (
                _NothingToForgetError
            ) as missing:  # its unit of work, inbox claim included, undone
                refusals.append(Refusal(command.ref, str(missing)))
                continue
            except TenantErasedError as erased:
                refusals.append(Refusal(command.ref, str(erased)))
                continue
            if isinstance(outcome, Refusal):
                refusals.append(outcome)
            elif outcome is not None:
                done.append(outcome)
        return done, refusals

    async def _forget_one(self, command: ForgetCommand) -> Forgotten | Refusal | None:
        if not await self._directory.tenant_exists(command.tenant):
            return Refusal(command.ref, f"unknown tenant {command.tenant}")
        use = await self._directory.store(command.store)
        readers = [c for c, role in use.corpora if role == "documents"] if use else []
        if use is None or not readers:
            return Refusal(
                command.ref,
                f"store {command.store!r} holds no documents of a registered corpus: forget names "
                "a document by its id in a corpus's documents store",
            )
        unknown = sorted(name for name in command.match if use.store.column(name) is None)
        if unknown:
            return Refusal(
                command.ref,
                f"store {command.store!r} has no column(s) {', '.join(unknown)} to match",
            )
        digest = forget_digest(command.store, command.document_id, command.match)
        sharers = await self._sharers(command.store, readers)
        async with self._store.tenant(command.tenant) as tx:
            fresh, different = await tx.inbox.claim(self._consumer, {command.event_id: digest})
            if command.event_id in different:
                return Refusal(
                    command.ref,
                    f"{DIFFERENT_PAYLOAD}: event {command.event_id} was processed before with "
                    "another store, id or match (send a new event with a new id)",
                )
            if command.event_id not in fresh:
                return None  # a redelivery: forgotten the first time
            corpora = {c.name: c for c in readers}
            await tx.rows.take_revisions(corpora)
            id_column = readers[0].id_column
            if not await tx.rows.delete_document(
                use.store, id_column, command.document_id, command.match
            ):
                raise _NothingToForgetError(
                    f"no document {command.document_id!r} in store {command.store!r} for tenant "
                    f"{command.tenant}"
                    + (" within the given match" if command.match else "")
                    + " (nothing was removed)"
                )
            edges = pending = outcomes = 0
            relations = {c.relations.name: c for c in corpora.values()}
            for corpus in relations.values():
                if await self._held_elsewhere(tx, sharers[corpus.relations.name], command):
                    continue
                edges += await tx.rows.delete_edges_touching(
                    corpus.relations, corpus.from_column, corpus.to_column, command.document_id
                )
                pending += await tx.pending.drop_naming(
                    corpus.relations.name,
                    corpus.from_column,
                    corpus.to_column,
                    command.document_id,
                )
            for corpus in corpora.values():
                outcomes += await tx.outcomes.forget_naming(corpus.name, command.document_id)
            forgotten = Forgotten(
                command.event_id, command.store, command.document_id, edges, pending, outcomes
            )
            await tx.outbox.append([self._audit(command, forgotten)])
        return forgotten

    async def _sharers(
        self, documents: str, readers: Sequence[StoreCorpus]
    ) -> dict[str, list[StoreCorpus]]:
        """Relations store of each reader → the corpora that read it with another documents
        store: an edge there touching the forgotten id is theirs too while they hold that id."""
        sharers: dict[str, list[StoreCorpus]] = {}
        for corpus in readers:
            use = await self._directory.store(corpus.relations.name)
            sharers[corpus.relations.name] = [
                other
                for other, role in (use.corpora if use else ())
                if role == "relations" and other.documents.name != documents
            ]
        return sharers

    @staticmethod
    async def _held_elsewhere(
        tx: IngestTransaction, sharers: Sequence[StoreCorpus], command: ForgetCommand
    ) -> bool:
        """Whether a corpus sharing the relations store still holds a document of the forgotten
        id for this tenant (whatever its scope: the edge may be another end-client's)."""
        for other in sharers:
            if await tx.rows.existing_documents(
                other.documents, other.id_column, [command.document_id], []
            ):
                return True
        return False

    def _audit(self, command: ForgetCommand, forgotten: Forgotten) -> OutboxEvent:
        envelope = new_envelope(
            AuditRecorded(
                record=DeleteAudited(
                    action=f"store:{command.store}:delete",
                    store=command.store,
                    row_ids=(command.document_id,),
                    edges_removed=forgotten.edges,
                    pending_removed=forgotten.pending,
                    outcomes_removed=forgotten.outcomes,
                    source_event_ids=(command.event_id,),
                    principal=command.producer,
                    trace_id=command.trace_id,
                )
            ),
            tenant=command.tenant,
            producer=PRODUCER,
            event_type=AUDIT,
            event_id=uuid.uuid4(),  # random, as the persist audit's (see `_announce`)
            trace=command.traceparent,
        )
        return _outbox(self._audit_topic, command.tenant, envelope)


class _NothingToForgetError(Exception):
    """Raised inside the unit of work so that its inbox claim rolls back with it."""


def forget_digest(store: str, document_id: str, match: Mapping[str, str]) -> str:
    """The digest of what a forget command asks for: two commands with one event id are one event
    only when these agree."""
    text = json.dumps(
        {"forget": store, "id": document_id, "match": dict(match)},
        sort_keys=True,
        separators=(",", ":"),
    )
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _by_corpus(items: Iterable[_Prepared]) -> dict[StoreCorpus, list[_Prepared]]:
    grouped: dict[StoreCorpus, list[_Prepared]] = {}
    for item in items:
        corpus = item.use.role("relations")
        assert corpus is not None
        grouped.setdefault(corpus, []).append(item)
    return grouped


def _endpoints(
    row: Mapping[str, Any],
    corpus: StoreCorpus,
    scope: Sequence[str],
    found: Mapping[str, Mapping[str, Any]],
) -> str | list[str] | None:
    """None when both endpoints exist in the edge's scope; the missing ids; or why never (G2)."""
    ends = [key_text(row[corpus.from_column]), key_text(row[corpus.to_column])]
    missing = [end for end in dict.fromkeys(ends) if end not in found]
    if missing:
        return missing
    for end in ends:
        for column in scope:
            mine = row.get(column)
            theirs = found[end].get(column)
            if mine is None or theirs is None or str(mine) != str(theirs):
                return (
                    f"edge endpoint {end} is outside the edge's scope: its {column} is "
                    f"{theirs}, the edge's is {mine} (G2: edges join documents of one scope)"
                )
    return None


async def _insert(
    tx: IngestTransaction, items: Sequence[_Prepared], written: dict[str, list[_Prepared]]
) -> None:
    groups: dict[tuple[str, tuple[str, ...]], list[_Prepared]] = defaultdict(list)
    for item in items:
        groups[(item.use.store.name, tuple(item.row))].append(item)
    for (store_name, _), group in groups.items():
        await tx.rows.insert(group[0].use.store, [item.row for item in group])
        written[store_name].extend(group)


def _document_ids(items: Iterable[_Prepared]) -> dict[str, list[str]]:
    ids: dict[str, list[str]] = defaultdict(list)
    for item in items:
        corpus = item.use.role("documents")
        if corpus is not None:
            ids[corpus.name].append(key_text(item.row[corpus.id_column]))
    return ids


def _row_identity(row: Mapping[str, Any]) -> Hashable:
    """What makes two coerced rows of one store the same row: their columns, each value's type and
    value (so JSON `1` and `true` differ), as a tuple; canonical JSON when a value is a JSON
    object or array (unhashable)."""
    identity = tuple((name, type(value), value) for name, value in row.items())
    try:
        hash(identity)
    except TypeError:
        return json.dumps(row, sort_keys=True, default=str)
    return identity


def payload_digest(store: str, values: Mapping[str, Any]) -> str:
    """The digest of what a persist message asks for (its store and values, canonical JSON): two
    messages with one event id are one event only when these agree."""
    text = json.dumps(
        {"store": store, "values": values}, sort_keys=True, separators=(",", ":"), default=str
    )
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _json_values(values: Mapping[str, Any]) -> dict[str, Any]:
    return dict(values)


def persisted_event(
    topic: str,
    tenant: uuid.UUID,
    *,
    corpus: str,
    store: str,
    doc_id: str,
    values: Mapping[str, Any],
    event_id: uuid.UUID,
    trace: str | None,
) -> OutboxEvent:
    """The `document.persisted` outbox event of one row, its envelope built by `envelope_json`
    (one per row written: the pydantic round trip would be the write path's largest cost). Every
    part is already valid: names from the registry, `values` from the validated persist envelope."""
    headers = {"content-type": "application/json"}
    if trace:
        headers["traceparent"] = trace
    data = {"corpus": corpus, "store": store, "id": doc_id, "values": dict(values)}
    payload = envelope_json(
        DocumentPersisted,
        data,
        tenant=tenant,
        producer=PRODUCER,
        event_type=DOCUMENT_PERSISTED,
        event_id=event_id,
        trace=trace,
    )
    return OutboxEvent(event_id, topic, str(tenant).encode(), payload, headers)


def _outbox(topic: str, tenant: uuid.UUID, envelope: Any) -> OutboxEvent:
    headers = {"content-type": "application/json"}
    if envelope.trace:
        headers["traceparent"] = envelope.trace
    return OutboxEvent(
        event_id=envelope.event_id,
        topic=topic,
        key=str(tenant).encode(),
        payload=envelope.model_dump(mode="json"),
        headers=headers,
    )
