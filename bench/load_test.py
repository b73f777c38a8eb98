"""Sustained mixed load: persists through ingest over Kafka and navigations over HTTP, at fixed
rates, for a fixed time (10 minutes by default), with latency, consumer lag, memory and errors per
minute.

The run starts its own ingest, edge classifier, navigator and audit processes from this checkout
(`service_processes.Services`: free loopback ports, Kafka topics and consumer groups `bench.load.
<suffix>.…` of its own), makes a tenant and an adaptive corpus of its own seeded with
`--seed-documents` documents, then for `--minutes`:

- persists: `--persist-rate` new documents a second, each a persist command to ingest's topic
  (keyed by tenant); its latency runs from the time it was scheduled to the moment its
  `document.persisted` event (written by ingest through its outbox) reaches the load generator;
- edges: the classifier's edges for each of those documents, from the time its persist was
  scheduled to the moment the audit event of the ingest transaction that committed the last of
  them (`store:<edges>:persist`, written through the same outbox) reaches the load generator. An
  edge belongs to the later-sent of its two documents (when the earlier one was classified the
  later did not exist, so only the later one's event can have found it); a document the
  classifier gave no edge is counted, not timed;
- navigations: `--navigate-rate` a second, `POST /v1/corpora/<corpus>/navigate` with a
  development token and a query naming words of documents already sent; latency from the
  scheduled time to the full answer.

The schedule is open-loop: request k goes at `start + k / rate` whether or not earlier ones have
answered, and latency counts from that scheduled time, so a stall shows as latency of everything
scheduled during it instead of as fewer requests (no coordinated omission). How late the generator
itself sent (its own scheduling lag) is reported too, so a generator starved of CPU is visible.

Every 5 s it samples each service's resident memory (`VmRSS` of /proc/<pid>/status), the consumer
lag of ingest, the classifier and audit (end offset − committed offset of their groups), the
classifier's events per batch and handler time per event (from its `mnemo_messages_total` and
`mnemo_handler_duration_seconds`, which counts batches), and the machine's load. Each consumer's
lag slope over the last half of the run (least squares, records per minute) says whether it
keeps up: ≤ 0 when it does.

Errors: a send Kafka refused, a navigation answering other than 200 or not within 30 s, a document
whose `document.persisted` never came (within `--drain` seconds after the load; then, within
`--drain` seconds more, the run waits for ingest and the classifier to commit everything and for
every stored edge row to be seen committed), a dead letter counted by any service
(`mnemo_dead_letters_total`), a documents table holding other than seed + sent rows, a service
that exited or did not exit 0 on SIGTERM. There must be none.

The baseline is the run's own first minute: each later minute's p95 against minute 1's, and each
service's memory in the last minute against the first. Prints a table per minute and the ratios,
writes bench/results/load_test.json (or `--output`); exit status 1 if there was any error. At the
end the processes stop, and the corpus's tables, the corpus, the tenant's rows and the run's
topics are dropped. Needs the local stack (`make up`: Postgres and Kafka) and the Makefile's
database URLs (the local defaults otherwise).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import random
import signal
import ssl
import sys
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import asyncpg
import httpx
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import KafkaError
from mnemo_auth import DEVELOPMENT_SECRET, mint_token
from mnemo_axon.compiler import load_deployment
from mnemo_events import PERSIST, PersistRow, new_envelope
from mnemo_store.applier import apply_deployment
from mnemo_store.identifiers import store_table
from service_processes import (
    ROOT,
    Services,
    cpu_seconds,
    graph_declarations,
    lag_by_group,
    metric_total,
    rss_bytes,
)

RESULTS = ROOT / "bench" / "results"
OWNER = "postgresql://mnemo_owner:mnemo_owner@127.0.0.1:25432/mnemo"
SERVICES = ("ingest", "edge-classifier", "navigator", "audit")
SAMPLE_SECONDS = 5.0
SCRAPE_TIMEOUT = 10.0  # seconds a service's /metrics may take to answer the sampler
NAVIGATE_TIMEOUT = 30.0
VOCABULARY = 3_000


def say(message: str) -> None:
    print(f"load: {message}", file=sys.stderr, flush=True)


# -- the documents -------------------------------------------------------------------------------

_SYLLABLES = (
    "ka", "ro", "mi", "ve", "la", "to", "ne", "su", "ri", "da", "po", "le",
    "ta", "mo", "vi", "sa", "ke", "lu", "no", "fa", "ze", "bi", "go",
)  # fmt: skip


class Writer:
    """Generated documents: a capitalised two-word title unique to the document, a body of common
    words that names a place shared with a few other documents and cites an earlier title, so the
    classifier finds cite and shared-key edges as it would in notes that refer to one another."""

    def __init__(self, seed: int) -> None:
        self.random = random.Random(seed)
        self.words = [self._word(2 + k % 2) for k in range(VOCABULARY)]
        self.places = [self._word(3).capitalize() for _ in range(VOCABULARY // 3)]
        self.titles: list[str] = []

    def _word(self, syllables: int) -> str:
        return "".join(self.random.choice(_SYLLABLES) for _ in range(syllables))

    def document(self, k: int) -> dict[str, str]:
        pick = self.random.choice
        title = f"{self._word(2).capitalize()} {self._word(3).capitalize()} {k}"
        body = " ".join(pick(self.words) for _ in range(24))
        body += f". It happened near {pick(self.places)}."
        if self.titles:
            body += f" See {pick(self.titles)}."
        self.titles.append(title)
        return {"id": f"doc{k:08d}", "title": title, "body": body}

    def query(self) -> str:
        title = self.random.choice(self.titles).split()
        return " ".join([title[0], title[1], *self.random.sample(self.words, 2)])


# -- measurements --------------------------------------------------------------------------------


def percentile(ordered: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of an ascending sequence (0 when empty)."""
    if not ordered:
        return 0.0
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def latency_summary(seconds: Sequence[float]) -> dict[str, float]:
    ordered = sorted(seconds)
    return {
        "n": len(ordered),
        **{
            f"p{round(q * 100)}_ms": round(percentile(ordered, q) * 1000, 1)
            for q in (0.5, 0.95, 0.99)
        },
        "max_ms": round((ordered[-1] if ordered else 0.0) * 1000, 1),
    }


