"""No leak under load: 20 tenants, 4 concurrent writers each (through Kafka and a real ingest),
and 8 concurrent navigators calling a navigator process over HTTP with real tokens, whose
`where:` filters, parameters, seeds, pages and `client` claims are drawn from a corpus of hostile
payloads (SQL injection, `LIKE` wildcards `%` `_` `\\`, quotes, unicode, NUL, the pinned-scope
attacks of the navigator's own tests). At least 10,000 generated cases: every hit, trail title,
`via` and `contradicts` id, retrieved item, search chunk and documents-page row is checked against
the ground truth of who wrote it (tenant and end-client). Zero may lie outside the caller's
tenant and, for a client-confined token, outside its end-client; no request may answer 5xx; and
no reinforcement may move an edge of an end-client no token names.

The seed rows are written straight to the stores (the owner role); everything written during the
run goes through Kafka and ingest.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiokafka import AIOKafkaProducer
from mnemo_auth import DEVELOPMENT_SECRET, mint_token
from mnemo_store.identifiers import store_table

from tests.chaos.conftest import World, make_world, remove_world, shared_stack
from tests.chaos.summary import Summary
from tests.integration.navigator.conftest import PINNED
from tests.integration.navigator.test_pinned_scope_under_attack import PAYLOADS, WHERES

pytestmark = pytest.mark.timeout(420)

TENANTS = 20
WRITERS = 4  # per tenant
NAVIGATORS = 8
CASES = int(os.environ.get("MNEMO_CHAOS_LEAK_CASES", "10000"))
SENTINEL = "zz-sentinel"
"""An end-client that no token ever names: its edges must never move."""
DATA_CLIENTS = ("c1", "c2", "c", "%", "_", "\\", "c1' OR '1'='1", "é😀 ünï", "O'Brien", SENTINEL)
CLAIMS = (
    *DATA_CLIENTS[:-1],
    *PAYLOADS,
    "",
    " ",
    "C1",
    "c1 ",
    "c%",
    "%c%",
    "_1",
    "\\_",
    "\\%",
    "zz%",
    "zz-sentinel_",
    "zz-sentinel%",
    "%sentinel",
    "' OR tenant_id LIKE '%' --",
    "'; DROP TABLE mnemo.tenants; --",
    "c1\\",
    "é%",
    "😀",
    "\x00",
    "c1\x00",
    "x" * 2000,
)
WORDS = ["alpha", "beta", "gamma", "delta", "notes", "field", "memory", "ledger", "river", "stone"]
# Clause templates of random `where:` filters: `{p}` is a payload inlined (quotes doubled or
# not), `${x}` a parameter bound to one.
CLAUSES = (
    "tenant_id == '{p}'",
    "tenant_id != '{p}'",
    "tenant_id LIKE '{p}'",
    "tenant_id LIKE '%{p}%'",
    "title LIKE '%{p}%'",
    "body LIKE '{p}%'",
    "tenant_id == '${{x}}'",
    "tenant_id LIKE '${{x}}'",
    "title != '${{x}}'",
    "tenant_id == '${{client.tenant_id}}'",
    "tenant_id == '${{y.z}}'",
    "axon_tenant == '{p}'",
    "id == '{p}'",
    "tenant_id LIKE '%'",
    "title LIKE '%' OR tenant_id LIKE '%'",
    "({p}",
    "{p}",
)


@dataclass(frozen=True)
class Written:
    tenant: int
    id: str
    client: str


@dataclass
class Truth:
    """Who wrote every document: by title (unique per row) and by (tenant, id)."""

    by_title: dict[str, Written] = field(default_factory=dict)
    by_id: dict[tuple[int, str], Written] = field(default_factory=dict)
    ids: dict[int, list[str]] = field(default_factory=dict)
    documents: Counter[int] = field(default_factory=Counter)
    edges: Counter[int] = field(default_factory=Counter)

    def add(self, tenant: int, doc_id: str, client: str, title: str) -> None:
        row = Written(tenant, doc_id, client)
        self.by_title[title] = row
        self.by_id[(tenant, doc_id)] = row
        self.ids.setdefault(tenant, []).append(doc_id)
        self.documents[tenant] += 1


@dataclass
class Tally:
    cases: Counter[str] = field(default_factory=Counter)
    seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    statuses: Counter[int] = field(default_factory=Counter)
    items: int = 0
    leaks: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(self.cases.values())


@pytest.fixture
async def leak_world(tmp_path: Path) -> AsyncIterator[World]:
    created = await make_world(
        shared_stack(),
        tmp_path,
        tenants=TENANTS,
        published=True,
        adaptive=True,
        id_type="Text",
        client_type="Text",
    )
    try:
        yield created
    finally:
        await remove_world(created)


def marker(draw: random.Random) -> str:
    return f"{draw.getrandbits(40):010x}"


def document(
    draw: random.Random, truth: Truth, tenant: int, client: str, doc_id: str | None = None
) -> dict[str, Any]:
    doc_id = doc_id or f"d-{marker(draw)}"
    title = f"{' '.join(draw.sample(WORDS, 2))} {marker(draw)}"
    truth.add(tenant, doc_id, client, title)
    body = f"{' '.join(draw.sample(WORDS, 3))} {client}"
    return {"id": doc_id, "tenant_id": client, "title": title, "body": body}


def edge(source: str, target: str, client: str, etype: str = "cite") -> dict[str, Any]:
    return {"from_id": source, "to_id": target, "etype": etype, "weight": 0.5, "tenant_id": client}


def seed(draw: random.Random, truth: Truth, tenant: int) -> tuple[list[Any], list[Any]]:
    """Per end-client a small chain of documents; ids `shared-<n>` reused in every tenant; edges
    within a client, plus edges labelled with one client that point at another's documents."""
    docs: list[dict[str, Any]] = []
    edges: list[dict[str, Any]] = []
    ids: dict[str, list[str]] = {}
    for c, client in enumerate(DATA_CLIENTS):
        mine = [
            document(draw, truth, tenant, client, f"shared-{c}-{n}" if n < 2 else None)
            for n in range(5)
        ]
        ids[client] = [d["id"] for d in mine]
        docs += mine
        for a, b in zip(ids[client], ids[client][1:], strict=False):
            edges.append(edge(a, b, client))
            edges.append(edge(b, a, client, "elaborate"))
    for client in DATA_CLIENTS:
        other = draw.choice([c for c in DATA_CLIENTS if c != client])
        edges.append(edge(ids[client][0], ids[other][1], client))
    truth.edges[tenant] += len(edges)
    return docs, edges


