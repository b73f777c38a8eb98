"""What a navigation's memory write costs the corpus's writers: ingest's commit latency while
adaptive navigations remember, with the navigator's lock order and with the order before it.

A navigation of an adaptive corpus reads its scope's recent outcomes, records its own, queues its
audit event and reinforces the edges it followed, in one transaction. Each step is a round trip,
and between two of them the navigator's event loop must get back to this navigation: under load
(dozens of navigations, walks holding the GIL) that wait is what a lock held across the
transaction is held for. Two orders, side by side in one run, over the same tenant and corpus:

- `revision first` (the baseline, the navigator's order until issue 22's load test showed ingest
  queued behind it): the corpus's revision row locked first, held through every step;
- `scope lock` (`mnemo_navigator.use_cases`, through the store's own methods): the scope's
  advisory lock over the read and the record, the revision row taken only by the reinforcement,
  the last statement.

Per order: `--navigators` concurrent navigations, each waiting `--wakeup-ms` after every round
trip (the event loop's delay, the one thing varied by hand), and one writer committing a document
and its edge (two statements, as ingest does) back to back for `--seconds`. Printed: the writer's
commit latency (p50, p95, max) and commits per second, the navigations per second, and the
ratios of the scope lock to the baseline. Writes bench/results/memory_lock_bench.json. Needs the
local stack's Postgres (`make up`); runs as the owner (declaring), the application role (writing)
and the navigator role (remembering).

    python bench/memory_lock_bench.py [--navigators 16] [--wakeup-ms 20] [--seconds 20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

import asyncpg
from mnemo_axon.compiler import load_deployment
from mnemo_mdn import DEFAULT_PARAMS
from mnemo_store import EdgeDelta, Store, StoreCorpus, TenantTransaction
from mnemo_store.applier import apply_deployment
from mnemo_store.erasure import erase_tenant
from mnemo_store.identifiers import store_table

LOCAL = "postgresql://{0}:{0}@127.0.0.1:25432/mnemo"
RESULTS = Path(__file__).parent / "results" / "memory_lock_bench.json"
DECLARATIONS = """
axonstore LockDocs_{s} {{
    backend: postgresql
    schema {{ id: Text primary_key  title: Text not_null  body: Text }}
}}
axonstore LockEdges_{s} {{
    backend: postgresql
    schema {{ from_id: Text not_null  to_id: Text not_null  etype: Text not_null  weight: Float not_null }}
}}
corpus LockGraph_{s} from axonstore {{
    documents: LockDocs_{s}(id, title, body)
    relations: LockEdges_{s}(from_id, to_id, etype, weight)
    adaptive: true
}}
"""
SEED = 200  # documents, each with an edge to the next
LOCK_REVISION = "SELECT revision FROM mnemo.graph_revisions WHERE corpus_id = $1 FOR UPDATE"


async def remember(
    tx: TenantTransaction, corpus: StoreCorpus, scope: str, step: int, wakeup: float, *, old: bool
) -> None:
    """One navigation's memory transaction, in the old or the new order. `wakeup` seconds pass
    after each round trip, as the navigator's busy event loop takes them."""

    async def woken() -> None:
        await asyncio.sleep(wakeup)  # the modelled event-loop delay, not synchronisation

    if old:
        # The baseline's first statement (the store's method that took it is gone).
        await tx._open().fetchval(LOCK_REVISION, corpus.name)
    else:
        await tx.serialise_memory(corpus.name, scope)
    await woken()
    recent = await tx.recent_outcomes(corpus.name, scope, DEFAULT_PARAMS.horizon - 1)
    await woken()
    sequence = (recent[-1].sequence if recent else 0) + 1
    await tx.record_outcome(corpus.name, scope, sequence, "q", ["d0", "d1"], [], 0.5)
    await woken()
    source = step % SEED
    delta = 0.001 if step % 2 else -0.001
    await tx.reinforce(corpus, [EdgeDelta(f"d{source}", f"d{(source + 1) % SEED}", "cite", delta)])
    await woken()
    await tx.graph_revision(corpus.name)
    await woken()


@dataclass(frozen=True)
class OrderResult:
    order: str
    commits: int
    p50_ms: float
    p95_ms: float
    max_ms: float
    commits_per_s: float
    navigations_per_s: float


