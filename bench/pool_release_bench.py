"""What a pooled connection's release costs: asyncpg's default reset against `keep_session`.

asyncpg resets a connection on every release with one more round trip (`SELECT
pg_advisory_unlock_all(); CLOSE ALL; UNLISTEN *; RESET ALL`); Mnemo's pools skip it
(`mnemo_store.pools`: it keeps no session state). Each round of this benchmark runs, on each of the
two pools in turn, `--workers` concurrent callers doing the navigator's smallest tenant
transaction (enter the tenant read only, read the corpus's revision, commit) until `--transactions`
are done, and measures the wall time and this process's CPU time per transaction. Ratios are of
the medians over the rounds, in one run. Needs Postgres (`make up`): the application role
(`MNEMO_DATABASE_URL`, the local stack's default otherwise). Prints a table and writes
bench/results/pool_release_bench.json.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

import asyncpg
from mnemo_store import Store
from mnemo_store.pools import open_pool
from results_file import write_results

RESULTS = Path(__file__).parent / "results" / "pool_release_bench.json"


def local_app_dsn() -> str:
    port = os.environ.get("MNEMO_PG_PORT", "25432")
    default = f"postgresql://mnemo_app:mnemo_app@127.0.0.1:{port}/mnemo"
    return os.environ.get("MNEMO_DATABASE_URL", default)


async def timed(store: Store, transactions: int, workers: int) -> tuple[float, float]:
    """Seconds of wall time and of this process's CPU per transaction."""
    tenant = uuid.uuid4()  # no rows needed: the revision of an unknown corpus is 0
    left = transactions

    async def worker() -> None:
        nonlocal left
        while left > 0:
            left -= 1
            async with store.tenant(tenant, read_only=True) as tx:
                await tx.graph_revision("pool-release-bench")

    wall, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(worker() for _ in range(workers)))
    return (time.perf_counter() - wall) / transactions, (time.process_time() - cpu) / transactions


async def main(args: argparse.Namespace) -> int:
    dsn = local_app_dsn()
    load_before = os.getloadavg()
    size = args.workers
    try:
        pools = {
            "asyncpg reset": await asyncpg.create_pool(dsn, min_size=size, max_size=size),
            "keep_session": await open_pool(dsn, min_size=size, max_size=size),
        }
    except (OSError, asyncpg.PostgresError) as error:
        print(f"cannot reach Postgres ({error}); start it with `make up`", file=sys.stderr)
        return 2
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in pools}
    try:
        stores = {name: Store(pool) for name, pool in pools.items()}
        for store in stores.values():  # warm: connections made, statements prepared
            await timed(store, args.workers * 10, args.workers)
        for round_number in range(args.rounds):
            for name, store in stores.items():
                samples[name].append(await timed(store, args.transactions, args.workers))
            print(f"round {round_number + 1}/{args.rounds} done", file=sys.stderr)
    finally:
        for pool in pools.values():
            await pool.close()
    results = [
        {
            "pool": name,
            "wall_us": round(1e6 * statistics.median(w for w, _ in runs), 1),
            "cpu_us": round(1e6 * statistics.median(c for _, c in runs), 1),
            "transactions": args.transactions,
            "workers": args.workers,
            "rounds": args.rounds,
        }
        for name, runs in samples.items()
    ]
    print(f"{'pool':<15} {'wall µs/tx':>11} {'client CPU µs/tx':>17}")
    for row in results:
        print(f"{row['pool']:<15} {row['wall_us']:>11} {row['cpu_us']:>17}")
    base, kept = results
    print(
        f"keep_session / asyncpg reset: wall {kept['wall_us'] / base['wall_us']:.2f},"
        f" client CPU {kept['cpu_us'] / base['cpu_us']:.2f}"
    )
    write_results(RESULTS, "pool_release_bench", load_before, results)
    return 0


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--transactions", type=int, default=2_000, help="per pool per round")
    parser.add_argument("--workers", type=int, default=8, help="concurrent callers (pool size)")
    parser.add_argument("--rounds", type=int, default=5)
    return parser.parse_args(argv)


if __name__ == "__main__":
    sys.exit(asyncio.run(main(parse())))
