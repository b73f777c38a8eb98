"""A refreshed graph's id index: searched in the sorted ids (`mnemo_mdn.graph.AscendingIndex`)
against a dict of every id (what each graph built before), side by side in one process.

A store graph's ids arrive sorted, and every refresh (a write, then a navigation) makes a new
graph. An adaptive corpus's navigation looks up the documents of its scope's remembered paths
(`memory.bias_vector`: up to `horizon` = 1,000 outcomes of 5 documents) and its seed. Per size,
`--trials` fresh graphs of uuid ids (sorted), each asked for the same `--lookups` ids twice: the
first navigation after the refresh, then a second on the same graph. Times: the index's first use
(building the dict or nothing, then the lookups) and the second navigation's lookups, for three
indexes of the refreshed ids (one new document among the others): a dict, a search
(`AscendingIndex`) and a search that took over what the predecessor's index found
(`AscendingIndex.carry`, what `incremental.carry_over` does for a refreshed graph), taking turns
going first. Prints a table with the ratios and writes bench/results/id_index_bench.json.

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


def carried_from(
    previous: AscendingIndex, moved: np.ndarray
) -> Callable[[tuple[str, ...]], AscendingIndex]:
    """An index of the refreshed ids that takes over what `previous` found (`carry`)."""

    def make(ids: tuple[str, ...]) -> AscendingIndex:
        index = AscendingIndex(ids)
        index.carry(previous, moved)
        return index

    return make


def run(n: int, lookups: int, trials: int, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    before = tuple(sorted(str(uuid.UUID(int=int(x))) for x in rng.integers(0, 2**63 - 1, n)))
    wanted = [before[int(k)] for k in rng.integers(0, n, lookups)]
    # The refresh: one new document, at a random place among the others.
    added = str(uuid.UUID(int=int(rng.integers(0, 2**63 - 1))))
    ids = tuple(sorted((*before, added)))
    place = ids.index(added)
    moved = np.arange(n, dtype=np.int64) + (np.arange(n) >= place)
    previous = AscendingIndex(before)  # the predecessor's, after its navigation
    for doc_id in wanted:
        previous.get(doc_id)
    makers: dict[str, Callable[[tuple[str, ...]], Mapping[str, int]]] = {
        "dict": every_id,
        "searched": AscendingIndex,
        "carried": carried_from(previous, moved),
    }
    timings: dict[str, list[tuple[float, float]]] = {name: [] for name in makers}
    for trial in range(trials):
        names = list(makers)
        order = names[trial % 3 :] + names[: trial % 3]
        for name in order:
            timings[name].append(navigations(makers[name], ids, wanted))
    result: dict[str, Any] = {"documents": n, "lookups": lookups, "trials": trials}
    for name, pairs in timings.items():
        result[name] = {
            "first_ms": round(statistics.median(p[0] for p in pairs), 2),
            "second_ms": round(statistics.median(p[1] for p in pairs), 2),
        }
    result["first_ratio"] = round(result["dict"]["first_ms"] / result["searched"]["first_ms"], 1)
    result["second_ratio"] = round(result["dict"]["second_ms"] / result["searched"]["second_ms"], 2)
    result["carried_first_ratio"] = round(
        result["searched"]["first_ms"] / result["carried"]["first_ms"], 1
    )
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
        f" {'dict second':>12} {'searched second':>16} {'ratio':>6}"
        f" {'carried first':>14} {'vs searched':>12}   (median ms)"
    )
    results = []
    for n in arguments.sizes:
        r = run(n, arguments.lookups, arguments.trials, seed=n)
        results.append(r)
        d, s, c = r["dict"], r["searched"], r["carried"]
        print(
            f"{n:>8} {d['first_ms']:>11.1f} {s['first_ms']:>15.1f} {r['first_ratio']:>5}x"
            f" {d['second_ms']:>12.2f} {s['second_ms']:>16.2f} {r['second_ratio']:>5}x"
            f" {c['first_ms']:>14.2f} {r['carried_first_ratio']:>11}x",
            flush=True,
        )
    write_results(RESULTS, "id_index_bench", load_before, results)


if __name__ == "__main__":
    main()
