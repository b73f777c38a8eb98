"""Navigation over real HTTP: the navigator as its own process on loopback, at 1k, 10k and 100k
documents per tenant (5 edges per document), against a naive baseline in the same run.

For each size, in one tenant under row-level security:
- cold: a navigator started with the graph cache off (`MNEMO_NAVIGATOR_CACHE_MAX_BYTES=0`): every
  request loads the graph from Postgres and builds what navigation needs;
- warm: a navigator with the cache on, after one request: the graph is proven fresh by its revision;
- write-then-navigate: a document and two edges written (and committed) by another connection,
  then a navigation asking for the new document: the cached graph is refreshed from the changed
  rows (`diagnostics.cache == "refresh"`) and must return the new document;
- naive: rows fetched with asyncpg in the tenant, a networkx DiGraph, `networkx.pagerank`;
- retrieve: over HTTP, and its statement (the stored tsvector column) against the statement it
  replaced (`@@` over `to_tsvector(title || ' ' || body)` per row) as the navigator's role, on the
  same queries, which must return the same documents; with the plan's conditions and whether
  `ts_match_vq` is leakproof in this database.
Each is timed per request (p50, p95) and as requests per second of one sequential client; the
cold and write-then-navigate requests also by phase, from the navigator's `Server-Timing` header,
and the load average is recorded before and after each size. At 1M documents (`--sizes 1000000`)
the naive baseline runs once and 20 writes are timed, to keep the run to minutes. The
corpus is not adaptive, so warm requests write nothing (an adaptive corpus adds the memory
transaction; its own reinforcement keeps the cache warm). Prints a table and writes
bench/results/navigate_bench.json. Needs the local stack (`make up`) and the database URLs of the
Makefile (the local defaults otherwise).

Targets (issue 11): warm p95 ≤ 50 ms at 10k; cold at 100k ≥ 5× faster than naive; write-then-
navigate at 100k p95 ≤ 250 ms.

`--mcp` runs only the MCP comparison (issue 23; target: MCP adds ≤ 10 ms p95 at 10k): warm
navigations over the HTTP API and the same ones as the `navigate` tool of MCP over streamable HTTP
at the navigator's `/mcp` (the MCP SDK's client, one session), alternating, 300 each, each request
timed; their p50 and p95, the p95 added by MCP and the ratio, and the CPU time each kind costs the
navigator process and the client per call. Written to
bench/results/navigate_bench_mcp.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import httpx2
import networkx as nx
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mnemo_auth import DEVELOPMENT_SECRET, mint_token
from mnemo_axon.compiler import load_deployment
from mnemo_mdn.relations import RELATION_TYPES
from mnemo_store import Store, StoreCorpus
from mnemo_store.applier import apply_deployment
from mnemo_store.ddl import FULLTEXT_CONFIG, fulltext_expression
from mnemo_store.identifiers import TENANT_COLUMN, quote, store_table
from mnemo_store.retrieval import retrieve_sql, text_query
from mnemo_store.scope import Scope, compile_scope, positional

ROOT = Path(__file__).resolve().parents[1]
MCP_RESULTS = Path(__file__).resolve().parent / "results" / "navigate_bench_mcp.json"
RESULTS = Path(__file__).parent / "results" / "navigate_bench.json"
SIZES = (1_000, 10_000, 100_000)
EDGES_PER_DOCUMENT = 5
VOCABULARY = 5_000
MCP_PAIRS = 300
"""Warm navigations over HTTP and over MCP in the MCP comparison, each: enough for a p95 that
is not the run's few slowest requests."""
TARGETS = {"warm_p95_ms_at_10k": 50.0, "cold_speedup_at_100k": 5.0, "write_p95_ms_at_100k": 250.0}
OWNER = "postgresql://mnemo_owner:mnemo_owner@127.0.0.1:25432/mnemo"
NAVIGATOR = "postgresql://mnemo_navigator:mnemo_navigator@127.0.0.1:25432/mnemo"

DECLARATIONS = """
axonstore NavBenchDocs_{s} {{ backend: postgresql
    schema {{ id: Uuid primary_key  tenant_id: Text not_null  title: Text not_null  body: Text }} }}
axonstore NavBenchEdges_{s} {{ backend: postgresql
    schema {{ from_id: Uuid not_null  to_id: Uuid not_null  etype: Text not_null
             weight: Float not_null  tenant_id: Text not_null }} }}
corpus NavBench_{s} from axonstore {{
    documents: NavBenchDocs_{s}(id, title, body)
    relations: NavBenchEdges_{s}(from_id, to_id, etype, weight)
    adaptive: false
}}
"""