@dataclass
class Window:
    """What happened to the work scheduled in one window (a minute by default)."""

    persist_sent: int = 0
    persist_latency: list[float] = field(default_factory=list)
    navigate_latency: list[float] = field(default_factory=list)
    navigate_errors: int = 0
    persist_errors: int = 0
    send_lag: list[float] = field(default_factory=list)
    cache: Counter[str] = field(default_factory=Counter)
    phases: dict[str, list[float]] = field(default_factory=dict)
    """Navigator phase → its milliseconds per answered request (the `Server-Timing` header)."""
    server: list[float] = field(default_factory=list)
    """Seconds the navigator accounted for per request (its phases summed)."""
    edges_latency: list[float] = field(default_factory=list)
    """Per document sent in the window that got edges: seconds from its scheduled send to the
    commit (seen through the outbox) of the last of its edges."""
    no_edges: int = 0
    """Documents sent in the window the classifier gave no edge."""
    samples: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Run:
    start: float
    seconds: float
    window_seconds: float
    windows: list[Window]
    scheduled: dict[str, float] = field(default_factory=dict)
    """Document id → the loop time its persist was scheduled at."""
    seen: set[str] = field(default_factory=set)
    sent: bool = False
    """Every persist has been sent."""
    all_seen: asyncio.Event = field(default_factory=asyncio.Event)
    """Set once every persist sent has been seen persisted."""
    edges_at: dict[str, float] = field(default_factory=dict)
    """Document id → the loop time the last commit of one of its edges was seen."""
    edge_rows_seen: int = 0
    """Edge rows named by the edges store's audit events so far."""
    errors: Counter[str] = field(default_factory=Counter)
    first_errors: list[str] = field(default_factory=list)

    def window(self, at: float) -> Window:
        index = int((at - self.start) // self.window_seconds)
        return self.windows[min(max(index, 0), len(self.windows) - 1)]

    def error(self, kind: str, detail: str) -> None:
        self.errors[kind] += 1
        if len(self.first_errors) < 20:
            self.first_errors.append(f"{kind}: {detail[:300]}")


# -- the load ------------------------------------------------------------------------------------


async def persist_load(
    run: Run,
    producer: AIOKafkaProducer,
    topic: str,
    tenant: uuid.UUID,
    store: str,
    writer: Writer,
    first: int,
    rate: float,
) -> None:
    loop = asyncio.get_running_loop()
    key = str(tenant).encode()
    deliveries: list[asyncio.Future[Any]] = []

    async def delivered(future: asyncio.Future[Any], document: str) -> None:
        try:
            await future
        except KafkaError as error:
            run.error("persist_send", f"{document}: {error!r}")
            run.window(run.scheduled[document]).persist_errors += 1

    k = 0
    while (at := run.start + k / rate) < run.start + run.seconds:
        if (delay := at - loop.time()) > 0:
            await asyncio.sleep(delay)
        values = writer.document(first + k)
        envelope = new_envelope(
            PersistRow(store=store, values=values),
            tenant=tenant,
            producer="bench.load",
            event_type=PERSIST,
        )
        run.scheduled[values["id"]] = at
        window = run.window(at)
        window.persist_sent += 1
        window.send_lag.append(loop.time() - at)
        try:
            future = await producer.send(topic, envelope.model_dump_json().encode(), key=key)
            deliveries.append(asyncio.ensure_future(delivered(future, values["id"])))
        except KafkaError as error:
            run.error("persist_send", f"{values['id']}: {error!r}")
            window.persist_errors += 1
        k += 1
    await asyncio.gather(*deliveries)


async def navigate_load(
    run: Run, url: str, headers: dict[str, str], writer: Writer, rate: float, budget: int
) -> None:
    loop = asyncio.get_running_loop()
    # One client, so one connection, per navigation: a shared pool did not recover in issue 22's
    # run (after the generator's own loop stalled for 112 s, every later navigation timed out
    # while no connection reached the navigator, which sat idle). Loopback connections are cheap;
    # the TLS context, the costly part of a client, is made once.
    tls = ssl.create_default_context()

    async def one(at: float, query: str) -> None:
        window = run.window(at)
        try:
            async with httpx.AsyncClient(timeout=NAVIGATE_TIMEOUT, verify=tls) as http:
                response = await http.post(
                    url, json={"query": query, "budget": budget}, headers=headers
                )
        except httpx.HTTPError as error:
            window.navigate_errors += 1
            run.error("navigate", f"{type(error).__name__}: {error}")
            return
        if response.status_code != 200:
            window.navigate_errors += 1
            run.error("navigate", f"{response.status_code}: {response.text}")
            return
        window.navigate_latency.append(loop.time() - at)
        window.cache[str(response.json().get("diagnostics", {}).get("cache"))] += 1
        phases = server_timing(response.headers.get("server-timing", ""))
        for phase, ms in phases.items():
            window.phases.setdefault(phase, []).append(ms)
        window.server.append(sum(phases.values()) / 1000)

    requests = []
    k = 0
    while (at := run.start + k / rate) < run.start + run.seconds:
        if (delay := at - loop.time()) > 0:
            await asyncio.sleep(delay)
        requests.append(asyncio.ensure_future(one(at, writer.query())))
        k += 1
    await asyncio.gather(*requests)


def server_timing(header: str) -> dict[str, float]:
    """`revision;dur=0.4, refresh;dur=12.1` → {"revision": 0.4, "refresh": 12.1}."""
    phases = {}
    for part in header.split(","):
        name, _, rest = part.strip().partition(";dur=")
        try:
            phases[name] = float(rest)
        except ValueError:
            continue
    return phases


async def follow(
    bootstrap: str,
    topic: str,
    stop: asyncio.Event,
    on_record: Callable[[Any, float], None],
    after_batch: Callable[[], None] = lambda: None,
) -> None:
    """Reads `topic` from its beginning until `stop`, handing each record and the time its batch
    arrived to `on_record`, then calling `after_batch`."""
    loop = asyncio.get_running_loop()
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=None,
        auto_offset_reset="earliest",
        fetch_max_wait_ms=20,
    )
    await consumer.start()
    try:
        while not stop.is_set():
            batches = await consumer.getmany(timeout_ms=100)
            now = loop.time()
            for records in batches.values():
                for record in records:
                    on_record(record, now)
            after_batch()
    finally:
        await consumer.stop()


