"""MDN engine benchmark: signed EPR against its baseline and networkx, and navigation, on synthetic graphs.

For each size (default 1k, 10k, 100k and 1M documents) it generates a graph with about 5 edges per
document, heavy-tailed in- and out-degrees (Pareto) and about 10% negative edges, then times:
- mnemo: `CorpusGraph.from_arrays` (graph construction) + `epr` (both channels), best of the runs;
- baseline: the EPR the engine had before issue 15 (`epr_reference.py`), run in the same process,
  interleaved with `epr`, so the ratio holds on a busy machine; both must agree to 1e-12;
- oracle: the spec's iteration written as literal Python loops over the edges (up to 10k documents),
  which both must match to 1e-12;
- networkx: building one MultiDiGraph per channel + `nx.pagerank` on each with the same teleport
  vectors, uniform dangling mass, damping and L1 tolerance (only up to 100k: beyond, it takes
  minutes), and checks that both give the same vectors to 1e-6;
- navigation (`mode="mdn"`, budget 5, no seed): the first call on a fresh graph whose EPR is known
  (it builds the term index and the adjacency), best of the runs, and the median of warm calls;
- the peak memory traced while building the graph and computing EPR, and while building the
  term index.
Prints a table and verdicts and writes bench/results/mdn_bench.json (with the load average).

Targets at 1M documents / 5M edges (issue 15): EPR ≤ 0.5 s; from_arrays + EPR ≤ 0.8 s; peak ≤ 600 MB;
first navigation ≤ 1 s; warm navigation ≤ 20 ms; and ≥ 30× networkx at 100k.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TypeVar

import networkx as nx
import numpy as np
import numpy.typing as npt
import scipy
from epr_reference import reference_epr
from mnemo_mdn import CorpusGraph, MdnParams, epr, navigate, teleport_vector
from mnemo_mdn.relations import POLARITY, RELATION_TYPES, Polarity
from mnemo_mdn.relevance import term_index

SIZES = (1_000, 10_000, 100_000, 1_000_000)
QUICK_SIZES = (1_000, 10_000, 100_000)
NETWORKX_MAX_DOCUMENTS = 100_000
ORACLE_MAX_DOCUMENTS = 10_000
EDGES_PER_DOCUMENT = 5
NEGATIVE_SHARE = 0.10
NEUTRAL_SHARE = 0.15
VOCABULARY_SIZE = 5_000
WORDS_PER_TITLE = 5
QUERIES = 20
RESULTS = Path(__file__).parent / "results" / "mdn_bench.json"
TARGET_EPR_AT_1M = 0.5
TARGET_BUILD_AND_EPR_AT_1M = 0.8
TARGET_PEAK_MB = 600.0
TARGET_FIRST_NAVIGATION_S = 1.0
TARGET_WARM_NAVIGATION_MS = 20.0
TARGET_RATIO_AT_100K = 30.0
AGREEMENT = 1e-6  # with networkx, whose stop rule differs
IDENTICAL = 1e-12  # with the baseline and the oracle

_Result = TypeVar("_Result")
_Input = TypeVar("_Input")
_Other = TypeVar("_Other")


@dataclass(frozen=True)
class SyntheticGraph:
    ids: list[str]
    titles: list[str]
    source: npt.NDArray[np.int64]
    target: npt.NDArray[np.int64]
    etype: npt.NDArray[np.int8]
    weight: npt.NDArray[np.float64]
    queries: list[str]


@dataclass(frozen=True)
class Row:
    documents: int
    edges: int
    negative_edges: int
    build_s: float
    epr_s: float
    baseline_epr_s: float
    epr_vs_baseline: float  # epr_s / baseline_epr_s, both from this run
    mnemo_s: float
    iterations: int
    iterations_minus: int
    difference_from_baseline: float
    difference_from_oracle: float | None
    networkx_s: float | None
    ratio: float | None
    max_difference: float | None
    term_index_s: float
    navigate_first_s: float
    navigate_median_ms: float
    peak_mb: float
    term_index_peak_mb: float
    held_mb: float


def generate(n: int, seed: int) -> SyntheticGraph:
    """Heavy-tailed degrees: endpoints drawn with Pareto propensities (targets heavier)."""
    rng = np.random.default_rng(seed)
    m = EDGES_PER_DOCUMENT * n

    def endpoints(shape: float) -> npt.NDArray[np.int64]:
        propensity = rng.pareto(shape, n) + 1.0
        cumulative = np.cumsum(propensity)
        cumulative /= cumulative[-1]
        return np.minimum(np.searchsorted(cumulative, rng.random(m)), n - 1).astype(np.int64)

    source, target = endpoints(2.0), endpoints(1.3)
    draw = rng.random(m)
    codes = {etype: code for code, etype in enumerate(RELATION_TYPES)}
    positive = np.array([codes[t] for t in RELATION_TYPES if POLARITY[t] is Polarity.POSITIVE])
    negative = np.array([codes[t] for t in RELATION_TYPES if POLARITY[t] is Polarity.NEGATIVE])
    neutral = np.array([codes[t] for t in RELATION_TYPES if POLARITY[t] is Polarity.NEUTRAL])
    etype = np.where(
        draw < NEGATIVE_SHARE,
        rng.choice(negative, m),
        np.where(
            draw < NEGATIVE_SHARE + NEUTRAL_SHARE, rng.choice(neutral, m), rng.choice(positive, m)
        ),
    ).astype(np.int8)
    weight = rng.uniform(0.05, 1.0, m)

    # Zipf-like word frequencies, so some query terms are common and some rare.
    frequency = 1.0 / np.arange(1, VOCABULARY_SIZE + 1)
    words = rng.choice(VOCABULARY_SIZE, size=(n, WORDS_PER_TITLE), p=frequency / frequency.sum())
    vocabulary = [f"w{k}" for k in range(VOCABULARY_SIZE)]
    titles = [" ".join(vocabulary[w] for w in row) for row in words.tolist()]
    query_words = rng.integers(10, 500, size=(QUERIES, 3))
    queries = [" ".join(vocabulary[w] for w in row) for row in query_words.tolist()]
    ids = [f"doc-{k:07d}" for k in range(n)]
    return SyntheticGraph(ids, titles, source, target, etype, weight, queries)


def build(graph: SyntheticGraph) -> CorpusGraph:
    return CorpusGraph.from_arrays(
        graph.ids,
        graph.titles,
        edge_source=graph.source,
        edge_target=graph.target,
        edge_type=graph.etype,
        edge_weight=graph.weight,
    )


def best_of(
    repeats: int, run: Callable[[_Input], _Result], setup: Callable[[], _Input]
) -> tuple[float, _Result]:
    """Smallest wall time of `run(setup())` over the runs (setup untimed), and the last result."""
    best, result = float("inf"), None
    for _ in range(repeats):
        argument = setup()
        gc.collect()
        started = time.perf_counter()
        result = run(argument)
        best = min(best, time.perf_counter() - started)
    assert result is not None
    return best, result


def best_of_pair(
    repeats: int,
    first: Callable[[_Input], _Result],
    second: Callable[[_Input], _Other],
    setup: Callable[[], _Input],
) -> tuple[float, _Result, float, _Other]:
    """Best wall times of two computations run alternately (which goes first alternates too), so
    that a busy machine slows both alike; and their last results."""
    best_first = best_second = float("inf")
    first_result: _Result | None = None
    second_result: _Other | None = None
    for run in range(repeats):
        for which in ("first", "second") if run % 2 == 0 else ("second", "first"):
            argument = setup()
            gc.collect()
            started = time.perf_counter()
            if which == "first":
                first_result = first(argument)
                best_first = min(best_first, time.perf_counter() - started)
            else:
                second_result = second(argument)
                best_second = min(best_second, time.perf_counter() - started)
    assert first_result is not None
    assert second_result is not None
    return best_first, first_result, best_second, second_result


def literal_epr(
    graph: CorpusGraph, params: MdnParams
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """MDN.md §2 written out with Python loops over the edges: the oracle (small graphs only)."""
    n, d = graph.n_documents, params.damping
    edges = list(
        zip(
            graph.edge_source.tolist(),
            graph.edge_target.tolist(),
            graph.edge_weight.tolist(),
            graph.edge_polarity.tolist(),
            strict=True,
        )
    )

    def channel(polarity: Polarity, raw: list[float]) -> list[float]:
        floored = [max(value, 0.0) + 1e-9 for value in raw]
        u = [value / sum(floored) for value in floored]
        chosen = [(s, t, w) for s, t, w, p in edges if p == polarity]
        out = [0.0] * n
        for s, _, w in chosen:
            out[s] += w
        x = [1.0 / n] * n
        for _ in range(params.max_iter):
            dangling = sum(x[j] for j in range(n) if out[j] == 0.0)
            following = [(1 - d) * u[i] + d * dangling / n for i in range(n)]
            for s, t, w in chosen:
                following[t] += d * x[s] * w / out[s]
            delta = sum(abs(following[i] - x[i]) for i in range(n))
            x = following
            if delta < params.tol:
                break
        return x

    plus = channel(Polarity.POSITIVE, [1.0 / (v + 1.0) for v in graph.depth.tolist()])
    minus = channel(Polarity.NEGATIVE, graph.recency.tolist())
    return np.array(plus), np.array(minus)


def networkx_epr(
    synthetic: SyntheticGraph, params: MdnParams
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """The same two channels with networkx: one MultiDiGraph and one PageRank per polarity."""
    n = len(synthetic.ids)
    polarity = np.array([POLARITY[t] for t in RELATION_TYPES], dtype=np.int8)[synthetic.etype]
    nodes = range(n)
    uniform = dict.fromkeys(nodes, 1.0)
    channels = []
    for sign, raw in (
        (Polarity.POSITIVE, np.ones(n)),  # depth 0 everywhere: u⁺ uniform
        (Polarity.NEGATIVE, np.full(n, 0.5)),  # recency 0.5 everywhere: u⁻ uniform
    ):
        selected = polarity == sign
        graph = nx.MultiDiGraph()
        graph.add_nodes_from(nodes)
        graph.add_weighted_edges_from(
            zip(
                synthetic.source[selected].tolist(),
                synthetic.target[selected].tolist(),
                synthetic.weight[selected].tolist(),
                strict=True,
            )
        )
        teleport = dict(enumerate(teleport_vector(raw).tolist()))
        ranks = nx.pagerank(
            graph,
            alpha=params.damping,
            personalization=teleport,
            dangling=uniform,  # the spec spreads dangling mass uniformly, not by teleport
            max_iter=params.max_iter,
            tol=params.tol / n,  # networkx stops when the L1 change < n·tol
            weight="weight",
        )
        channels.append(np.array([ranks[k] for k in nodes]))
    return channels[0], channels[1]


def traced_peak_mb(run: Callable[[], object]) -> float:
    gc.collect()
    tracemalloc.start()
    run()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 1e6


def held_mb(synthetic: SyntheticGraph) -> float:
    """What a navigated graph keeps: its arrays and memos (EPR, term index, adjacency) as traced,
    plus the id and title strings it holds (made by the generator here, by the load in a service)."""
    gc.collect()
    tracemalloc.start()
    graph = build(synthetic)
    epr(graph)
    navigate(graph, synthetic.queries[0])
    gc.collect()
    current, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    strings = sum(map(sys.getsizeof, graph.ids)) + sum(map(sys.getsizeof, graph.titles))
    return (current + strings) / 1e6


def measure(n: int, repeats: int, with_networkx: bool) -> Row:
    synthetic = generate(n, seed=n)
    params = MdnParams()
    build_s, graph = best_of(repeats, build, lambda: synthetic)
    # EPR alone on a loaded graph (its own sparse matrices are built inside), beside the baseline.
    epr_s, result, baseline_s, baseline = best_of_pair(
        repeats,
        lambda fresh: epr(fresh, params),
        lambda fresh: reference_epr(fresh, params),
        lambda: build(synthetic),
    )
    mnemo_s, _ = best_of(repeats, lambda data: epr(build(data), params), lambda: synthetic)
    assert (result.iterations, result.iterations_minus) == (
        baseline.iterations,
        baseline.iterations_minus,
    )
    from_baseline = float(
        max(
            np.abs(result.epr_plus - baseline.epr_plus).max(),
            np.abs(result.epr_minus - baseline.epr_minus).max(),
            np.abs(result.epr - baseline.epr).max(),
        )
    )
    from_oracle = None
    if n <= ORACLE_MAX_DOCUMENTS:
        plus, minus = literal_epr(graph, params)
        from_oracle = float(
            max(
                np.abs(result.epr_plus - plus).max(),
                np.abs(result.epr_minus - minus).max(),
                np.abs(baseline.epr_plus - plus).max(),
                np.abs(baseline.epr_minus - minus).max(),
            )
        )

    networkx_s = ratio = difference = None
    if with_networkx:
        networkx_s, (plus, minus) = best_of(
            1, lambda data: networkx_epr(data, params), lambda: synthetic
        )
        difference = float(
            max(np.abs(plus - result.epr_plus).max(), np.abs(minus - result.epr_minus).max())
        )
        ratio = networkx_s / mnemo_s

    def fresh_with_epr() -> CorpusGraph:
        fresh = build(synthetic)  # a fresh graph: the first navigation builds the term index
        epr(fresh, params)
        return fresh

    term_index_s, _ = best_of(repeats, term_index, fresh_with_epr)
    navigate_first_s, graph = best_of(
        repeats, lambda fresh: (navigate(fresh, synthetic.queries[0]), fresh)[1], fresh_with_epr
    )
    timings = []
    for query in synthetic.queries:
        started = time.perf_counter()
        navigate(graph, query)
        timings.append(time.perf_counter() - started)
    graph = build(synthetic)
    term_peak = traced_peak_mb(lambda: term_index(graph))

    return Row(
        documents=n,
        edges=graph.n_edges,
        negative_edges=int(np.count_nonzero(graph.edge_polarity == Polarity.NEGATIVE)),
        build_s=build_s,
        epr_s=epr_s,
        baseline_epr_s=baseline_s,
        epr_vs_baseline=epr_s / baseline_s,
        mnemo_s=mnemo_s,
        iterations=result.iterations,
        iterations_minus=result.iterations_minus,
        difference_from_baseline=from_baseline,
        difference_from_oracle=from_oracle,
        networkx_s=networkx_s,
        ratio=ratio,
        max_difference=difference,
        term_index_s=term_index_s,
        navigate_first_s=navigate_first_s,
        navigate_median_ms=statistics.median(timings) * 1e3,
        peak_mb=traced_peak_mb(lambda: epr(build(synthetic), params)),
        term_index_peak_mb=term_peak,
        held_mb=held_mb(synthetic),
    )


def table(rows: Sequence[Row]) -> str:
    header = (
        f"{'documents':>10} {'edges':>10} {'build s':>8} {'epr s':>7} {'base s':>7} {'ratio':>6} "
        f"{'mnemo s':>8} {'iter +/-':>8} {'Δ base':>8} {'Δ oracle':>8} {'networkx s':>11} "
        f"{'×nx':>6} {'Δ nx':>8} {'terms s':>8} {'nav 1st s':>9} {'nav ms':>7} {'peak MB':>8} "
        f"{'terms MB':>8} {'held MB':>8}"
    )
    lines = [header, "-" * len(header)]
    for row in rows:
        networkx = f"{row.networkx_s:11.3f}" if row.networkx_s is not None else f"{'(skipped)':>11}"
        ratio = f"{row.ratio:5.1f}×" if row.ratio is not None else f"{'—':>6}"
        agree = f"{row.max_difference:8.1e}" if row.max_difference is not None else f"{'—':>8}"
        oracle = (
            f"{row.difference_from_oracle:8.1e}"
            if row.difference_from_oracle is not None
            else f"{'—':>8}"
        )
        lines.append(
            f"{row.documents:>10,} {row.edges:>10,} {row.build_s:8.3f} {row.epr_s:7.3f} "
            f"{row.baseline_epr_s:7.3f} {row.epr_vs_baseline:6.2f} {row.mnemo_s:8.3f} "
            f"{row.iterations:>4}/{row.iterations_minus:<3} {row.difference_from_baseline:8.1e} "
            f"{oracle} {networkx} {ratio} {agree} {row.term_index_s:8.3f} "
            f"{row.navigate_first_s:9.3f} {row.navigate_median_ms:7.1f} {row.peak_mb:8.0f} "
            f"{row.term_index_peak_mb:8.0f} {row.held_mb:8.0f}"
        )
    lines.extend(
        [
            "build s = CorpusGraph.from_arrays; epr s = epr on a loaded graph (its sparse matrices"
            " and both channels); base s = the pre-issue-15 EPR (epr_reference.py) on the same"
            " graphs, interleaved; ratio = epr s / base s; mnemo s = from_arrays + epr; each the"
            " best of the runs.",
            "Δ base = largest |difference| of EPR⁺, EPR⁻ or EPR from the baseline; Δ oracle = the"
            " same for either engine against the literal loops (up to"
            f" {ORACLE_MAX_DOCUMENTS:,} documents).",
            "networkx s = two MultiDiGraphs built + two nx.pagerank, run only up to "
            f"{NETWORKX_MAX_DOCUMENTS:,} documents (beyond, it takes minutes); ×nx = networkx s"
            " / mnemo s; Δ nx = largest difference of EPR⁺ or EPR⁻.",
            "terms s = term index of a fresh graph; nav 1st s = first navigation of a fresh graph"
            " whose EPR is known (builds its term index and adjacency), best of the runs; nav ms ="
            " median warm navigation (mdn mode, budget 5); peak MB = traced peak of from_arrays +"
            " epr; terms MB = traced peak of the term index; held MB = what a navigated graph"
            " keeps (arrays, EPR, term index, adjacency, id and title strings).",
        ]
    )
    return "\n".join(lines)


def verdicts(rows: Sequence[Row]) -> list[str]:
    found = []

    def verdict(passed: bool, text: str) -> None:
        found.append(f"{'PASS' if passed else 'MISS'}: {text}")

    for row in rows:
        if row.documents == 1_000_000:
            size = f"1M documents / {row.edges:,} edges"
            verdict(
                row.epr_s <= TARGET_EPR_AT_1M,
                f"EPR of {size} in {row.epr_s:.3f} s (target ≤ {TARGET_EPR_AT_1M} s; baseline"
                f" {row.baseline_epr_s:.3f} s in this run, ratio {row.epr_vs_baseline:.2f})",
            )
            verdict(
                row.mnemo_s <= TARGET_BUILD_AND_EPR_AT_1M,
                f"from_arrays + EPR of {size} in {row.mnemo_s:.3f} s"
                f" (target ≤ {TARGET_BUILD_AND_EPR_AT_1M} s)",
            )
            verdict(
                max(row.peak_mb, row.term_index_peak_mb) <= TARGET_PEAK_MB,
                f"peak memory {row.peak_mb:.0f} MB (from_arrays + EPR),"
                f" {row.term_index_peak_mb:.0f} MB (term index) (target ≤ {TARGET_PEAK_MB:.0f} MB)",
            )
            verdict(
                row.navigate_first_s <= TARGET_FIRST_NAVIGATION_S,
                f"first navigation of a fresh 1M graph in {row.navigate_first_s:.3f} s, term index"
                f" included (target ≤ {TARGET_FIRST_NAVIGATION_S} s)",
            )
            verdict(
                row.navigate_median_ms <= TARGET_WARM_NAVIGATION_MS,
                f"warm navigation in {row.navigate_median_ms:.1f} ms"
                f" (target ≤ {TARGET_WARM_NAVIGATION_MS:.0f} ms)",
            )
        if row.documents == 100_000 and row.ratio is not None:
            verdict(
                row.ratio >= TARGET_RATIO_AT_100K,
                f"{row.ratio:.1f}× networkx at 100k (target ≥ {TARGET_RATIO_AT_100K}×)",
            )
        identical = max(row.difference_from_baseline, row.difference_from_oracle or 0.0)
        verdict(
            identical <= IDENTICAL,
            f"{row.documents:,} documents: max |Δ| {identical:.1e} from the baseline"
            f"{' and the oracle' if row.difference_from_oracle is not None else ''}"
            f" (target ≤ {IDENTICAL:.0e})",
        )
        if row.max_difference is not None and row.max_difference > AGREEMENT:
            found.append(
                f"DISAGREE: {row.documents:,} documents differ from networkx by"
                f" {row.max_difference:.1e}"
            )
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Absolute times depend on the machine's load (the JSON records it): compare ratios"
        " measured in one run, and re-run when `uptime` shows a quiet machine.",
    )
    parser.add_argument(
        "--sizes",
        type=lambda text: tuple(int(size) for size in text.split(",")),
        help="comma-separated document counts (default 1000,10000,100000,1000000)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="1k, 10k and 100k, two runs each (about half a minute)"
    )
    parser.add_argument("--repeats", type=int, default=5, help="runs per timing, best kept")
    parser.add_argument(
        "--output", type=Path, default=RESULTS, help=f"where the JSON goes (default {RESULTS})"
    )
    args = parser.parse_args(argv)
    sizes = args.sizes or (QUICK_SIZES if args.quick else SIZES)
    repeats = min(2, args.repeats) if args.quick else args.repeats

    load_before = os.getloadavg()
    # The first large allocations of a fresh process are slow on some VMs (pages the host has never
    # backed); one small warm-up keeps that out of the first measured size.
    epr(build(generate(10_000, seed=0)))
    rows = []
    for n in sizes:
        rows.append(measure(n, repeats, with_networkx=n <= NETWORKX_MAX_DOCUMENTS))
        print(f"measured {n:,} documents", file=sys.stderr, flush=True)

    print(table(rows))
    for line in verdicts(rows):
        print(line)
    load_after = os.getloadavg()
    print(f"load average (1, 5, 15 min) before {load_before}, after {load_after}")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(
        json.dumps(
            {
                "rows": [asdict(row) for row in rows],
                "verdicts": verdicts(rows),
                "repeats": repeats,
                "load_average": {"before": load_before, "after": load_after},
                "machine": {
                    "cpus": os.cpu_count(),
                    "python": platform.python_version(),
                    "numpy": np.__version__,
                    "scipy": scipy.__version__,
                    "networkx": nx.__version__,
                },
            },
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