def repeats(n: int) -> dict[str, int]:
    if n >= 1_000_000:  # the naive baseline alone takes over a minute here
        return {"cold": 3, "warm": 40, "write": 20, "naive": 1, "retrieve": 20}
    if n >= 100_000:
        return {"cold": 3, "warm": 40, "write": 40, "naive": 2, "retrieve": 20}
    if n >= 10_000:
        return {"cold": 8, "warm": 100, "write": 40, "naive": 4, "retrieve": 40}
    return {"cold": 20, "warm": 200, "write": 40, "naive": 10, "retrieve": 40}


async def seed(owner: asyncpg.Connection, corpus: StoreCorpus, tenant: uuid.UUID, n: int) -> None:
    """`n` documents (4-word titles, 16-word bodies from a 5,000-word vocabulary) and 5 edges from
    each to random documents, generated by Postgres inside the tenant."""
    docs, edges = store_table(corpus.documents.name), store_table(corpus.relations.name)

    def words(count: int) -> str:
        return (
            f"(SELECT string_agg('w' || floor(random() * {VOCABULARY})::int::text, ' ')"
            f" FROM generate_series(1, {count} + 0 * g))"
        )

    async with owner.transaction():
        await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
        await owner.execute(
            f"INSERT INTO {docs} (axon_tenant, id, tenant_id, title, body)"
            f" SELECT $1, gen_random_uuid(), 'c1', {words(4)}, {words(16)}"
            " FROM generate_series(1, $2::int) AS g",
            tenant,
            n,
        )
        await owner.execute(
            "CREATE TEMP TABLE bench_ids ON COMMIT DROP AS"
            f" SELECT id, (row_number() OVER () - 1)::int8 AS k FROM {docs}"
        )
        await owner.execute("CREATE INDEX ON bench_ids (k)")
        await owner.execute("ANALYZE bench_ids")
        await owner.execute(
            f"INSERT INTO {edges} (axon_tenant, from_id, to_id, etype, weight, tenant_id)"
            " SELECT $1, f.id, t.id,"
            " ($2::text[])[1 + floor(random() * cardinality($2::text[]))::int],"
            " 0.05 + random() * 0.95, 'c1'"
            " FROM (SELECT g, floor(random() * $3::int)::int8 AS target"
            "       FROM generate_series(0, $3::int * $4::int - 1) AS g) AS e"
            " JOIN bench_ids AS f ON f.k = e.g / $4::int"
            " JOIN bench_ids AS t ON t.k = e.target",
            tenant,
            list(RELATION_TYPES),
            n,
            EDGES_PER_DOCUMENT,
        )
    await owner.execute(f"ANALYZE {docs}")
    await owner.execute(f"ANALYZE {edges}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_navigator(port: int, cache_bytes: int, log: Path) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "MNEMO_NAVIGATOR_PORT": str(port),
        "MNEMO_NAVIGATOR_DATABASE_URL": os.environ.get("MNEMO_NAVIGATOR_DATABASE_URL", NAVIGATOR),
        "MNEMO_NAVIGATOR_TOKEN_SECRET": DEVELOPMENT_SECRET,
        "MNEMO_NAVIGATOR_CONSUME_REQUESTS": "false",
        "MNEMO_NAVIGATOR_CACHE_MAX_BYTES": str(cache_bytes),
        "MNEMO_NAVIGATOR_PINNED_SCOPES": "{}",
    }
    with log.open("wb") as sink:
        return subprocess.Popen(
            [sys.executable, "-m", "mnemo_navigator"], cwd=ROOT, env=env, stdout=sink, stderr=sink
        )