async def watch_persisted(run: Run, bootstrap: str, topic: str, stop: asyncio.Event) -> None:
    """Marks each document whose `document.persisted` event arrives, with its latency."""

    def persisted(record: Any, now: float) -> None:
        document = str(json.loads(record.value or b"{}")["data"]["id"])
        at = run.scheduled.get(document)
        if at is None or document in run.seen:
            return
        run.seen.add(document)
        run.window(at).persist_latency.append(now - at)

    def all_seen() -> None:
        if run.sent and len(run.seen) == len(run.scheduled):
            run.all_seen.set()

    await follow(bootstrap, topic, stop, persisted, all_seen)


def edge_owner(run: Run, row_id: str) -> str | None:
    """The document an edge row (`<from>-<etype>-><to>`, as ingest's audit names it) belongs to:
    the later-sent of its ends (None when neither was sent in the run). The documents' ids hold
    no `-`."""
    left, _, target = row_id.rpartition("->")
    source = left.split("-", 1)[0]
    ends = [end for end in (source, target) if end in run.scheduled]
    return max(ends, key=run.scheduled.__getitem__) if ends else None


async def watch_edges(
    run: Run, bootstrap: str, topic: str, edges_store: str, stop: asyncio.Event
) -> None:
    """Marks, per document, when the audit event of each transaction that committed one of its
    edges arrives (ingest writes it in the outbox with the rows, like `document.persisted`)."""

    def audited(record: Any, now: float) -> None:
        event = json.loads(record.value or b"{}").get("data", {}).get("record", {})
        if event.get("kind") != "persist" or event.get("store") != edges_store:
            return
        for row_id in event.get("row_ids", ()):
            run.edge_rows_seen += 1
            if (document := edge_owner(run, row_id)) is not None:
                run.edges_at[document] = now

    await follow(bootstrap, topic, stop, audited)


