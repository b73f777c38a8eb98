"""A new graph's edge lists: looked up by scanning first (`mnemo_mdn.frontier.EdgeLookup`) against
grouping every edge at the first lookup (what each graph did before), side by side in one process.

Every refresh (a write, then a navigation) makes a new graph, and a navigation asks for the edges
of the documents it selects: outgoing edges for the frontier, distrust edges for each hit's
`contradicts`. A graph of `n` documents with 5 edges each to random documents (all relation types,
as `bench/navigate_bench.py` seeds it); per size and per count of lookups (`--lookups`: a
navigation of budget 5 asks five of each list; a graph navigated on and on, hundreds), `--trials` rounds
each time both ways on the same edge columns, alternating which goes first: the grouped lists
built then asked, and the lookup asked. Times are the median ms of all of it (build included).
Prints a table with the ratios and writes bench/results/edge_lookup_bench.json.

    python bench/edge_lookup_bench.py [--sizes 10000 100000 1000000] [--lookups 5 10 50 200]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
from mnemo_mdn.frontier import EdgeLookup, _grouped
from results_file import write_results

RESULTS = Path(__file__).parent / "results" / "edge_lookup_bench.json"
EDGES_PER_DOCUMENT = 5


def grouped_first(keys: np.ndarray, n: int, asked: np.ndarray) -> float:
    started = time.perf_counter()
    lists = _grouped(keys, np.arange(len(keys), dtype=np.int64), n)
    for document in asked:
        lists.of(int(document))
    return (time.perf_counter() - started) * 1000


def scanned_first(keys: np.ndarray, n: int, asked: np.ndarray) -> float:
    started = time.perf_counter()
    lookup = EdgeLookup(keys, None, n)
    for document in asked:
        lookup.of(int(document))
    return (time.perf_counter() - started) * 1000


def run(n: int, lookups: int, trials: int, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    sources = np.repeat(np.arange(n, dtype=np.int64), EDGES_PER_DOCUMENT)
    targets = rng.integers(0, n, EDGES_PER_DOCUMENT * n)
    times: dict[str, list[float]] = {"grouped": [], "lookup": []}
    for trial in range(trials):
        asked = rng.integers(0, n, lookups)
        for keys in (sources, targets):  # outgoing lists, and incoming ones (direction "both")
            a = EdgeLookup(keys, None, n)
            b = _grouped(keys, np.arange(len(keys), dtype=np.int64), n)
            assert all(a.of(int(k)).tolist() == b.of(int(k)).tolist() for k in asked[:20])
        order = ("grouped", "lookup") if trial % 2 else ("lookup", "grouped")
        for name in order:
            measure = grouped_first if name == "grouped" else scanned_first
            times[name].append(measure(targets, n, asked))
    grouped = statistics.median(times["grouped"])
    lookup = statistics.median(times["lookup"])
    return {
        "documents": n,
        "edges": EDGES_PER_DOCUMENT * n,
        "lookups": lookups,
        "trials": trials,
        "grouped_ms": round(grouped, 2),
        "lookup_ms": round(lookup, 2),
        "ratio": round(grouped / lookup, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--lookups", type=int, nargs="+", default=[5, 10, 50, 200])
    parser.add_argument("--trials", type=int, default=7)
    arguments = parser.parse_args()
    load_before = os.getloadavg()
    print(f"{'docs':>8} {'lookups':>8} {'grouped ms':>11} {'lookup ms':>10} {'ratio':>7}")
    results = []
    for n in arguments.sizes:
        for lookups in arguments.lookups:
            r = run(n, lookups, arguments.trials, seed=n + lookups)
            results.append(r)
            print(
                f"{n:>8} {lookups:>8} {r['grouped_ms']:>11.2f} {r['lookup_ms']:>10.2f}"
                f" {r['ratio']:>6}x",
                flush=True,
            )
    write_results(RESULTS, "edge_lookup_bench", load_before, results)


if __name__ == "__main__":
    main()