async def wait_ready(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 60
    async with httpx.AsyncClient() as client:
        while True:
            try:
                if (await client.get(f"{url}/readyz", timeout=2)).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                tail = await asyncio.to_thread(log.read_text)
                raise RuntimeError(f"navigator did not become ready:\n{tail[-2000:]}")
            await asyncio.sleep(0.2)


def summary(latencies: Sequence[float]) -> dict[str, float]:
    ordered = sorted(latencies)
    p95 = ordered[min(len(ordered) - 1, max(0, round(0.95 * len(ordered)) - 1))]
    return {
        "n": len(ordered),
        "p50_ms": round(statistics.median(ordered) * 1000, 2),
        "p95_ms": round(p95 * 1000, 2),
        "rps": round(len(ordered) / sum(ordered), 2),
    }


def server_timing(header: str) -> dict[str, float]:
    """`Server-Timing: revision;dur=0.4, refresh;dur=12.1` as {phase: milliseconds}."""
    phases: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in header.split(","))):
        name, _, rest = part.partition(";")
        if rest.startswith("dur="):
            phases[name] = float(rest[4:])
    return phases


def phase_summary(samples: Sequence[dict[str, float]]) -> dict[str, dict[str, float]]:
    """p50 and p95 milliseconds of each phase over the samples that went through it."""
    names = sorted({name for sample in samples for name in sample})
    summaries = {}
    for name in names:
        values = sorted(sample[name] for sample in samples if name in sample)
        p95 = values[min(len(values) - 1, max(0, round(0.95 * len(values)) - 1))]
        summaries[name] = {
            "n": len(values),
            "p50_ms": round(statistics.median(values), 2),
            "p95_ms": round(p95, 2),
        }
    return summaries


async def timed_navigate(
    client: httpx.AsyncClient, url: str, headers: dict[str, str], query: str
) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    response = await client.post(url, json={"query": query, "budget": 5}, headers=headers)
    elapsed = time.perf_counter() - started
    if response.status_code != 200:
        raise RuntimeError(f"navigate answered {response.status_code}: {response.text[:500]}")
    body: dict[str, Any] = response.json()
    body["phases"] = server_timing(response.headers.get("server-timing", ""))
    return elapsed, body


async def naive(reader: asyncpg.Connection, corpus: StoreCorpus, tenant: uuid.UUID) -> float:
    """Rows → networkx → PageRank, as the navigator's role in the tenant."""
    started = time.perf_counter()
    async with reader.transaction(readonly=True):
        await reader.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
        docs = await reader.fetch(
            f"SELECT id, title, body FROM {store_table(corpus.documents.name)}"
        )
        edges = await reader.fetch(
            f"SELECT from_id, to_id, etype, weight FROM {store_table(corpus.relations.name)}"
        )
    graph = nx.DiGraph()
    graph.add_nodes_from((row["id"], {"title": row["title"]}) for row in docs)
    graph.add_weighted_edges_from((r["from_id"], r["to_id"], r["weight"]) for r in edges)
    nx.pagerank(graph, alpha=0.85, weight="weight")
    return time.perf_counter() - started


def expression_retrieve_sql(corpus: StoreCorpus) -> str:
    """The retrieve statement before the stored column (the baseline): `@@` over the tsvector
    expression of title and body, computed for every row the tenant's policy lets through."""
    vector = fulltext_expression(corpus.title_column, corpus.body_column)
    query = f"to_tsquery('{FULLTEXT_CONFIG}'::regconfig, $1)"
    return (
        f"SELECT id::text AS axon_id, ts_rank_cd({vector}, {query}, 32) AS axon_similarity"
        f" FROM {store_table(corpus.documents.name)}"
        f" WHERE {quote(TENANT_COLUMN)} = NULLIF(current_setting('mnemo.tenant', true), '')::uuid"
        f' AND {vector} @@ {query} ORDER BY axon_similarity DESC, id::text COLLATE "C" LIMIT $2'
    )


def plan_conditions(plan: Any, key: str) -> list[str]:
    """Every `key` ("Index Cond", "Filter") of an EXPLAIN (FORMAT JSON) plan, any depth."""
    found: list[str] = []
    if isinstance(plan, dict):
        if isinstance(plan.get(key), str):
            found.append(plan[key])
        for value in plan.values():
            found += plan_conditions(value, key)
    elif isinstance(plan, list):
        for value in plan:
            found += plan_conditions(value, key)
    return found