def lag_slope(samples: Sequence[dict[str, Any]], name: str, since: float) -> float | None:
    """Least-squares slope of `name`'s lag over the samples from `since` seconds on, in records
    per minute (None with fewer than two samples)."""
    points = [
        (float(s["t"]), float(s["lag"][name]))
        for s in samples
        if s["t"] >= since and name in s["lag"]
    ]
    if len(points) < 2:
        return None
    mean_t = sum(t for t, _ in points) / len(points)
    mean_lag = sum(lag for _, lag in points) / len(points)
    spread = sum((t - mean_t) ** 2 for t, _ in points)
    if spread == 0:
        return None
    slope = sum((t - mean_t) * (lag - mean_lag) for t, lag in points) / spread
    return round(60 * slope, 1)


async def sample(run: Run, services: Services, stop: asyncio.Event) -> None:
    """Every SAMPLE_SECONDS: RSS per service, lag per consumer group, the machine's load."""
    loop = asyncio.get_running_loop()
    names = {group: group.rsplit(".", 1)[1] for group in services.groups}
    every = min(SAMPLE_SECONDS, run.window_seconds / 2)
    consumers = [name for name in services.names if name != "navigator"]
    await asyncio.sleep(max(0.0, run.start - loop.time()))
    # One client for every scrape: a client made per scrape cost the generator a TLS context each
    # time, and under load a 2 s scrape timed out, leaving minutes without the classifier's
    # handler time (issue 22's run 18). A slow scrape only delays the next sample.
    async with httpx.AsyncClient(timeout=SCRAPE_TIMEOUT) as http:
        while not stop.is_set():
            now = loop.time()
            if now < run.start + run.seconds:
                behind = await lag_by_group(services.bootstrap, services.groups)
                handled = {name: await handler_seconds(http, services, name) for name in consumers}
                run.window(now).samples.append(
                    {
                        "t": round(now - run.start, 1),
                        "rss": {n: rss_bytes(pid) for n, pid in services.pids().items()},
                        "cpu": {n: cpu_seconds(pid) for n, pid in services.pids().items()},
                        "lag": {names[g]: v for g, v in behind.items()},
                        "handler": handled,
                        "load1": os.getloadavg()[0],
                    }
                )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), every)


async def handler_seconds(
    http: httpx.AsyncClient, services: Services, name: str
) -> tuple[float, float, float] | None:
    """The service's `mnemo_handler_duration_seconds` sum and count (handler calls: batches) and
    its `mnemo_messages_total` (events) (None if it did not answer)."""
    try:
        text = (await http.get(f"{services.url(name)}/metrics")).text
    except httpx.HTTPError:
        return None
    return (
        metric_total(text, "mnemo_handler_duration_seconds_sum"),
        metric_total(text, "mnemo_handler_duration_seconds_count"),
        metric_total(text, "mnemo_messages_total"),
    )


# -- setup and cleanup ---------------------------------------------------------------------------


async def seed(
    owner: asyncpg.Connection, tenant: uuid.UUID, docs: str, writer: Writer, n: int
) -> None:
    rows = [writer.document(k) for k in range(n)]
    async with owner.transaction():
        await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
        await owner.executemany(
            f"INSERT INTO {store_table(docs)} (axon_tenant, id, title, body) VALUES ($1, $2, $3, $4)",
            [(tenant, r["id"], r["title"], r["body"]) for r in rows],
        )
    await owner.execute(f"ANALYZE {store_table(docs)}")