def claim_for(draw: random.Random, tenant: int) -> dict[str, str] | None:
    """A token's `client` claim: none (tenant-wide, even tenants only, so the sentinel's edges
    of odd tenants are never in any caller's scope), a payload, or a malformed claim."""
    roll = draw.random()
    if roll < 0.15 and tenant % 2 == 0:
        return None
    if roll < 0.2:
        return {"other": draw.choice(CLAIMS)}
    if roll < 0.25:
        return {"tenant_id": draw.choice(CLAIMS), "admin": draw.choice(CLAIMS)}
    if roll < 0.6:  # an end-client that has rows (its scope recurs, so memory reinforces)
        return {"tenant_id": draw.choice(DATA_CLIENTS[:-1])}
    return {"tenant_id": draw.choice(CLAIMS)}


def where_for(draw: random.Random) -> tuple[str | None, dict[str, Any]]:
    if draw.random() < 0.3:
        return None, {}
    if draw.random() < 0.3:
        return draw.choice(WHERES), {"x": draw.choice(CLAIMS)}
    clauses = []
    for _ in range(draw.randint(1, 3)):
        payload = draw.choice(CLAIMS)
        if draw.random() < 0.5:
            payload = payload.replace("'", "''")
        clauses.append(draw.choice(CLAUSES).format(p=payload))
    text = f" {draw.choice(['AND', 'OR', 'and', '&&'])} ".join(clauses)
    params: dict[str, Any] = {"x": draw.choice(CLAIMS)}
    if draw.random() < 0.3:
        params["client.tenant_id"] = draw.choice(CLAIMS)
    if draw.random() < 0.1:
        params["client"] = draw.choice(CLAIMS)
    return text, params


