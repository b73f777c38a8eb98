"""Streams of persist events for the chaos tests, and the exactly-once check after them."""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from mnemo_events import Envelope, PersistRow
from mnemo_store.audit_log import AuditLog

from tests.chaos.conftest import World, doc
from tests.chaos.summary import Row, Summary
from tests.waiting import eventually


def word(n: int) -> str:
    """A made-up capitalised word per n (distinct titles the classifier can find in a body)."""
    letters = ""
    n += 26 * 26
    while n:
        n, r = divmod(n, 26)
        letters = "bcdfghjklmnpqrstvwxzaeiouy"[r] + letters
    return letters.capitalize()


@dataclass
class Stream:
    """Events for the world's first tenant in a few end-client scopes: `documents` documents,
    each followed by `links` edges to the documents before it in its scope (events = documents
    × (1 + links)). Each body mentions the title of the document before it in its scope, which the
    classifier cites; titles are made-up words of their own, so candidates stay few."""

    world: World
    documents: int
    links: int = 4
    subs: list[uuid.UUID] = field(default_factory=lambda: [uuid.uuid4() for _ in range(2)])
    records: list[tuple[bytes, bytes]] = field(default_factory=list)
    edge_records: int = 0

    def __post_init__(self) -> None:
        tenant = self.world.tenants[0]
        earlier: dict[uuid.UUID, list[tuple[str, str]]] = {sub: [] for sub in self.subs}
        for n in range(self.documents):
            sub = self.subs[n % len(self.subs)]
            title = word(n)
            before = earlier[sub]
            body = f"Field note {n}, written after {before[-1][1]}." if before else title
            values = doc(sub, title, body)
            self.records.append(self.world.record(tenant, self.world.docs, values))
            for _, (target, _title) in zip(range(self.links), reversed(before), strict=False):
                edge = {
                    "from_id": values["id"],
                    "to_id": target,
                    "etype": "elaborate",
                    "weight": 0.5,
                    "tenant_id": str(sub),
                }
                self.records.append(self.world.record(tenant, self.world.edges, edge))
                self.edge_records += 1
            before.append((values["id"], title))

    @property
    def count(self) -> int:
        return self.documents

    async def landed(self) -> int:
        return await self.world.count(self.world.tenants[0])

    async def edges(self) -> int:
        return await self.world.count(self.world.tenants[0], store=self.world.edges)

    async def cites(self) -> int:
        """The classifier's edges so far."""
        return await self.world.count(self.world.tenants[0], "etype = 'cite'", self.world.edges)

    async def all_landed(self) -> bool:
        return await self.landed() >= self.count and await self.edges() >= self.edge_records


async def assert_exactly_once(stream: Stream, *, classified: bool) -> dict[str, int]:
    """Every document of the stream is a row exactly once; with the classifier, every distinct
    edge command it published is a row exactly once too (a redelivered document yields the same
    edge event ids, which the inbox deduplicates)."""
    world = stream.world
    tenant = world.tenants[0]
    assert await stream.landed() == stream.count
    envelopes = [_envelope(v) for _, v in stream.records]
    ids = [e.data.values["id"] for e in envelopes if e.data.store == world.docs]
    distinct = await world.scalar(
        tenant,
        f"SELECT count(DISTINCT id) FROM {_table(world.docs)} WHERE id = ANY('{{{','.join(ids)}}}'::uuid[])",
    )
    assert distinct == stream.count
    result = {"documents": stream.count, "document_rows": int(distinct)}
    if not classified:
        assert await stream.edges() == stream.edge_records
    else:
        # the stream's own edges, and the citations of predecessors (nearly every document: a
        # made-up title the classifier finds too weak is not cited, the same in every run)
        minimum = stream.edge_records + (stream.count - len(stream.subs)) * 95 // 100
        await _settled(stream, minimum)
        commands = await world.read(world.topic("persist"), 10**9, wait=20, idle=3)
        edge_events: dict[uuid.UUID, tuple[str, str, str]] = {}
        for envelope in (_envelope(r.value) for r in commands):
            if envelope.data.store == world.edges:
                v = envelope.data.values
                edge_events[envelope.event_id] = (v["from_id"], v["to_id"], v["etype"])
        # Events per edge: a redelivered event has the same id (counted once); two events may
        # carry the same edge (the classifier reaching it from either end), which ingest may write
        # once (within a batch) or twice. So each edge: at least one row, at most one per event.
        events_per_edge = Counter(edge_events.values())
        rows = await world.rows(
            tenant,
            f"SELECT from_id::text AS f, to_id::text AS t, etype, count(*) AS n"
            f" FROM {_table(world.edges)} GROUP BY 1, 2, 3",
        )
        rows_per_edge = {(r["f"], r["t"], r["etype"]): int(r["n"]) for r in rows}
        result["edge_events"] = len(edge_events)
        result["edges"] = len(events_per_edge)
        result["edge_rows"] = sum(rows_per_edge.values())
        lost = [edge for edge in events_per_edge if edge not in rows_per_edge]
        unknown = [edge for edge in rows_per_edge if edge not in events_per_edge]
        duplicated = {
            edge: (n, events_per_edge[edge])
            for edge, n in rows_per_edge.items()
            if n > events_per_edge.get(edge, 0)
        }
        assert (lost, unknown, duplicated) == ([], [], {}), result
        assert len(events_per_edge) >= minimum, result
    return result


