"""Navigation quality on multi-hop questions: BM25, navigation, navigation without edges, edge recall.

Data (`--data DIR`, `--format`):
- `musique`: the vendored MuSiQue subset (`bench/data/musique`): `corpus.json` (list of
  `{title, text}`) and `questions.json` (MuSiQue records: `question`, `paragraphs` with
  `is_supporting`, `question_decomposition` giving the hops in order);
- `simple`: `corpus.json` = list of `{title, text}`, `questions.json` = list of
  `{question, supporting_titles}` (the titles in hop order; every passage bearing one supports it),
  e.g. the vendored 2WikiMultiHopQA subset (`bench/data/twowiki`).
`--dataset musique|twowiki` names a vendored one (its directory and format); `--data` and
`--format` override it.

Modes:
- `engine`: everything in process: the edge classifier's pure function over the whole corpus
  (`mnemo_mdn.lexical_index.classify_corpus`, the rules and candidates the edge-classifier service
  uses) and `mnemo_mdn.navigate` over the documents and those edges;
- `service`: the documents persisted through ingest (Kafka), edges made by the running edge
  classifier, questions asked through the navigator's HTTP API (see `--help` of the service
  options; needs `make up`).

For each question (budget 5) it prints recall@2 and recall@5 (the share of the question's
supporting passages among the first 2 / 5 results) of `bm25` (flat retrieval: the BM25 ranking the
navigator seeds with), `navigate` (over the classifier's edges) and `navigate_no_edges` (the same
walk over no edges: what the edges add), averaged over all questions and over two fixed halves:
`tune` (even positions) and `held_out` (odd positions: seed and walk choices are kept only when
they help there). `edge recall` is the share of a question's consecutive supporting passages (in
hop order) that one edge joins, either way. A JSON report goes to `--out`.

`--order arrival` (engine mode) classifies each passage as it arrives, against the passages before
it, as the service does when its classifier keeps up with ingest (`classify_in_arrival_order`):
what tells arrival order apart from the rest of the service.

`--edges-out FILE` also writes the edges navigated over (`[source, target, type, weight]`, sorted):
what tells an engine run and a service run apart when their recall differs.

Usage: python bench/quality.py [--dataset musique|twowiki] [--data DIR] [--format musique|simple]
       [--mode engine|service] [--order corpus|arrival]
       [--direction out|both] [--budget 5] [--passages N] [--out bench/results/quality.json]
       [--edges-out FILE]
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from mnemo_mdn import DEFAULT_PARAMS, CorpusGraph, Document, Edge, MdnParams, navigate
from mnemo_mdn.edge_classification import (
    EdgeDecision,
    Rarity,
    TextDocument,
    candidate_query,
    classify,
    document_keys,
    keys_of,
)
from mnemo_mdn.frontier import Direction
from mnemo_mdn.lexical_index import ScopeIndex, classify_corpus
from mnemo_mdn.relevance import query_view

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT / "bench" / "data" / "musique"
TWOWIKI_DATA = ROOT / "bench" / "data" / "twowiki"
DATASETS: dict[str, tuple[Path, str]] = {
    "musique": (DEFAULT_DATA, "musique"),
    "twowiki": (TWOWIKI_DATA, "simple"),
}
"""The vendored datasets (`--dataset`): directory and format."""
SYSTEMS = ("bm25", "navigate", "navigate_no_edges")
SPLITS = ("all", "tune", "held_out")
DIRECTION: Direction = "both"
"""The direction navigation follows edges in (trial 1 in bench/README.md: kept): the navigator's
default, which service mode uses unless `--direction` is given."""


def passage_id(position: int) -> str:
    """A passage's document id: `p` and its position, zero-padded, so that id order (the order a
    store corpus's graph is loaded in) is the passages' order in engine and service modes alike."""
    return f"p{position:06d}"


def position_of(document_id: str) -> int:
    return int(document_id[1:])


@dataclass(frozen=True, slots=True)
class Question:
    text: str
    supporting: frozenset[int]  # passage positions
    hops: tuple[frozenset[int], ...]  # supporting passages per hop, in order


@dataclass(frozen=True, slots=True)
class Dataset:
    passages: tuple[tuple[str, str], ...]  # (title, text)
    questions: tuple[Question, ...]

    def documents(self) -> list[Document]:
        return [
            Document(passage_id(k), title, text) for k, (title, text) in enumerate(self.passages)
        ]

    def gold_pairs(self, question: Question) -> list[tuple[frozenset[int], frozenset[int]]]:
        return [(a, b) for a, b in itertools.pairwise(question.hops) if a != b]


def load_musique(data: Path) -> Dataset:
    corpus = json.loads((data / "corpus.json").read_text())
    records = json.loads((data / "questions.json").read_text())
    position = {(p["title"], p["text"]): k for k, p in enumerate(corpus)}
    questions = []
    for record in records:
        paragraphs = record["paragraphs"]
        at = [position[(p["title"], p["paragraph_text"])] for p in paragraphs]
        supporting = frozenset(at[k] for k, p in enumerate(paragraphs) if p["is_supporting"])
        hops = tuple(
            frozenset({at[step["paragraph_support_idx"]]})
            for step in record["question_decomposition"]
        )
        questions.append(Question(record["question"], supporting, hops))
    passages = tuple((p["title"], p["text"]) for p in corpus)
    return Dataset(passages, tuple(questions))


def load_simple(data: Path) -> Dataset:
    corpus = json.loads((data / "corpus.json").read_text())
    records = json.loads((data / "questions.json").read_text())
    by_title: dict[str, set[int]] = defaultdict(set)
    for k, passage in enumerate(corpus):
        by_title[passage["title"]].add(k)
    questions = []
    for record in records:
        titles = list(record["supporting_titles"])
        missing = [t for t in titles if t not in by_title]
        if missing:
            raise SystemExit(f"question {record['question']!r}: no passage titled {missing}")
        hops = tuple(frozenset(by_title[t]) for t in titles)
        questions.append(Question(record["question"], frozenset().union(*hops), hops))
    passages = tuple((p["title"], p["text"]) for p in corpus)
    return Dataset(passages, tuple(questions))


LOADERS: dict[str, Callable[[Path], Dataset]] = {"musique": load_musique, "simple": load_simple}


def head(dataset: Dataset, passages: int) -> Dataset:
    """The first `passages` passages and the questions all of whose supporting passages are among
    them (both vendored corpora keep each question's context together, in question order): the
    slice the service-mode regression test runs."""
    questions = tuple(q for q in dataset.questions if max(q.supporting, default=-1) < passages)
    return Dataset(dataset.passages[:passages], questions)


def recall(ranked: Sequence[str], gold: frozenset[int], k: int) -> float:
    found = {position_of(x) for x in ranked[:k]}
    return len(found & gold) / len(gold) if gold else 0.0


def edge_recall(dataset: Dataset, edges: Sequence[Edge]) -> tuple[float, int]:
    """Percentage of gold pairs (consecutive hops) one edge joins, either way; and their count."""
    joined = {frozenset((position_of(e.source), position_of(e.target))) for e in edges}
    pairs = [pair for q in dataset.questions for pair in dataset.gold_pairs(q)]
    hit = sum(
        any(frozenset((a, b)) in joined for a in left for b in right) for left, right in pairs
    )
    return (100.0 * hit / len(pairs) if pairs else 0.0), len(pairs)


@dataclass
class Results:
    """Per system, per question: (recall@2, recall@5)."""

    per_question: dict[str, list[tuple[float, float]]] = field(
        default_factory=lambda: {s: [] for s in SYSTEMS}
    )

    def mean(self, system: str, split: str) -> tuple[float, float]:
        rows = self.per_question[system]
        chosen = [
            r for k, r in enumerate(rows) if split == "all" or (split == "tune") == (k % 2 == 0)
        ]
        if not chosen:
            return 0.0, 0.0
        return (
            100.0 * float(np.mean([r[0] for r in chosen])),
            100.0 * float(np.mean([r[1] for r in chosen])),
        )


def bm25_ranking(graph: CorpusGraph, query: str, params: MdnParams, budget: int) -> list[str]:
    relevance = query_view(graph, query, params).relevance
    order = np.lexsort((np.arange(len(relevance)), -relevance))[:budget]
    return [graph.ids[i] for i in order if relevance[i] > 0]


def classify_in_arrival_order(documents: Sequence[Document]) -> tuple[EdgeDecision, ...]:
    """The classifier as the edge-classifier service runs it when it keeps up with ingest: each
    document, when it arrives, against the documents stored before it and itself (a
    `ScopeIndex`, the service's in-memory read), the rarity of its keys and the namesakes of the
    titles it names counted among those only. Each pair is decided once, by its later document;
    a pair decided with two weights keeps the heavier (as the walk does with two rows)."""
    index = ScopeIndex()
    decided: dict[tuple[str, str, str], EdgeDecision] = {}
    for document in documents:
        text = TextDocument(document.id, document.title, document.body)
        index.put(text)
        keys = document_keys(text)
        found, frequencies = index.neighbourhood(document.id, candidate_query(keys), keys_of(keys))
        candidates = [document_keys(TextDocument(c.id, c.title, c.body)) for c in found]
        for decision in classify(keys, candidates, Rarity(frequencies)):
            key = (decision.source, decision.target, decision.etype)
            if key not in decided or decision.weight > decided[key].weight:
                decided[key] = decision
    return tuple(decided[key] for key in sorted(decided))


ORDERS = ("corpus", "arrival")
"""How engine mode classifies: the whole corpus at once (`classify_corpus`, each document against
all the others) or in arrival order (`classify_in_arrival_order`, what service mode does)."""


def run_engine(
    dataset: Dataset,
    *,
    params: MdnParams = DEFAULT_PARAMS,
    direction: Direction = DIRECTION,
    budget: int = 5,
    edges: Sequence[Edge] | None = None,
    order: str = "corpus",
) -> tuple[Results, list[Edge]]:
    """Every question through BM25 and navigation, in process; the classifier's edges (made in
    `order`) unless `edges` are given (trials reuse them)."""
    documents = dataset.documents()
    if edges is None:
        classified = (
            classify_corpus(documents)
            if order == "corpus"
            else classify_in_arrival_order(documents)
        )
        edges = [decision.to_edge() for decision in classified]
    with_edges = CorpusGraph.build(documents, edges)
    without = CorpusGraph.build(documents, [])
    results = Results()
    for question in dataset.questions:
        gold = question.supporting
        flat = bm25_ranking(with_edges, question.text, params, budget)
        walked = navigate(
            with_edges, question.text, budget=budget, direction=direction, params=params
        ).path
        alone = navigate(
            without, question.text, budget=budget, direction=direction, params=params
        ).path
        for system, ranked in (("bm25", flat), ("navigate", walked), ("navigate_no_edges", alone)):
            results.per_question[system].append((recall(ranked, gold, 2), recall(ranked, gold, 5)))
    return results, list(edges)


def report(
    dataset: Dataset, results: Results, edges: Sequence[Edge], mode: str, seconds: float
) -> dict[str, Any]:
    gold_recall, pairs = edge_recall(dataset, edges)
    return {
        "mode": mode,
        "documents": len(dataset.passages),
        "questions": len(dataset.questions),
        "edges": len(edges),
        "edges_per_document": len(edges) / max(1, len(dataset.passages)),
        "gold_pairs": pairs,
        "edge_recall": gold_recall,
        "seconds": seconds,
        "results": {
            system: {
                split: dict(zip(("recall@2", "recall@5"), results.mean(system, split), strict=True))
                for split in SPLITS
            }
            for system in SYSTEMS
        },
    }


def print_report(summary: dict[str, Any]) -> None:
    print(
        f"{summary['mode']}: {summary['documents']} documents, {summary['questions']} questions,"
        f" {summary['edges']} edges ({summary['edges_per_document']:.1f}/document),"
        f" edge recall {summary['edge_recall']:.1f}% of {summary['gold_pairs']} gold pairs"
    )
    header = "".join(f" {split + ' @2':>13} {split + ' @5':>13}" for split in SPLITS)
    print(f"{'system':<18}{header}")
    for system, by_split in summary["results"].items():
        cells = "".join(
            f" {by_split[s]['recall@2']:>13.1f} {by_split[s]['recall@5']:>13.1f}" for s in SPLITS
        )
        print(f"{system:<18}{cells}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=(__doc__ or "").splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n".join((__doc__ or "").splitlines()[2:]),
    )
    parser.add_argument("--dataset", choices=sorted(DATASETS), default="musique")
    parser.add_argument("--data", type=Path, help="default: the dataset's directory")
    parser.add_argument("--format", choices=sorted(LOADERS), help="default: the dataset's format")
    parser.add_argument("--mode", choices=("engine", "service"), default="engine")
    parser.add_argument(
        "--direction",
        choices=("out", "both"),
        help=f"default: the navigator's ({DIRECTION}); service mode then sends none",
    )
    parser.add_argument("--budget", type=int, default=5)
    parser.add_argument(
        "--order",
        choices=ORDERS,
        default="corpus",
        help="engine mode: classify the corpus at once, or each passage as it arrives",
    )
    parser.add_argument(
        "--passages",
        type=int,
        help="only the first N passages and the questions they hold every supporting passage of",
    )
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "quality.json")
    parser.add_argument("--edges-out", type=Path, help="also write the edges here (JSON)")
    args = parser.parse_args(argv)

    data, data_format = DATASETS[args.dataset]
    dataset = LOADERS[args.format or data_format](args.data or data)
    if args.passages is not None:
        dataset = head(dataset, args.passages)
    started = time.perf_counter()
    if args.mode == "engine":
        results, edges = run_engine(
            dataset, direction=args.direction or DIRECTION, budget=args.budget, order=args.order
        )
    else:
        from quality_service import run_service  # the HTTP/Kafka client, only when asked for

        results, edges = run_service(dataset, direction=args.direction, budget=args.budget)
    summary = report(dataset, results, edges, args.mode, time.perf_counter() - started)
    summary["direction"], summary["budget"] = args.direction or DIRECTION, args.budget
    if args.mode == "engine":
        summary["order"] = args.order
    print_report(summary)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(summary, indent=2) + "\n")
    print(f"wrote {args.out}", file=sys.stderr)
    if args.edges_out is not None:
        rows = sorted([e.source, e.target, e.etype, e.weight] for e in edges)
        args.edges_out.write_text(json.dumps(rows) + "\n")
        print(f"wrote {args.edges_out}", file=sys.stderr)


if __name__ == "__main__":
    main()
