"""What a navigation pays for its scope's memory: the last 1,000 outcomes read whole, against those
kept from the scope's last navigation plus the ones read since (`mnemo_navigator.histories`).

Every navigation of an adaptive corpus takes the procedural bias from its scope's last `horizon`
(1,000) outcomes. The baseline reads them whole each time, with their paths, and makes them into
`Outcome`s; the navigator now keeps them per scope and reads only from the last one kept on. Per
round: one more outcome is remembered (as a navigation's memory write does, untimed), then each
way reads the scope's outcomes in a read-only transaction of its own (the corpus's marks, then the
outcomes: what the navigator's read transaction does for them), in alternating order. Both must
give the same outcomes (checked every round). Printed: wall time and this process's CPU time per
read (medians), their ratios, and the memory one scope's kept outcomes hold (tracemalloc). Writes
bench/results/outcome_history_bench.json. Needs the local stack's Postgres (`make up`); runs as the
owner (declaring) and the navigator role (remembering, reading).

    python bench/outcome_history_bench.py [--rounds 300] [--path-length 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
import tracemalloc
import uuid
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import asyncpg
from mnemo_axon.compiler import load_deployment
from mnemo_mdn import DEFAULT_PARAMS
from mnemo_mdn.memory import Outcome
from mnemo_navigator.histories import ScopeHistories
from mnemo_store import Store, StoreCorpus
from mnemo_store.applier import apply_deployment
from mnemo_store.erasure import erase_tenant
from mnemo_store.identifiers import store_table
from mnemo_store.outcomes import NewOutcome, StoredOutcome
from results_file import write_results

LOCAL = "postgresql://{0}:{0}@127.0.0.1:25432/mnemo"
RESULTS = Path(__file__).parent / "results" / "outcome_history_bench.json"
HORIZON = DEFAULT_PARAMS.horizon
SCOPE = "bench-scope"
DECLARATIONS = """
axonstore HistDocs_{s} {{
    backend: postgresql
    schema {{ id: Text primary_key  title: Text not_null  body: Text }}
}}
axonstore HistEdges_{s} {{
    backend: postgresql
    schema {{ from_id: Text not_null  to_id: Text not_null  etype: Text not_null  weight: Float not_null }}
}}
corpus HistGraph_{s} from axonstore {{
    documents: HistDocs_{s}(id, title, body)
    relations: HistEdges_{s}(from_id, to_id, etype, weight)
    adaptive: true
}}
"""


def outcomes(stored: Sequence[StoredOutcome]) -> list[Outcome]:
    return [Outcome(o.path, o.score, o.sequence) for o in stored]


async def remember(store: Store, tenant: uuid.UUID, corpus: str, count: int, length: int) -> None:
    """`count` more outcomes of the scope, as navigations' memory writes record them."""
    async with store.tenant(tenant) as tx:
        await tx.serialise_memory(corpus, SCOPE)
        last = (await tx.recent_scores(corpus, SCOPE, 1)).last_sequence
        await tx.record_outcomes(
            corpus,
            SCOPE,
            [
                NewOutcome(
                    last + k,
                    "query",
                    tuple(str(uuid.uuid4()) for _ in range(length)),
                    [],
                    (last + k) % 97 / 97,
                )
                for k in range(1, count + 1)
            ],
        )


async def timed(
    read: Callable[[], Awaitable[tuple[Outcome, ...]]],
) -> tuple[float, float, tuple[Outcome, ...]]:
    wall, cpu = time.perf_counter(), time.process_time()
    found = await read()
    return time.perf_counter() - wall, time.process_time() - cpu, found


