"""Edge classifier throughput: documents classified per second with 10k prior documents per tenant.

What the edge-classifier service computes per `document.persisted` event, in process: read the new
document (`document_keys`), read its candidates, classify (`mnemo_mdn.edge_classification`). The
candidates and key frequencies come from an in-process index of the prior documents
(`LexicalIndex`: the same definition the service's Postgres queries answer; those reads are not
timed here, `bench/ingest_bench.py`-style end-to-end numbers are the write path's). Documents are
the MuSiQue passages (real encyclopedic text), repeated with distinct ids to reach the prior count.

Three rates:
- `classify`: the pure function alone, documents already read;
- `service, cold`: reading the new document and every candidate, then classifying (no cache);
- `service, warm`: the same with the service's reading cache (`KeysCache`) holding the prior
  documents, as in a steady stream where candidates recur.

Target (issue: write path): >= 1,000 documents/s. Each rate is the best of `--repeats` passes (a
pass is about half a second: on a shared machine one pass can land on someone else's burst), and
the load average is printed beside it.

Usage: python bench/classifier_bench.py [--prior 10000] [--new 1000] [--repeats 3] [--data DIR]
       [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from mnemo_edge_classifier.use_cases import KeysCache
from mnemo_mdn.edge_classification import Rarity, TextDocument, classify, document_keys
from mnemo_mdn.lexical_index import LexicalIndex

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT / "bench" / "data" / "musique"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--prior", type=int, default=10_000)
    parser.add_argument("--new", type=int, default=1_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--out", type=Path, default=ROOT / "bench" / "results" / "classifier_bench.json"
    )
    args = parser.parse_args()
    passages = json.loads((args.data / "corpus.json").read_text())
    total = args.prior + args.new
    documents = [
        TextDocument(
            f"d{k}", passages[k % len(passages)]["title"], passages[k % len(passages)]["text"]
        )
        for k in range(total)
    ]
    started = time.perf_counter()
    index = LexicalIndex(documents)
    index_seconds = time.perf_counter() - started

    # What the service's two queries return for each new document (not timed).
    work: list[tuple[int, list[int], Rarity]] = []
    for position in range(args.prior, total):
        candidates = [p for p in index.candidates(position) if p < args.prior]
        work.append((position, candidates, index.rarity(index.keys[position])))
    mean_candidates = sum(len(c) for _, c, _ in work) / len(work)

    load_before = os.getloadavg()[0]

    def best_rate(run: Callable[[], None]) -> float:
        best = float("inf")
        for _ in range(max(1, args.repeats)):
            started = time.perf_counter()
            run()
            best = min(best, time.perf_counter() - started)
        return float(args.new) / best

    edges = sum(
        len(classify(index.keys[position], [index.keys[p] for p in candidates], rarity))
        for position, candidates, rarity in work
    )

    def classify_only() -> None:
        for position, candidates, rarity in work:
            classify(index.keys[position], [index.keys[p] for p in candidates], rarity)

    def cold() -> None:
        for position, candidates, rarity in work:
            keys = document_keys(documents[position])
            classify(keys, [document_keys(documents[p]) for p in candidates], rarity)

    tenant, cache = uuid.uuid4(), KeysCache(args.prior + args.new)
    for document in documents[: args.prior]:
        cache.keys(tenant, "bench", document)

    def warm() -> None:
        for position, candidates, rarity in work:
            keys = cache.keys(tenant, "bench", documents[position])
            classify(keys, [cache.keys(tenant, "bench", documents[p]) for p in candidates], rarity)

    classify_rate, cold_rate, warm_rate = best_rate(classify_only), best_rate(cold), best_rate(warm)
    load_after = os.getloadavg()[0]

    print(f"{'prior':>7} {'new':>6} {'candidates':>10} {'edges/doc':>9} {'index s':>8}")
    print(
        f"{args.prior:>7} {args.new:>6} {mean_candidates:>10.1f} {edges / args.new:>9.1f}"
        f" {index_seconds:>8.1f}"
    )
    print(f"{'docs/s: classify':>24} {classify_rate:>8.0f}")
    print(f"{'service, cold':>24} {cold_rate:>8.0f}")
    print(f"{'service, warm cache':>24} {warm_rate:>8.0f}   (target 1000)")
    print(f"best of {args.repeats}; load average {load_before:.1f} -> {load_after:.1f}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "prior_documents": args.prior,
                "new_documents": args.new,
                "mean_candidates": mean_candidates,
                "edges_per_document": edges / args.new,
                "classify_documents_per_second": classify_rate,
                "service_cold_documents_per_second": cold_rate,
                "service_warm_documents_per_second": warm_rate,
                "index_seconds": index_seconds,
                "repeats": args.repeats,
                "load_average": [load_before, load_after],
                "target_documents_per_second": 1000,
            },
            indent=2,
        )
        + "\n"
    )
    print(
        f"wrote {args.out.resolve().relative_to(ROOT) if args.out.resolve().is_relative_to(ROOT) else args.out}"
    )


if __name__ == "__main__":
    main()