async def retrieval(
    client: httpx.AsyncClient,
    url: str,
    headers: dict[str, str],
    reader: asyncpg.Connection,
    corpus: StoreCorpus,
    tenant: uuid.UUID,
    repeats: int,
) -> dict[str, Any]:
    """Retrieve over HTTP, its statement as the navigator's role (stored column) and the
    expression statement it replaced (the baseline), on the same queries; both statements must
    return the same documents. Also: whether the stored column's match is a GIN index condition
    (`ts_match_vq` marked leakproof by the superuser) or a per-row filter, from EXPLAIN."""
    queries = [f"w{k * 37 % VOCABULARY} w{(k * 91 + 5) % VOCABULARY}" for k in range(repeats)]
    http = []
    for query in queries:
        started = time.perf_counter()
        response = await client.post(url, json={"query": query, "k": 5}, headers=headers)
        http.append(time.perf_counter() - started)
        if response.status_code != 200 or not response.json()["items"]:
            raise RuntimeError(f"retrieve answered {response.status_code}: {response.text[:300]}")
    whole = compile_scope(Scope(), corpus)
    column_sql, _ = positional(retrieve_sql(corpus, whole), whole, query="", k=0)
    expression_sql = expression_retrieve_sql(corpus)
    column, expression = [], []
    async with reader.transaction(readonly=True):
        await reader.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
        for query in queries:
            text = text_query(query)
            started = time.perf_counter()
            new = await reader.fetch(column_sql, text, 5)
            column.append(time.perf_counter() - started)
            started = time.perf_counter()
            old = await reader.fetch(expression_sql, text, 5)
            expression.append(time.perf_counter() - started)
            if [r["axon_id"] for r in new] != [r["axon_id"] for r in old]:
                raise RuntimeError(f"the two retrieve statements disagree on {query!r}")
        plan = json.loads(
            await reader.fetchval(f"EXPLAIN (FORMAT JSON) {column_sql}", text_query(queries[0]), 5)
        )
        leakproof = await reader.fetchval(
            "SELECT proleakproof FROM pg_proc WHERE oid = 'ts_match_vq(tsvector,tsquery)'::regprocedure"
        )
    return {
        "http": summary(http),
        "column_sql": summary(column),
        "expression_sql": summary(expression),
        "speedup": round(statistics.median(expression) / statistics.median(column), 2),
        "ts_match_vq_leakproof": bool(leakproof),
        "match_is_index_condition": any("@@" in c for c in plan_conditions(plan, "Index Cond")),
        "plan_filters": plan_conditions(plan, "Filter"),
        "plan_index_conditions": plan_conditions(plan, "Index Cond"),
    }


async def timed_mcp_navigate(mcp: Client, corpus: str, query: str) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    result = await mcp.call_tool("navigate", {"corpus": corpus, "query": query, "budget": 5})
    elapsed = time.perf_counter() - started
    if result.is_error or result.structured_content is None:
        raise RuntimeError(f"the navigate tool failed: {result.content}")
    return elapsed, dict(result.structured_content)