def query_for(draw: random.Random) -> str:
    words = draw.sample(WORDS, draw.randint(1, 4))
    if draw.random() < 0.2:
        words.append(draw.choice(CLAIMS))
    return " ".join(words) or "alpha"


class Checker:
    def __init__(self, truth: Truth, tally: Tally) -> None:
        self.truth, self.tally = truth, tally

    def allowed(self, row: Written | None, tenant: int, claim: Mapping[str, str] | None) -> bool:
        if row is None or row.tenant != tenant:
            return False
        return claim is None or ("tenant_id" in claim and claim["tenant_id"] == row.client)

    def title(self, title: str, doc_id: str | None, tenant: int, claim: Any, where: str) -> None:
        self.tally.items += 1
        row = self.truth.by_title.get(title)
        if not self.allowed(row, tenant, claim) or (
            doc_id is not None and row and row.id != doc_id
        ):
            self.tally.leaks.append(f"{where}: tenant {tenant} claim {claim!r} got {title!r} {row}")

    def id(self, doc_id: str, tenant: int, claim: Any, where: str) -> None:
        self.tally.items += 1
        row = self.truth.by_id.get((tenant, doc_id))
        if not self.allowed(row, tenant, claim):
            self.tally.leaks.append(f"{where}: tenant {tenant} claim {claim!r} got id {doc_id!r}")


