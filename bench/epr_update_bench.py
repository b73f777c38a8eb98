"""EPR after a refresh: updated by residual push (`mnemo_mdn.epr_update`) against the warm start it
replaces, side by side in one process (issue 29).

A graph of `n` documents with 5 edges each (all relation types, weights in [0.05, 1]): `--graph
random` (the default) as `bench/navigate_bench.py` seeds it, or `--graph local` (edges to
documents at most 10 positions away, one in 200 anywhere: topics, where a change spreads over a
neighbourhood first); then `--writes` refreshes, each adding documents, of three kinds: `self`
(the navigate bench's write: a document citing itself), `cites` (a document citing two neighbouring
documents and cited by a third: its residual reaches the graph) and `batch` (ten such documents at
once: what a navigation sees under the load test's 100 writes/s and 10 navigations/s, issue 22).
Each refresh is one
`carry_over`, then EPR twice on two copies of the successor: once as the navigator computes it
(update, or the warm start when the update gives up) and once by the warm start alone (the previous
code), alternating which goes first, so that the machine's load falls on both alike. Every result
is checked against a cold run within 1e-9. Prints a table, writes bench/results/epr_update_bench.json.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
from mnemo_mdn import CorpusGraph, epr
from mnemo_mdn.incremental import GraphChange, carry_over
from mnemo_mdn.params import DEFAULT_PARAMS
from mnemo_mdn.relations import RELATION_TYPES
from mnemo_mdn.signed_pagerank import (
    WARM_START_PREFIX,
    EprResult,
    _compute,
    _warm_start,
    epr_key,
)
from results_file import write_results

RESULTS = Path(__file__).parent / "results" / "epr_update_bench.json"
EDGES_PER_DOCUMENT = 5
BATCH = 10  # documents per refresh of the `batch` kind
NEIGHBOURHOOD = 10  # a `local` graph's edges reach this many positions either way
LONG_RANGE = 200  # one `local` edge in this many goes anywhere


def random_graph(
    n: int, seed: int, shape: str = "random"
) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """`random`: each document's edges go anywhere (a change reaches the whole graph in a few
    hops). `local`: to documents at most `NEIGHBOURHOOD` positions away, one edge in
    `LONG_RANGE` anywhere (topics, as a classifier's shared-key links make them: a change spreads
    over its neighbourhood first, and leaks out slowly)."""
    rng = np.random.default_rng(seed)
    ids = [f"n{k:08d}" for k in range(n)]
    m = EDGES_PER_DOCUMENT * n
    source = np.repeat(np.arange(n), EDGES_PER_DOCUMENT)
    if shape == "random":
        target = rng.integers(0, n, m)
    else:
        offset = rng.integers(1, NEIGHBOURHOOD + 1, m) * rng.choice((-1, 1), m)
        target = (source + offset) % n
        far = rng.random(m) < 1.0 / LONG_RANGE
        target[far] = rng.integers(0, n, int(far.sum()))
    return (
        ids,
        source,
        target,
        rng.integers(0, len(RELATION_TYPES), m),
        0.05 + 0.95 * rng.random(m),
    )


def build(ids: list[str], source: Any, target: Any, codes: Any, weights: Any) -> CorpusGraph:
    return CorpusGraph.from_arrays(
        ids,
        ids,
        edge_source=source,
        edge_target=target,
        edge_type=codes,
        edge_weight=weights,
        order="declared",
    )


def timed(compute: Any) -> tuple[float, EprResult]:
    started = time.perf_counter()
    result = compute()
    return (time.perf_counter() - started) * 1000, result


def summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"p50_ms": round(statistics.median(ordered), 2), "p95_ms": round(p95, 2)}


def run(n: int, kind: str, writes: int, seed: int, shape: str) -> dict[str, Any]:
    ids, source, target, codes, weights = random_graph(n, seed, shape)
    rng = np.random.default_rng(seed + 1)
    graph = build(ids, source, target, codes, weights)
    epr(graph)
    key = epr_key(DEFAULT_PARAMS)
    updated_ms, warm_ms, worst = [], [], 0.0
    first_ms = 0.0
    for k in range(writes + 1):
        first = len(ids)
        extra: tuple[list[int], list[int], list[int], list[float]] = ([], [], [], [])
        for new in range(first, first + (BATCH if kind == "batch" else 1)):
            ids = [*ids, f"n{new:08d}"]
            if kind == "self":
                extra[0].append(new)
                extra[1].append(new)
                extra[2].append(0)
                extra[3].append(0.5)
            else:
                a = int(rng.integers(0, new))
                b, c = (a + 1) % new, (a + 2) % new  # neighbours, on a local graph
                extra[0].extend((new, new, c))
                extra[1].extend((a, b, new))
                extra[2].extend((0, 1, 0))
                extra[3].extend((0.5, 0.7, 0.6))
        source = np.concatenate((source, extra[0]))
        target = np.concatenate((target, extra[1]))
        codes = np.concatenate((codes, extra[2]))
        weights = np.concatenate((weights, extra[3]))
        moved = np.arange(first, dtype=np.int64)
        change = GraphChange(moved, np.arange(first, len(ids), dtype=np.int64))
        successor = carry_over(graph, build(ids, source, target, codes, weights), change)
        baseline = carry_over(graph, build(ids, source, target, codes, weights), change)
        assert baseline.memoised(WARM_START_PREFIX + key) is not None

        def warm_only(g: CorpusGraph = baseline) -> EprResult:
            return _compute(g, DEFAULT_PARAMS, _warm_start(g, key))

        def navigator(g: CorpusGraph = successor) -> EprResult:
            return epr(g)

        if k % 2:
            warm_time, _ = timed(warm_only)
            update_time, result = timed(navigator)
        else:
            update_time, result = timed(navigator)
            warm_time, _ = timed(warm_only)
        cold = epr(build(ids, source, target, codes, weights))
        worst = max(worst, float(np.abs(result.epr - cold.epr).max()))
        assert worst <= 1e-9, worst
        if k == 0:
            first_ms = update_time  # the states are solved from the old EPR here
        else:
            updated_ms.append(update_time)
            warm_ms.append(warm_time)
        graph = successor
    return {
        "documents": n,
        "graph": shape,
        "write": kind,
        "writes": writes,
        "first_refresh_ms": round(first_ms, 1),
        "updated": summary(updated_ms),
        "warm_start": summary(warm_ms),
        "speedup_p50": round(statistics.median(warm_ms) / statistics.median(updated_ms), 1),
        "max_abs_vs_cold": worst,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--writes", type=int, default=20)
    parser.add_argument("--graph", choices=("random", "local"), default="random")
    arguments = parser.parse_args()
    results = []
    load_before = os.getloadavg()
    print(f"{'docs':>8} {'write':>6} {'updated p50/p95':>16} {'warm p50/p95':>16}  first  speedup")
    for n in arguments.sizes:
        for kind in ("self", "cites", "batch"):
            r = run(n, kind, arguments.writes, seed=n, shape=arguments.graph)
            results.append(r)
            u, w = r["updated"], r["warm_start"]
            print(
                f"{n:>8} {kind:>6} {u['p50_ms']:>7.1f}/{u['p95_ms']:<8.1f} "
                f"{w['p50_ms']:>7.1f}/{w['p95_ms']:<8.1f} {r['first_refresh_ms']:>6.0f}"
                f"  {r['speedup_p50']}x",
                flush=True,
            )
    write_results(RESULTS, "epr_update_bench", load_before, results)


if __name__ == "__main__":
    main()