async def run(
    store: Store, tenant: uuid.UUID, corpus: str, rounds: int, length: int
) -> dict[str, object]:
    histories = ScopeHistories(HORIZON)

    async def whole() -> tuple[Outcome, ...]:
        async with store.tenant(tenant, read_only=True) as tx:
            await tx.graph_marks(corpus)
            return tuple(outcomes(await tx.recent_outcomes(corpus, SCOPE, HORIZON)))

    async def kept() -> tuple[Outcome, ...]:
        async with store.tenant(tenant, read_only=True) as tx:
            _, reset = await tx.graph_marks(corpus)

            async def read(since: int) -> list[Outcome]:
                return outcomes(await tx.recent_outcomes(corpus, SCOPE, HORIZON, since=since))

            return await histories.last_outcomes(SCOPE, reset, read)

    samples: dict[str, list[tuple[float, float]]] = {"read whole": [], "kept + since": []}
    await kept()  # the first navigation of the scope reads it whole
    for round_number in range(rounds):
        await remember(store, tenant, corpus, 1, length)
        ways = [("read whole", whole), ("kept + since", kept)]
        if round_number % 2:
            ways.reverse()
        found = {}
        for name, read in ways:
            wall, cpu, found[name] = await timed(read)
            samples[name].append((wall, cpu))
        if found["read whole"] != found["kept + since"]:
            raise SystemExit(f"round {round_number}: the two ways read different outcomes")
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    held = await whole()
    grown = sum(s.size_diff for s in tracemalloc.take_snapshot().compare_to(before, "filename"))
    tracemalloc.stop()
    return {
        "rows": [
            {
                "way": name,
                "wall_ms": round(1000 * statistics.median(w for w, _ in runs), 3),
                "cpu_ms": round(1000 * statistics.median(c for _, c in runs), 3),
            }
            for name, runs in samples.items()
        ],
        "outcomes": len(held),
        "bytes_per_outcome": round(grown / max(1, len(held))),
    }


async def main(args: argparse.Namespace) -> int:
    load_before = os.getloadavg()
    try:
        owner = await asyncpg.connect(
            os.environ.get("MNEMO_OWNER_DATABASE_URL", LOCAL.format("mnemo_owner"))
        )
    except (OSError, asyncpg.PostgresError) as error:
        print(f"cannot reach Postgres ({error}); start it with `make up`", file=sys.stderr)
        return 2
    suffix = uuid.uuid4().hex[:8]
    deployment = load_deployment(DECLARATIONS.format(s=suffix), "bench.axon")
    await apply_deployment(owner, deployment, gateway_base_url="http://127.0.0.1:8080")
    corpus = StoreCorpus.from_deployment(deployment, f"HistGraph_{suffix}").name
    tenant: uuid.UUID = await owner.fetchval(
        "INSERT INTO mnemo.tenants (name) VALUES ($1) RETURNING tenant_id",
        f"bench-history-{suffix}",
    )
    try:
        navigator_dsn = os.environ.get(
            "MNEMO_NAVIGATOR_DATABASE_URL", LOCAL.format("mnemo_navigator")
        )
        async with await Store.connect(navigator_dsn, max_size=2) as store:
            await remember(store, tenant, corpus, HORIZON, args.path_length)
            measured = await run(store, tenant, corpus, args.rounds, args.path_length)
    finally:
        await erase_tenant(owner, tenant)
        for store_decl in deployment.stores:
            await owner.execute(f"DROP TABLE IF EXISTS {store_table(store_decl.name)}")
        await owner.execute("DELETE FROM mnemo.corpora WHERE corpus_id = $1", corpus)
        await owner.close()
    rows = measured["rows"]
    assert isinstance(rows, list)
    print(
        f"{args.rounds} rounds, {HORIZON} outcomes of {args.path_length} ids each, one more a round"
    )
    print(f"{'way':<14} {'wall ms':>9} {'client CPU ms':>14}")
    for row in rows:
        print(f"{row['way']:<14} {row['wall_ms']:>9} {row['cpu_ms']:>14}")
    base, kept = rows
    print(
        f"kept + since / read whole: wall {kept['wall_ms'] / base['wall_ms']:.2f},"
        f" client CPU {kept['cpu_ms'] / base['cpu_ms']:.2f};"
        f" one scope's {measured['outcomes']} outcomes hold about"
        f" {measured['bytes_per_outcome']} bytes each"
    )
    write_results(RESULTS, "outcome_history_bench", load_before, [measured])
    return 0


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--path-length", type=int, default=5, help="document ids per outcome path")
    return parser.parse_args(argv)


if __name__ == "__main__":
    sys.exit(asyncio.run(main(parse())))