def process_cpu_seconds(pid: int) -> float:
    """User and system CPU seconds process `pid` has used so far (Linux's proc file system)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def compare_mcp(
    client: httpx.AsyncClient,
    url: str,
    corpus: str,
    headers: dict[str, str],
    count: int,
    navigator_pid: int,
) -> dict[str, Any]:
    """Warm navigations over HTTP and over MCP (streamable HTTP), alternating, `count` each, with
    the CPU time each costs the navigator process and this client (less bound to the machine's
    load than wall-clock time: the navigator's in clock ticks, summed over the calls)."""
    http2 = httpx2.AsyncClient(headers=headers, timeout=600)
    cpu = {"http": [0.0, 0.0], "mcp": [0.0, 0.0]}  # navigator, client

    def charge(kind: str, navigator_before: float, client_before: float) -> None:
        cpu[kind][0] += process_cpu_seconds(navigator_pid) - navigator_before
        cpu[kind][1] += time.process_time() - client_before

    async with http2:
        transport = streamable_http_client(f"{url}/mcp", http_client=http2)
        async with Client(transport, read_timeout_seconds=600) as mcp:
            await timed_mcp_navigate(mcp, corpus, "w1 w2")  # the session's first call
            over_http, over_mcp = [], []
            for k in range(count):
                query = f"w{k % 997} w{(k * 13) % 991}"
                before = process_cpu_seconds(navigator_pid), time.process_time()
                elapsed, body = await timed_navigate(
                    client, f"{url}/v1/corpora/{corpus}/navigate", headers, query
                )
                charge("http", *before)
                over_http.append(elapsed)
                before = process_cpu_seconds(navigator_pid), time.process_time()
                elapsed, answer = await timed_mcp_navigate(mcp, corpus, query)
                charge("mcp", *before)
                if answer["diagnostics"]["cache"] != "hit" or body["diagnostics"]["cache"] != "hit":
                    raise RuntimeError("a warm request missed the cache")
                over_mcp.append(elapsed)
    http_summary, mcp_summary = summary(over_http), summary(over_mcp)
    for kind, summarised in (("http", http_summary), ("mcp", mcp_summary)):
        summarised["navigator_cpu_ms"] = round(cpu[kind][0] / count * 1000, 2)
        summarised["client_cpu_ms"] = round(cpu[kind][1] / count * 1000, 2)
    return {
        "http": http_summary,
        "mcp": mcp_summary,
        "mcp_added_navigator_cpu_ms": round(
            mcp_summary["navigator_cpu_ms"] - http_summary["navigator_cpu_ms"], 2
        ),
        "mcp_added_client_cpu_ms": round(
            mcp_summary["client_cpu_ms"] - http_summary["client_cpu_ms"], 2
        ),
        "mcp_added_p95_ms": round(mcp_summary["p95_ms"] - http_summary["p95_ms"], 2),
        "mcp_added_p50_ms": round(mcp_summary["p50_ms"] - http_summary["p50_ms"], 2),
        "mcp_over_http_p95": round(mcp_summary["p95_ms"] / http_summary["p95_ms"], 2),
        "target_added_p95_ms": 10.0,
    }


async def run_size(
    n: int,
    owner: asyncpg.Connection,
    owner_store: Store,
    reader: asyncpg.Connection,
    cached_url: str,
    cold_url: str,
    made: list[tuple[StoreCorpus, uuid.UUID]],
    mcp_only: bool = False,
    navigator_pid: int | None = None,
) -> dict[str, Any]:
    suffix = uuid.uuid4().hex[:10]
    deployment = load_deployment(DECLARATIONS.format(s=suffix), "navigate_bench.axon")
    await apply_deployment(owner, deployment, gateway_base_url="http://127.0.0.1:8080")
    corpus = StoreCorpus.from_deployment(deployment, f"NavBench_{suffix}")
    await owner.execute(
        "UPDATE mnemo.corpora SET status = 'published' WHERE corpus_id = $1", corpus.name
    )
    tenant: uuid.UUID = await owner.fetchval(
        "INSERT INTO mnemo.tenants (name) VALUES ($1) RETURNING tenant_id", f"navbench-{suffix}"
    )
    made.append((corpus, tenant))
    seeded = time.perf_counter()
    await seed(owner, corpus, tenant, n)
    print(f"  {n:>7} documents seeded in {time.perf_counter() - seeded:.1f} s", flush=True)
    headers = {"Authorization": f"Bearer {mint_token(tenant=tenant, secret=DEVELOPMENT_SECRET)}"}
    path = f"/v1/corpora/{corpus.name}/navigate"
    count = repeats(n)
    result: dict[str, Any] = {
        "documents": n,
        "edges": n * EDGES_PER_DOCUMENT,
        "load_average_before": [round(x, 2) for x in os.getloadavg()],
    }
    async with httpx.AsyncClient(timeout=600) as client:
        if mcp_only:
            await timed_navigate(client, cached_url + path, headers, "w1 w2")  # fills the cache
            if navigator_pid is None:
                raise ValueError("the MCP comparison needs the cached navigator's process id")
            result["mcp"] = await compare_mcp(
                client, cached_url, corpus.name, headers, MCP_PAIRS, navigator_pid
            )
            result["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
            return result
        cold_runs = [
            await timed_navigate(client, cold_url + path, headers, f"w{k} w{k + 7} w{k + 11}")
            for k in range(count["cold"])
        ]
        result["cold"] = summary([elapsed for elapsed, _ in cold_runs])
        result["cold"]["phases"] = phase_summary([body["phases"] for _, body in cold_runs])
        await timed_navigate(client, cached_url + path, headers, "w1 w2")  # fills the cache
        warm = []
        for k in range(count["warm"]):
            elapsed, body = await timed_navigate(
                client, cached_url + path, headers, f"w{k % 997} w{(k * 13) % 991}"
            )
            if body["diagnostics"]["cache"] != "hit":
                raise RuntimeError(f"a warm request was a {body['diagnostics']['cache']}")
            warm.append(elapsed)
        result["warm"] = summary(warm)
        writes, states, phases, commits = [], [], [], []
        for k in range(count["write"]):
            new_id = uuid.uuid4()
            token = f"fresh{suffix}x{k}"
            written = time.perf_counter()
            async with owner_store.tenant(tenant) as tx:
                await tx.insert_rows(
                    corpus.documents,
                    [{"id": new_id, "tenant_id": "c1", "title": f"{token} note", "body": "w1"}],
                )
                await tx.insert_rows(
                    corpus.relations,
                    [
                        {
                            "from_id": new_id,
                            "to_id": new_id,
                            "etype": "cite",
                            "weight": 0.5,
                            "tenant_id": "c1",
                        }
                    ],
                )
            commits.append(time.perf_counter() - written)
            elapsed, body = await timed_navigate(client, cached_url + path, headers, token)
            if str(new_id) not in [hit["id"] for hit in body["hits"]]:
                raise RuntimeError("a navigation right after a write did not see the write")
            states.append(body["diagnostics"]["cache"])
            phases.append(body["phases"])
            writes.append(elapsed)
        result["write_then_navigate"] = summary(writes)
        result["write_then_navigate"]["refreshed"] = states.count("refresh")
        result["write_then_navigate"]["write_commit"] = summary(commits)
        result["write_then_navigate"]["phases"] = phase_summary(phases)
        retrieve_path = f"/v1/corpora/{corpus.name}/retrieve"
        result["retrieve"] = await retrieval(
            client, cached_url + retrieve_path, headers, reader, corpus, tenant, count["retrieve"]
        )
    result["naive"] = summary([await naive(reader, corpus, tenant) for _ in range(count["naive"])])
    result["cold_speedup_vs_naive"] = round(result["naive"]["p50_ms"] / result["cold"]["p50_ms"], 2)
    result["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    return result


async def cleanup(owner: asyncpg.Connection, made: list[tuple[StoreCorpus, uuid.UUID]]) -> None:
    for corpus, tenant in made:
        for store in (corpus.documents, corpus.relations):
            await owner.execute(f"DROP TABLE IF EXISTS {store_table(store.name)}")
        await owner.execute("DELETE FROM mnemo.corpora WHERE corpus_id = $1", corpus.name)
        async with owner.transaction():
            await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
            for table in ("outbox", "nav_outcomes", "graph_revisions"):
                await owner.execute(f"DELETE FROM mnemo.{table}")
        await owner.execute("DELETE FROM mnemo.tenants WHERE tenant_id = $1", tenant)


def table(results: Sequence[dict[str, Any]]) -> str:
    lines = [
        f"{'docs':>7} {'mode':<20} {'p50 ms':>9} {'p95 ms':>9} {'req/s':>8}",
    ]
    for result in results:
        for mode in ("cold", "warm", "write_then_navigate", "naive"):
            row = result[mode]
            lines.append(
                f"{result['documents']:>7} {mode:<20} {row['p50_ms']:>9.1f} {row['p95_ms']:>9.1f}"
                f" {row['rps']:>8.1f}"
            )
        lines.append(f"{'':>7} cold vs naive: {result['cold_speedup_vs_naive']:.1f}x faster")
        found = result["retrieve"]
        for mode in ("http", "column_sql", "expression_sql"):
            row = found[mode]
            lines.append(
                f"{result['documents']:>7} {'retrieve ' + mode:<20} {row['p50_ms']:>9.1f}"
                f" {row['p95_ms']:>9.1f} {row['rps']:>8.1f}"
            )
        lines.append(
            f"{'':>7} retrieve statement vs the expression baseline: {found['speedup']:.1f}x faster"
            f" (ts_match_vq leakproof: {found['ts_match_vq_leakproof']}, match an index"
            f" condition: {found['match_is_index_condition']})"
        )
        phases = result["cold"].get("phases", {})
        lines.append(
            f"{'':>7} cold phases (server, p50/p95 ms): "
            + ", ".join(f"{k} {v['p50_ms']:.1f}/{v['p95_ms']:.1f}" for k, v in phases.items())
        )
        phases = result["write_then_navigate"]["phases"]
        lines.append(
            f"{'':>7} write-then-navigate phases (server, p50/p95 ms): "
            + ", ".join(f"{k} {v['p50_ms']:.1f}/{v['p95_ms']:.1f}" for k, v in phases.items())
        )
        commit = result["write_then_navigate"]["write_commit"]
        lines.append(
            f"{'':>7} the write's commit (p50/p95 ms): {commit['p50_ms']:.1f}/{commit['p95_ms']:.1f};"
            f" load average {result['load_average_before'][0]} before,"
            f" {result['load_average_after'][0]} after"
        )
    return "\n".join(lines)


def mcp_table(result: dict[str, Any]) -> str:
    mcp = result["mcp"]
    return (
        f"{result['documents']:>7} docs, warm navigate: HTTP p50 {mcp['http']['p50_ms']:.1f} ms "
        f"p95 {mcp['http']['p95_ms']:.1f} ms; MCP (streamable HTTP) p50 {mcp['mcp']['p50_ms']:.1f} "
        f"ms p95 {mcp['mcp']['p95_ms']:.1f} ms; MCP adds {mcp['mcp_added_p95_ms']:.1f} ms at p95 "
        f"({mcp['mcp_over_http_p95']:.2f}x; target +10 ms), {mcp['mcp_added_p50_ms']:.1f} ms at p50 "
        f"(load average {result['load_average_before'][0]:.1f} -> "
        f"{result['load_average_after'][0]:.1f}); CPU per call, navigator: HTTP "
        f"{mcp['http']['navigator_cpu_ms']:.2f} ms, MCP {mcp['mcp']['navigator_cpu_ms']:.2f} ms; "
        f"client: HTTP {mcp['http']['client_cpu_ms']:.2f} ms, MCP {mcp['mcp']['client_cpu_ms']:.2f} ms"
    )


async def main(sizes: Sequence[int], mcp_only: bool = False) -> None:
    owner_dsn = os.environ.get("MNEMO_OWNER_DATABASE_URL", OWNER)
    reader_dsn = os.environ.get("MNEMO_NAVIGATOR_DATABASE_URL", NAVIGATOR)
    owner = await asyncpg.connect(owner_dsn)
    reader = await asyncpg.connect(reader_dsn)
    made: list[tuple[StoreCorpus, uuid.UUID]] = []
    logs = Path(tempfile.mkdtemp(prefix="navigate_bench_"))
    ports = free_port(), free_port()
    cached = start_navigator(ports[0], 2 * 1024**3, logs / "cached.log")
    cold = start_navigator(ports[1], 0, logs / "cold.log")
    results = []
    try:
        urls = [f"http://127.0.0.1:{port}" for port in ports]
        await wait_ready(urls[0], cached, logs / "cached.log")
        await wait_ready(urls[1], cold, logs / "cold.log")
        async with await Store.connect(owner_dsn, min_size=1, max_size=2) as owner_store:
            for n in sizes:
                results.append(
                    await run_size(
                        n,
                        owner,
                        owner_store,
                        reader,
                        urls[0],
                        urls[1],
                        made,
                        mcp_only=mcp_only,
                        navigator_pid=cached.pid,
                    )
                )
                if mcp_only:
                    print(mcp_table(results[-1]), flush=True)
                else:
                    print(table(results[-1:]), flush=True)
    finally:
        for process in (cached, cold):
            process.terminate()
            process.wait(timeout=30)
        await cleanup(owner, made)
        await owner.close()
        await reader.close()
    if mcp_only:
        MCP_RESULTS.parent.mkdir(parents=True, exist_ok=True)
        MCP_RESULTS.write_text(
            json.dumps({"benchmark": "navigate_bench --mcp", "results": results}, indent=2) + "\n"
        )
        print(f"wrote {MCP_RESULTS.relative_to(ROOT)}")
        return
    by_size = {r["documents"]: r for r in results}
    verdict: dict[str, Any] = {}
    if 10_000 in by_size:
        verdict["warm_p95_ms_at_10k"] = by_size[10_000]["warm"]["p95_ms"]
    if 100_000 in by_size:
        verdict["cold_speedup_at_100k"] = by_size[100_000]["cold_speedup_vs_naive"]
        verdict["write_p95_ms_at_100k"] = by_size[100_000]["write_then_navigate"]["p95_ms"]
    print("\n" + table(results))
    print("targets:", json.dumps(TARGETS), "measured:", json.dumps(verdict))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "benchmark": "navigate_bench",
                "cpus": os.cpu_count(),
                "edges_per_document": EDGES_PER_DOCUMENT,
                "targets": TARGETS,
                "measured": verdict,
                "results": results,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"wrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--mcp", action="store_true", help="only MCP against HTTP, warm")
    arguments = parser.parse_args()
    asyncio.run(main(arguments.sizes, mcp_only=arguments.mcp))