async def edges_drained(
    run: Run, owner: asyncpg.Connection, tenant: uuid.UUID, table: str, services: Services
) -> None:
    """Returns once the classifier and ingest have committed every record sent them and every
    edge row in the store has been seen committed (its audit event), polling twice a second."""
    while True:
        behind = await lag_by_group(services.bootstrap, services.groups)
        caught_up = all(lag == 0 for group, lag in behind.items() if not group.endswith(".audit"))
        if caught_up and run.edge_rows_seen >= await count_rows(owner, tenant, table):
            return
        await asyncio.sleep(0.5)


async def count_rows(owner: asyncpg.Connection, tenant: uuid.UUID, table: str) -> int:
    async with owner.transaction():
        await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
        return int(await owner.fetchval(f"SELECT count(*) FROM {table}"))


async def drop(
    owner: asyncpg.Connection,
    stores: Sequence[str],
    corpus: str,
    tenant: uuid.UUID | None,
    bootstrap: str,
    topics: Sequence[str],
) -> None:
    for store in stores:
        await owner.execute(f"DROP TABLE IF EXISTS {store_table(store)}")
    await owner.execute("DELETE FROM mnemo.corpora WHERE corpus_id = $1", corpus)
    if tenant is not None:
        try:
            async with owner.transaction():
                await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
                for table in (
                    "outbox",
                    "inbox",
                    "pending_edges",
                    "nav_outcomes",
                    "graph_revisions",
                ):
                    await owner.execute(f"DELETE FROM mnemo.{table}")
                await owner.execute("DELETE FROM mnemo.tenants WHERE tenant_id = $1", tenant)
        except asyncpg.PostgresError as error:
            say(f"tenant {tenant} kept: {error}")
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        doomed = [t for t in (*topics, *(f"{t}.dlt" for t in topics)) if t in existing]
        if doomed:
            await admin.delete_topics(doomed)
    except KafkaError as error:
        say(f"topics kept: {error!r}")
    finally:
        await admin.close()


# -- the report ----------------------------------------------------------------------------------


def window_report(
    run: Run, index: int, window: Window, documents: int, before: dict[str, Any] | None
) -> dict[str, Any]:
    """One window's row; `before` is the last sample before it (CPU used is counted from it)."""
    empty: dict[str, Any] = {"rss": {}, "lag": {}, "cpu": {}, "t": 0}
    last = window.samples[-1] if window.samples else empty
    before = before or (window.samples[0] if window.samples else last)
    elapsed = last["t"] - before["t"]
    cpu = {
        name: round(100 * (used - before["cpu"][name]) / elapsed)
        for name, used in last["cpu"].items()
        if elapsed > 0 and used is not None and before["cpu"].get(name) is not None
    }
    lags: dict[str, int] = {}
    for s in window.samples:
        for name, value in s["lag"].items():
            lags[name] = max(lags.get(name, 0), value)
    handler_ms, batch_size = {}, {}
    for name, now in last.get("handler", {}).items():
        then = before.get("handler", {}).get(name)
        if now is not None and then is not None and now[1] > then[1] and now[2] > then[2]:
            events = now[2] - then[2]
            handler_ms[name] = round(1000 * (now[0] - then[0]) / events, 1)
            batch_size[name] = round(events / (now[1] - then[1]), 1)
    return {
        "window": index + 1,
        "from_s": round(index * run.window_seconds, 1),
        "documents_sent_by_end": documents,
        "persist": {
            "sent": window.persist_sent,
            "errors": window.persist_errors,
            **latency_summary(window.persist_latency),
        },
        "edges": {**latency_summary(window.edges_latency), "documents_without": window.no_edges},
        "navigate": {
            "errors": window.navigate_errors,
            **latency_summary(window.navigate_latency),
            "cache": dict(window.cache),
            "server": latency_summary(window.server),
            "phases_mean_ms": {
                phase: round(sum(ms) / len(ms), 1) for phase, ms in sorted(window.phases.items())
            },
        },
        "generator_send_lag_max_ms": round(max(window.send_lag, default=0.0) * 1000, 1),
        "lag_max": lags,
        "lag_last": last["lag"],
        "rss_mb": {
            name: round(value / 2**20, 1)
            for name, value in last["rss"].items()
            if value is not None
        },
        "cpu_percent": cpu,
        "handler_ms_per_event": handler_ms,
        "events_per_batch": batch_size,
        "load1": round(sum(s["load1"] for s in window.samples) / max(1, len(window.samples)), 2),
    }


