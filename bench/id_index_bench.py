"""A refreshed graph's id index: searched in the sorted ids (`mnemo_mdn.graph.AscendingIndex`)
against a dict of every id (what each graph built before), side by side in one process.

A store graph's ids arrive sorted, and every refresh (a write, then a navigation) makes a new
graph. An adaptive corpus's navigation looks up the documents of its scope's remembered paths
(`memory.bias_vector`: up to `horizon` = 1,000 outcomes of 5 documents) and its seed. Per size,
`--trials` fresh graphs of uuid ids (sorted), each asked for the same `--lookups` ids twice: the
first navigation after the refresh, then a second on the same graph. Times: the index's first use
(building the dict or nothing, then the lookups) and the second navigation's lookups; the
baseline and the new index alternate first. Prints a table with the ratios and writes
bench/results/id_index_bench.json.

    python bench/id_index_bench.py [--sizes 100000 1000000] [--lookups 5000] [--trials 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
from mnemo_mdn.graph import AscendingIndex
from results_file import write_results

RESULTS = Path(__file__).parent / "results" / "id_index_bench.json"


def every_id(ids: tuple[str, ...]) -> Mapping[str, int]:
    return {doc_id: k for k, doc_id in enumerate(ids)}


def navigations(
    make: Callable[[tuple[str, ...]], Mapping[str, int]],
    ids: tuple[str, ...],
    wanted: list[str],
) -> tuple[float, float]:
    """(first navigation ms: index made and the lookups, second navigation's lookups ms)."""
    started = time.perf_counter()
    index = make(ids)
    first = [index.get(doc_id) for doc_id in wanted]
    between = time.perf_counter()
    second = [index.get(doc_id) for doc_id in wanted]
    ended = time.perf_counter()
    assert first == second
    assert None not in first
    return (between - started) * 1000, (ended - between) * 1000


def run(n: int, lookups: int, trials: int, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    ids = tuple(sorted(str(uuid.UUID(int=int(x))) for x in rng.integers(0, 2**63 - 1, n)))
    wanted = [ids[int(k)] for k in rng.integers(0, n, lookups)]
    timings: dict[str, list[tuple[float, float]]] = {"dict": [], "searched": []}
    for trial in range(trials):
        order = ("dict", "searched") if trial % 2 else ("searched", "dict")
        for name in order:
            make = every_id if name == "dict" else AscendingIndex
            timings[name].append(navigations(make, ids, wanted))
    result: dict[str, Any] = {"documents": n, "lookups": lookups, "trials": trials}
    for name, pairs in timings.items():
        result[name] = {
            "first_ms": round(statistics.median(p[0] for p in pairs), 2),
            "second_ms": round(statistics.median(p[1] for p in pairs), 2),
        }
    result["first_ratio"] = round(result["dict"]["first_ms"] / result["searched"]["first_ms"], 1)
    result["second_ratio"] = round(result["dict"]["second_ms"] / result["searched"]["second_ms"], 2)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--lookups", type=int, default=5_000)
    parser.add_argument("--trials", type=int, default=5)
    arguments = parser.parse_args()
    load_before = os.getloadavg()
    print(
        f"{'docs':>8} {'dict first':>11} {'searched first':>15} {'ratio':>6}"
        f" {'dict second':>12} {'searched second':>16} {'ratio':>6}   (median ms)"
    )
    results = []
    for n in arguments.sizes:
        r = run(n, arguments.lookups, arguments.trials, seed=n)
        results.append(r)
        d, s = r["dict"], r["searched"]
        print(
            f"{n:>8} {d['first_ms']:>11.1f} {s['first_ms']:>15.1f} {r['first_ratio']:>5}x"
            f" {d['second_ms']:>12.2f} {s['second_ms']:>16.2f} {r['second_ratio']:>5}x",
            flush=True,
        )
    write_results(RESULTS, "id_index_bench", load_before, results)


if __name__ == "__main__":
    main()