async def test_twenty_tenants_writers_and_navigators_under_hostile_input_leak_nothing(
    leak_world: World, summary: Summary
) -> None:
    world = leak_world
    draw = random.Random(20)
    truth = Truth()
    for t in range(TENANTS):
        docs, edges = seed(draw, truth, t)
        await world.write(world.tenants[t], docs, edges)
    seeded = sum(truth.documents.values()) + sum(truth.edges.values())
    ingest = world.ingest()
    navigator = world.navigator(pinned=PINNED, pool_size=12)
    ingest.start()
    navigator.start()
    await ingest.ready()
    await navigator.ready()

    tally = Tally()
    check = Checker(truth, tally)
    tokens: dict[tuple[int, str], str] = {}
    done = asyncio.Event()
    sent: Counter[str] = Counter()

    def token(t: int, claim: Mapping[str, str] | None) -> str:
        key = (t, json.dumps(claim, sort_keys=True))
        if key not in tokens:
            tokens[key] = mint_token(
                tenant=world.tenants[t], secret=DEVELOPMENT_SECRET, client=claim
            )
        return tokens[key]

    producer = AIOKafkaProducer(bootstrap_servers=world.stack.bootstrap, linger_ms=20)
    await producer.start()

    async def writer(t: int, w: int) -> None:
        mine = random.Random(f"{t}/{w}")
        known: dict[str, list[str]] = {}
        while not done.is_set():
            client = mine.choice(DATA_CLIENTS)
            docs = [document(mine, truth, t, client) for _ in range(2)]
            earlier = known.setdefault(client, [f"shared-{DATA_CLIENTS.index(client)}-0"])
            edges = [edge(d["id"], mine.choice(earlier), client) for d in docs]
            earlier += [d["id"] for d in docs]
            truth.edges[t] += len(edges)
            tenant = world.tenants[t]
            for store, rows in ((world.docs, docs), (world.edges, edges)):
                for values in rows:
                    key, value = world.record(tenant, store, values)
                    await producer.send(world.topic("persist"), value, key=key)
                    sent["write"] += 1
            # Load shape, not synchronisation: a writer's pace of a few rows every 4-8 s.
            await asyncio.sleep(mine.uniform(4, 8))

    async def navigate(http: httpx.AsyncClient, me: random.Random, regular: bool) -> None:
        t = me.randrange(TENANTS)
        claim = claim_for(me, t)
        op = me.choices(["navigate", "retrieve", "search", "documents"], [3, 3, 2, 2])[0]
        where, params = where_for(me)
        if regular:  # an end-client of an odd tenant navigating again: memory moves its edges
            t, c = 2 * me.randrange(TENANTS // 2) + 1, me.randrange(len(DATA_CLIENTS) - 1)
            claim, op, where = {"tenant_id": DATA_CLIENTS[c]}, "navigate", None
        headers = {"Authorization": f"Bearer {token(t, claim)}"}
        base = f"/v1/corpora/{world.corpus}"
        body: dict[str, Any] = {"query": query_for(me)}
        if where is not None:
            body |= {"where": where, "params": params}
        if op == "navigate":
            body["budget"] = me.randint(1, 12)
            if regular:
                body["from"] = f"shared-{c}-0"
            elif me.random() < 0.5:  # a seed: its own, another client's or another tenant's
                body["from"] = me.choice(truth.ids[me.choice([t, t, me.randrange(TENANTS)])])
            answer = await http.post(f"{base}/navigate", json=body, headers=headers)
        elif op == "retrieve":
            body["k"] = me.randint(1, 100)
            answer = await http.post(f"{base}/retrieve", json=body, headers=headers)
        elif op == "search":
            goal = {me.choice(["query", "utterance", "topic"]): body["query"]}
            # Half the searches also try to widen their scope through fields the search body
            # does not have: those are never served (422, or 401 for a refused token).
            widening = me.random() < 0.5
            extra = {"where": where or "tenant_id LIKE '%'", "params": params} if widening else {}
            answer = await http.post(
                f"{base}/search",
                json={"collection": world.corpus, "goal": goal, **extra},
                headers=headers,
            )
            if widening and answer.status_code == 200:
                tally.failures.append(f"search with where/params served: {answer.text[:200]}")
        else:
            query: dict[str, Any] = {"limit": me.randint(1, 60)}
            if me.random() < 0.4:
                query["after"] = me.choice([*CLAIMS, "shared-", "d-", "a"])
            answer = await http.get(f"{base}/documents", params=query, headers=headers)
        tally.cases[op] += 1
        tally.seconds[op] += answer.elapsed.total_seconds()
        tally.statuses[answer.status_code] += 1
        where_ = f"{op} {json.dumps(body, ensure_ascii=False)[:300]}"
        if answer.status_code >= 500:
            tally.failures.append(f"{answer.status_code} {where_}: {answer.text[:300]}")
            return
        if answer.status_code != 200:
            return
        data = answer.json()
        if op == "navigate":
            for hit in data["hits"]:
                check.title(hit["title"], hit["id"], t, claim, where_)
                if hit["via"]:
                    check.id(hit["via"]["from"], t, claim, where_)
                for other_id in hit["contradicts"]:
                    check.id(other_id, t, claim, where_)
            for step in filter(None, data["trail"].split(" → ")):
                check.title(step.rsplit(" (Δ=", 1)[0], None, t, claim, where_)
        elif op == "retrieve":
            for item in data["items"]:
                check.title(item["title"], item["id"], t, claim, where_)
        elif op == "search":
            for chunk in data["chunks"]:
                check.title(chunk["text"].split("\n", 1)[0], chunk["id"], t, claim, where_)
        else:
            for row in data["documents"]:
                check.title(row["title"], row["id"], t, claim, where_)

    async def navigator_loop(n: int, http: httpx.AsyncClient) -> None:
        me = random.Random(f"navigator {n}")
        while tally.total < CASES:
            try:
                await navigate(http, me, regular=n == 0 and me.random() < 0.5)
            except httpx.TransportError as error:  # the service dropped the request: a failure
                tally.cases["dropped"] += 1
                tally.failures.append(f"dropped: {error!r}")
                assert len(tally.failures) < 50, tally.failures

    started, own_cpu = time.monotonic(), time.process_time()
    service_cpu = {"navigator": navigator.cpu_seconds(), "ingest": ingest.cpu_seconds()}
    writers = [asyncio.create_task(writer(t, w)) for t in range(TENANTS) for w in range(WRITERS)]
    try:
        async with httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{navigator.port}",
            timeout=60,
            limits=httpx.Limits(max_connections=NAVIGATORS),
        ) as http:
            await asyncio.gather(*(navigator_loop(n, http) for n in range(NAVIGATORS)))
    finally:
        done.set()
        await asyncio.gather(*writers, return_exceptions=True)
        await producer.stop()
    seconds = time.monotonic() - started
    cpu = {
        "navigator": navigator.cpu_seconds() - service_cpu["navigator"],
        "ingest": ingest.cpu_seconds() - service_cpu["ingest"],
        "test": time.process_time() - own_cpu,
    }

    # Everything written through ingest landed exactly once.
    async def caught_up() -> bool:
        return all(
            [
                await world.count(world.tenants[t]) >= truth.documents[t]
                and await world.count(world.tenants[t], store=world.edges) >= truth.edges[t]
                for t in range(TENANTS)
            ]
        )

    await world.until(caught_up, wait=120, every=0.5)
    lost = duplicated = 0
    for t in range(TENANTS):
        for store, expected in ((world.docs, truth.documents[t]), (world.edges, truth.edges[t])):
            rows = await world.count(world.tenants[t], store=store)
            lost += max(expected - rows, 0)
            duplicated += max(rows - expected, 0)
    # The sentinel's edges (odd tenants: no tenant-wide token) never moved; others did.
    moved = {"sentinel": 0, "named": 0}
    for t in range(1, TENANTS, 2):
        for row in await world.rows(
            world.tenants[t], f"SELECT tenant_id, weight FROM {store_table(world.edges)}"
        ):
            if row["weight"] != 0.5:
                moved["sentinel" if row["tenant_id"] == SENTINEL else "named"] += 1

    report = {
        "cases": dict(tally.cases),
        "mean_ms": {op: round(1000 * tally.seconds[op] / n, 1) for op, n in tally.cases.items()},
        "failures": tally.failures[:10],
        "total_cases": tally.total,
        "statuses": dict(sorted(tally.statuses.items())),
        "items_checked": tally.items,
        "leaked": len(tally.leaks),
        "5xx": len(tally.failures),
        "writes_through_ingest": sent["write"],
        "seeded_rows": seeded,
        "edges_moved_in_odd_tenants": moved,
        "seconds": round(seconds, 1),
        "cpu_seconds": {name: round(value, 1) for name, value in cpu.items()},
    }
    print(json.dumps(report, ensure_ascii=False))
    summary.row(
        fault=f"{TENANTS} tenants x {WRITERS} writers, {NAVIGATORS} navigators, hostile input",
        events=tally.total + sent["write"],
        lost=lost,
        duplicated=duplicated,
        leaked=len(tally.leaks),
        notes=f"{tally.total:,} cases ({tally.items:,} items checked) + {sent['write']:,} writes "
        f"through ingest in {seconds:.0f} s; statuses {dict(sorted(tally.statuses.items()))}",
    )
    assert tally.leaks == [], tally.leaks[:20]
    assert tally.failures == [], tally.failures[:20]
    assert (lost, duplicated) == (0, 0)
    assert moved["sentinel"] == 0, moved
    assert moved["named"] > 0, "no reinforcement at all: the sentinel check tests nothing"
    assert tally.items > CASES, "too few items came back to check"