async def _settled(stream: Stream, minimum: int, wait: float = 240) -> None:
    """Wait until ingest and the classifier have caught up: both groups have committed every
    record of their topics and the outbox is empty, twice in a row (the classifier's last edges
    go back to ingest), with at least `minimum` edge rows."""
    world = stream.world
    quiet = 0
    state: dict[str, int] = {}

    async def caught_up_twice() -> bool:
        nonlocal quiet, state
        state = {
            "ingest_lag": await world.lag(f"chaos.ingest.{world.suffix}", world.topic("persist")),
            "classifier_lag": await world.lag(
                f"chaos.classifier.{world.suffix}", world.topic("persisted")
            ),
            "outbox": int(
                await world.scalar(
                    world.tenants[0], "SELECT count(*) FROM mnemo.outbox WHERE published_at IS NULL"
                )
            ),
            "edge_rows": await stream.edges(),
            "minimum": minimum,
        }
        backlog = state["ingest_lag"] + state["classifier_lag"] + state["outbox"]
        quiet = quiet + 1 if backlog == 0 and state["edge_rows"] >= minimum else 0
        return quiet >= 2

    await eventually(
        caught_up_twice, within=wait, every=1, what=lambda: f"never caught up: {state}"
    )


def _envelope(value: bytes) -> Any:
    return Envelope[PersistRow].model_validate_json(value)


def _table(store: str) -> str:
    from mnemo_store.identifiers import store_table

    return store_table(store)


async def record_row(
    summary: Summary, stream: Stream, result: dict[str, int], fault: str, notes: str = ""
) -> Row:
    """The summary row of a stream checked by `assert_exactly_once`: its events, and documents
    (and edges) lost or stored twice, counted from the tables again."""
    rows = await stream.landed()
    lost = result["documents"] - result["document_rows"]
    duplicated = rows - result["document_rows"]
    if "edge_rows" in result:
        extra = result["edge_rows"] - stream.edge_records
        notes += f"+{extra:,} classifier edges; {result['edges']:,} distinct edges"
    else:
        edges = await stream.edges()
        lost += max(stream.edge_records - edges, 0)
        duplicated += max(edges - stream.edge_records, 0)
    return summary.row(
        fault=fault,
        events=len(stream.records),
        lost=lost,
        duplicated=duplicated,
        leaked=None,
        notes=notes.strip().removesuffix(";"),
    )


async def assert_audited_once(stream: Stream, wait: float = 120) -> dict[str, int]:
    """Every event of the stream is named by exactly one audit row of ingest's (its
    `source_event_ids`), no audit row names an event twice, and the tenant's chain verifies: the
    audit consumer of the world must be running."""
    world = stream.world
    tenant = world.tenants[0]
    sent = {str(_envelope(value).event_id) for _, value in stream.records}
    named: Counter[str] = Counter()
    rows = 0
    async with await AuditLog.connect(world.stack.url("audit"), max_size=1) as log:

        async def all_named() -> bool:
            nonlocal named, rows
            named, rows = Counter(), 0
            async for row in log.rows(tenant):
                rows += 1
                named.update(str(i) for i in row.payload.get("source_event_ids", ()))
            return set(sent) <= set(named)

        await eventually(
            all_named,
            within=wait,
            every=1,
            what=lambda: f"{len(set(sent) - set(named))} of {len(sent)} events never audited",
        )
        report = await log.verify(tenant)
    lost = len(sent - set(named))
    duplicated = sum(n - 1 for n in named.values() if n > 1)
    assert report.ok, report.broken
    assert (lost, duplicated) == (0, 0), (lost, duplicated)
    return {
        "audit_rows": rows,
        "audited_events": len(named),
        "lost": lost,
        "duplicated": duplicated,
    }
