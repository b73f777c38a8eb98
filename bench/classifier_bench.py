"""Edge classifier throughput: documents classified per second with 10k prior documents per tenant.

The pure classifier (`mnemo_mdn.edge_classification.classify`) on each new document against its
candidates from an in-process index of the tenant's prior documents (`LexicalIndex`: the same
candidates and key frequencies the service reads from Postgres's full-text index). Documents are
the MuSiQue passages (real encyclopedic text), repeated with distinct ids to reach the prior count.
Target (issue: write path): >= 1,000 documents/s. The Postgres reads of the service are not timed
here.

Usage: python bench/classifier_bench.py [--prior 10000] [--new 1000] [--data DIR] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from mnemo_mdn.edge_classification import TextDocument, classify
from mnemo_mdn.lexical_index import LexicalIndex

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "musique"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--prior", type=int, default=10_000)
    parser.add_argument("--new", type=int, default=1_000)
    parser.add_argument("--candidates", type=int, default=50)
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

    edges = 0
    started = time.perf_counter()
    for position in range(args.prior, total):
        keys = index.keys[position]
        candidates = [p for p in index.candidates(position) if p < args.prior][: args.candidates]
        rarity = index.rarity(keys)
        decisions = classify(keys, [index.keys[p] for p in candidates], rarity)
        edges += len(decisions)
    seconds = time.perf_counter() - started
    rate = args.new / seconds
    print(f"{'prior':>7} {'new':>6} {'docs/s':>9} {'edges/doc':>10} {'index s':>8}")
    print(
        f"{args.prior:>7} {args.new:>6} {rate:>9.0f} {edges / args.new:>10.1f} {index_seconds:>8.1f}"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "prior_documents": args.prior,
                "new_documents": args.new,
                "documents_per_second": rate,
                "edges_per_document": edges / args.new,
                "index_seconds": index_seconds,
                "target_documents_per_second": 1000,
            },
            indent=2,
        )
    )
    print(f"wrote {args.out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