def ratios(windows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Each window against the first: p95 per window, memory of the last against the first."""
    first, last = windows[0], windows[-1]

    def per_window(kind: str) -> list[float | None]:
        base = first[kind]["p95_ms"]
        return [round(w[kind]["p95_ms"] / base, 2) if base else None for w in windows]

    return {
        "persist_p95_vs_first": per_window("persist"),
        "navigate_p95_vs_first": per_window("navigate"),
        "rss_last_vs_first": {
            name: round(last["rss_mb"][name] / mb, 3)
            for name, mb in first["rss_mb"].items()
            if mb and name in last["rss_mb"]
        },
    }


def table(windows: Sequence[dict[str, Any]], verdict: dict[str, Any], window: float) -> str:
    names = ("ingest", "edge-classifier", "navigator", "audit")
    groups = (  # (title, width) of the column groups of the first header line
        ("", 19),
        ("persist ms", 31),
        ("edges ms", 22),
        ("navigate ms", 33),
        ("lag max", 20),
        ("classifier", 13),
        ("RSS MB", 27),
        ("CPU %", 23),
        ("", 10),
    )
    lines = [
        " ".join(f"{title:^{width}}" if title else " " * width for title, width in groups).rstrip(),
        f"{'min' if window == 60 else 'win':>4} {'docs':>7} {'sent':>6}"
        f" {'p50':>7} {'p95':>7} {'p99':>7} {'max':>7}"
        f" {'p50':>7} {'p95':>7} {'none':>6}"
        f" {'navs':>5} {'p50':>6} {'p95':>6} {'p99':>6} {'max':>6}"
        f" {'in':>6} {'cl':>6} {'au':>6} {'ms/ev':>6} {'ev/b':>6}"
        f" {'in':>6} {'cl':>6} {'nav':>6} {'au':>6} {'in':>5} {'cl':>5} {'nav':>5} {'au':>5}"
        f" {'err':>4} {'load':>5}",
    ]
    for w in windows:
        p, e, n, lag = w["persist"], w["edges"], w["navigate"], w["lag_max"]
        rss = " ".join(f"{w['rss_mb'].get(name, 0):>6.0f}" for name in names)
        cpu = " ".join(f"{w['cpu_percent'].get(name, 0):>5}" for name in names)
        classifier_ms = w["handler_ms_per_event"].get("edge-classifier", 0.0)
        batch = w["events_per_batch"].get("edge-classifier", 0.0)
        errors = p["errors"] + n["errors"]
        lines.append(
            f"{w['window']:>4} {w['documents_sent_by_end']:>7} {p['sent']:>6} {p['p50_ms']:>7.0f}"
            f" {p['p95_ms']:>7.0f} {p['p99_ms']:>7.0f} {p['max_ms']:>7.0f}"
            f" {e['p50_ms']:>7.0f} {e['p95_ms']:>7.0f} {e['documents_without']:>6} {n['n']:>5}"
            f" {n['p50_ms']:>6.0f} {n['p95_ms']:>6.0f} {n['p99_ms']:>6.0f} {n['max_ms']:>6.0f}"
            f" {lag.get('ingest', 0):>6} {lag.get('classifier', 0):>6} {lag.get('audit', 0):>6}"
            f" {classifier_ms:>6.1f} {batch:>6.1f} {rss} {cpu} {errors:>4} {w['load1']:>5.1f}"
        )
    lines += [
        "persist: from the scheduled send to its document.persisted event; edges: to the commit of"
        " the last of its edges (none: documents given no edge);",
        "navigate: from the scheduled request to the answer; lag: records not committed yet by"
        " ingest (in), the classifier (cl), audit (au);",
        "classifier: its mean handler time per event (ms/ev) and events per batch (ev/b);",
        "RSS (at the minute's end) and CPU (% of one core) of ingest, the classifier, the"
        " navigator, audit; load: 1-minute load average",
    ]
    r = verdict["ratios"]

    def fmt(values: Sequence[float | None]) -> str:
        return " ".join("-" if v is None else f"{v:.2f}" for v in values)

    unit = "minute" if window == 60 else "window"
    lines.append(f"the navigator's own time per request (Server-Timing), per {unit}:")
    for w in windows:
        server, phases = w["navigate"]["server"], w["navigate"]["phases_mean_ms"]
        lines.append(
            f"{w['window']:>4} p50 {server['p50_ms']:>6.0f} p95 {server['p95_ms']:>6.0f}"
            "  mean ms: " + ", ".join(f"{name} {ms:g}" for name, ms in phases.items())
        )
    lines += [
        f"persist p95 / {unit} 1:  {fmt(r['persist_p95_vs_first'])}",
        f"navigate p95 / {unit} 1: {fmt(r['navigate_p95_vs_first'])}",
        f"RSS last / first {unit}: "
        + ", ".join(f"{name} {v:.2f}" for name, v in r["rss_last_vs_first"].items()),
        "lag slope over the last half, records/minute: "
        + ", ".join(
            f"{name} {'-' if v is None else f'{v:g}'}"
            for name, v in verdict["lag_slope_per_minute_last_half"].items()
        ),
        f"errors: {verdict['errors_total']} {json.dumps(verdict['errors'])}",
    ]
    return "\n".join(lines)


# -- the run -------------------------------------------------------------------------------------


async def main(args: argparse.Namespace) -> int:
    owner_dsn = os.environ.get("MNEMO_OWNER_DATABASE_URL", OWNER)
    bootstrap = os.environ.get("MNEMO_KAFKA_BOOTSTRAP", "127.0.0.1:29092")
    seconds = args.minutes * 60
    window_seconds = min(args.window, seconds)
    suffix = uuid.uuid4().hex[:10]
    corpus = f"Load_{suffix}"
    docs, edges = f"{corpus}Docs", f"{corpus}Edges"
    services = Services(
        suffix, bootstrap, args.logs, prefix="bench.load", names=SERVICES, extra_env={}
    )
    writer = Writer(args.random_seed)
    owner = await asyncpg.connect(owner_dsn)
    tenant: uuid.UUID | None = None
    load_before = os.getloadavg()
    loop = asyncio.get_running_loop()
    try:
        deployment = load_deployment(
            graph_declarations(corpus, adaptive=True), f"load_{suffix}.axon"
        )
        await apply_deployment(owner, deployment, gateway_base_url="http://127.0.0.1:8080")
        await owner.execute(
            "UPDATE mnemo.corpora SET status = 'published' WHERE corpus_id = $1", corpus
        )
        tenant = await owner.fetchval(
            "INSERT INTO mnemo.tenants (name) VALUES ($1) RETURNING tenant_id", f"load-{suffix}"
        )
        assert tenant is not None
        await seed(owner, tenant, docs, writer, args.seed_documents)
        await services.start()
        say(f"{', '.join(SERVICES)} ready on {services.ports}; corpus {corpus}")
        token = mint_token(
            tenant=tenant,
            secret=DEVELOPMENT_SECRET,
            subject="bench.load",
            ttl=timedelta(seconds=seconds + 3600),
        )
        headers = {"Authorization": f"Bearer {token}"}
        url = f"{services.url('navigator')}/v1/corpora/{corpus}/navigate"
        producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap, linger_ms=5, acks="all", enable_idempotence=True
        )
        await producer.start()
        stop = asyncio.Event()
        windows = [Window() for _ in range(max(1, math.ceil(seconds / window_seconds - 1e-9)))]
        run = Run(loop.time() + 1.0, seconds, window_seconds, windows)
        watcher = asyncio.ensure_future(watch_persisted(run, bootstrap, services.persisted, stop))
        edge_watcher = asyncio.ensure_future(
            watch_edges(run, bootstrap, services.audit, edges, stop)
        )
        sampler = asyncio.ensure_future(sample(run, services, stop))
        say(
            f"{args.minutes:g} min at {args.persist_rate:g} persists/s and"
            f" {args.navigate_rate:g} navigations/s"
        )
        try:
            await asyncio.gather(
                persist_load(
                    run,
                    producer,
                    services.persist,
                    tenant,
                    docs,
                    writer,
                    args.seed_documents,
                    args.persist_rate,
                ),
                navigate_load(run, url, headers, writer, args.navigate_rate, args.budget),
            )
            run.sent = True
            if len(run.seen) == len(run.scheduled):
                run.all_seen.set()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(run.all_seen.wait(), args.drain)
                await asyncio.wait_for(
                    edges_drained(run, owner, tenant, store_table(edges), services), args.drain
                )
            drained_after = loop.time() - run.start - seconds
        finally:
            stop.set()
            await asyncio.gather(watcher, edge_watcher, sampler)
            await producer.stop()

        for document in set(run.scheduled) - run.seen:
            run.error("persist_lost", f"{document}: no document.persisted in {args.drain:g} s")
        dead_letters = {}
        async with httpx.AsyncClient(timeout=5) as http:
            for name in SERVICES:
                text = (await http.get(f"{services.url(name)}/metrics")).text
                dead_letters[name] = metric_total(text, "mnemo_dead_letters_total")
                if dead_letters[name]:
                    run.error("dead_letter", f"{name}: {dead_letters[name]:g}")
        stored = await count_rows(owner, tenant, store_table(docs))
        edge_rows = await count_rows(owner, tenant, store_table(edges))
        if stored != args.seed_documents + len(run.scheduled):
            run.error(
                "rows",
                f"{stored} documents stored, {args.seed_documents + len(run.scheduled)} sent",
            )
        for name, code in services.exited().items():
            run.error("exited", f"{name} exited with {code} during the run")
        codes = services.stop()
        for name, code in codes.items():
            if code != 0:
                run.error("shutdown", f"{name} exited {code} on SIGTERM")
    finally:
        services.stop()
        await drop(
            owner,
            (docs, edges),
            corpus,
            tenant,
            bootstrap,
            (services.persist, services.persisted, services.audit, services.forget),
        )
        await owner.close()

    for document, at in run.scheduled.items():
        window = run.window(at)
        if document in run.edges_at:
            window.edges_latency.append(run.edges_at[document] - at)
        else:
            window.no_edges += 1
    sent = args.seed_documents
    reports, before = [], None
    for index, window in enumerate(run.windows):
        sent += window.persist_sent
        reports.append(window_report(run, index, window, sent, before))
        before = window.samples[-1] if window.samples else before
    verdict: dict[str, Any] = {
        "errors_total": sum(run.errors.values()),
        "errors": dict(run.errors),
        "first_errors": run.first_errors,
        "ratios": ratios(reports),
        "lag_slope_per_minute_last_half": {
            name: lag_slope([s for w in run.windows for s in w.samples], name, seconds / 2)
            for name in ("classifier", "ingest", "audit")
        },
    }
    output = table(reports, verdict, window_seconds)
    print(output)
    result = {
        "benchmark": "load_test",
        "settings": {
            "minutes": args.minutes,
            "window_seconds": window_seconds,
            "persist_rate": args.persist_rate,
            "navigate_rate": args.navigate_rate,
            "seed_documents": args.seed_documents,
            "budget": args.budget,
            "corpus": "adaptive, documents + edges",
        },
        "machine": {
            "cpus": os.cpu_count(),
            "load_before": [round(x, 2) for x in load_before],
            "load_after": [round(x, 2) for x in os.getloadavg()],
        },
        "totals": {
            "persists_sent": len(run.scheduled),
            "persisted_seen": len(run.seen),
            "navigations": sum(len(w.navigate_latency) for w in run.windows),
            "documents_stored": stored,
            "edge_rows": edge_rows,
            "edge_rows_seen_committed": run.edge_rows_seen,
            "documents_with_edges": len(run.edges_at),
            "drained_after_s": round(drained_after, 1),
            "dead_letters": dead_letters,
            "shutdown_codes": codes,
        },
        **verdict,
        "windows": reports,
        "table": output,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.output}")
    return 1 if verdict["errors_total"] else 0


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--minutes", type=float, default=10.0, help="how long the load runs")
    parser.add_argument("--persist-rate", type=float, default=2.0, help="new documents a second")
    parser.add_argument("--navigate-rate", type=float, default=5.0, help="navigations a second")
    parser.add_argument("--seed-documents", type=int, default=1000, help="corpus at the start")
    parser.add_argument("--window", type=float, default=60.0, help="seconds per reported row")
    parser.add_argument("--budget", type=int, default=5, help="documents per navigation")
    parser.add_argument(
        "--drain", type=float, default=120.0, help="seconds to wait for the last persists"
    )
    parser.add_argument("--random-seed", type=int, default=16)
    parser.add_argument("--output", type=Path, default=RESULTS / "load_test.json")
    parser.add_argument("--logs", type=Path, default=RESULTS / "load_test_logs")
    args = parser.parse_args(argv)
    if args.minutes <= 0 or args.persist_rate <= 0 or args.navigate_rate <= 0:
        parser.error("--minutes and the rates must be positive")
    return args


if __name__ == "__main__":
    arguments = parse()

    def stop(number: int, frame: object) -> None:
        raise SystemExit(128 + number)  # so the services are stopped and the rows dropped

    signal.signal(signal.SIGTERM, stop)
    sys.exit(asyncio.run(main(arguments)))