async def run_order(
    writer: Store,
    navigator: Store,
    corpus: StoreCorpus,
    tenant: uuid.UUID,
    *,
    old: bool,
    navigators: int,
    wakeup: float,
    seconds: float,
) -> OrderResult:
    stop = time.perf_counter() + seconds
    commits: list[float] = []
    navigations = 0

    async def navigate(worker: int) -> None:
        nonlocal navigations
        step = worker
        while time.perf_counter() < stop:
            async with navigator.tenant(tenant) as tx:
                await remember(tx, corpus, f"scope{worker % 4}", step, wakeup, old=old)
            navigations += 1
            step += navigators

    async def write() -> None:
        n = 0
        while time.perf_counter() < stop:
            doc = f"w{'old' if old else 'new'}{n}"
            began = time.perf_counter()
            async with writer.tenant(tenant) as tx:
                await tx.insert_rows(corpus.documents, [{"id": doc, "title": doc, "body": None}])
                await tx.insert_rows(
                    corpus.relations,
                    [{"from_id": doc, "to_id": "d0", "etype": "cite", "weight": 0.5}],
                )
            commits.append(time.perf_counter() - began)
            n += 1

    began = time.perf_counter()
    await asyncio.gather(write(), *(navigate(i) for i in range(navigators)))
    elapsed = time.perf_counter() - began
    ordered = sorted(commits) or [0.0]
    return OrderResult(
        order="revision first" if old else "scope lock",
        commits=len(commits),
        p50_ms=round(statistics.median(ordered) * 1000, 1),
        p95_ms=round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] * 1000, 1),
        max_ms=round(ordered[-1] * 1000, 1),
        commits_per_s=round(len(commits) / elapsed, 1),
        navigations_per_s=round(navigations / elapsed, 1),
    )


async def seed(store: Store, corpus: StoreCorpus, tenant: uuid.UUID) -> None:
    async with store.tenant(tenant) as tx:
        await tx.insert_rows(
            corpus.documents,
            [{"id": f"d{i}", "title": f"note {i}", "body": None} for i in range(SEED)],
        )
        await tx.insert_rows(
            corpus.relations,
            [
                {"from_id": f"d{i}", "to_id": f"d{(i + 1) % SEED}", "etype": "cite", "weight": 0.5}
                for i in range(SEED)
            ],
        )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--navigators", type=int, default=16)
    parser.add_argument("--wakeup-ms", type=float, default=20.0)
    parser.add_argument("--seconds", type=float, default=20.0)
    args = parser.parse_args()
    owner = await asyncpg.connect(
        os.environ.get("MNEMO_OWNER_DATABASE_URL", LOCAL.format("mnemo_owner"))
    )
    suffix = uuid.uuid4().hex[:8]
    deployment = load_deployment(DECLARATIONS.format(s=suffix), "bench.axon")
    await apply_deployment(owner, deployment, gateway_base_url="http://127.0.0.1:8080")
    corpus = StoreCorpus.from_deployment(deployment, f"LockGraph_{suffix}")
    made: list[uuid.UUID] = []
    results: list[OrderResult] = []
    try:
        async with (
            await Store.connect(
                os.environ.get("MNEMO_DATABASE_URL", LOCAL.format("mnemo_app")), max_size=2
            ) as writer,
            await Store.connect(
                os.environ.get("MNEMO_NAVIGATOR_DATABASE_URL", LOCAL.format("mnemo_navigator")),
                max_size=args.navigators,
            ) as navigator,
        ):
            for old in (True, False):
                tenant: uuid.UUID = await owner.fetchval(
                    "INSERT INTO mnemo.tenants (name) VALUES ($1) RETURNING tenant_id",
                    f"bench-lock-{suffix}-{'old' if old else 'new'}",
                )
                made.append(tenant)
                await seed(writer, corpus, tenant)
                print(f"running {'revision first' if old else 'scope lock'} ...", flush=True)
                results.append(
                    await run_order(
                        writer,
                        navigator,
                        corpus,
                        tenant,
                        old=old,
                        navigators=args.navigators,
                        wakeup=args.wakeup_ms / 1000,
                        seconds=args.seconds,
                    )
                )
    finally:
        for tenant in made:
            await erase_tenant(owner, tenant)
        for store_decl in deployment.stores:
            await owner.execute(f"DROP TABLE IF EXISTS {store_table(store_decl.name)}")
        await owner.execute("DELETE FROM mnemo.corpora WHERE corpus_id = $1", corpus.name)
        await owner.close()
    print(
        f"\n{args.navigators} navigations at once, {args.wakeup_ms:g} ms per wake-up, "
        f"{args.seconds:g} s per order\n"
    )
    print(
        f"{'order':<16} {'commits':>8} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} {'commits/s':>10} {'navs/s':>8}"
    )
    for r in results:
        print(
            f"{r.order:<16} {r.commits:>8} {r.p50_ms:>8} {r.p95_ms:>8} {r.max_ms:>8}"
            f" {r.commits_per_s:>10} {r.navigations_per_s:>8}"
        )
    old_r, new_r = results
    ratios = {
        "writer_p50": _ratio(new_r.p50_ms, old_r.p50_ms),
        "writer_p95": _ratio(new_r.p95_ms, old_r.p95_ms),
        "commits_per_s": _ratio(new_r.commits_per_s, old_r.commits_per_s),
        "navigations_per_s": _ratio(new_r.navigations_per_s, old_r.navigations_per_s),
    }
    print("\nscope lock / revision first: " + ", ".join(f"{k} {v}" for k, v in ratios.items()))
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "python": platform.python_version(),
                "load_average": os.getloadavg(),
                "navigators": args.navigators,
                "wakeup_ms": args.wakeup_ms,
                "seconds": args.seconds,
                "runs": [asdict(r) for r in results],
                "ratios": ratios,
            },
            indent=2,
        )
    )


def _ratio(new: float, old: float) -> float:
    return round(new / max(old, 1e-9), 3)


if __name__ == "__main__":
    asyncio.run(main())
