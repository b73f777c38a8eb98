"""Navigation quality on real multi-hop questions (MuSiQue subset): BM25 alone vs MDN navigation.

Protocol of the data's README: every passage becomes a document; for each of the 100 questions,
retrieve (BM25) or navigate (`mode="mdn"`) with the question as the query and a budget of 5;
recall@k is the share of the question's supporting passages among the first k results. Both
systems run in the same process on the same documents, and the table prints their ratio.

Two edge sources, side by side on the same documents (no embeddings in either):
- `title`: crude title mentions, as in the prototype MDN.md cites: passage A gets a `cite` edge to
  passage B when A's text mentions B's title (titles of at least two words or eight characters),
  and passages that share a title are joined by `corroborate` edges both ways;
- `lexical`: the edge classifier's pure function (`mnemo_mdn.lexical_index.classify_corpus`, the
  rules the edge-classifier service runs): citations, shared rare names weighted by rarity,
  replacement and opposition cues.
For each source the table gives navigation recall (out and both directions), the edge count, and
edge recall: the share of consecutive supporting passages of a question (in the order of its
decomposition) that one edge joins, either way.

Usage: python bench/musique_bench.py [--data DIR] [--out bench/results/musique_bench.json]
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import numpy as np
from mnemo_mdn import DEFAULT_PARAMS, CorpusGraph, Document, Edge, navigate
from mnemo_mdn.lexical_index import classify_corpus
from mnemo_mdn.relevance import query_view

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT / "bench" / "data" / "musique"


def load(data: Path) -> tuple[list[dict[str, str]], list[dict[str, object]]]:
    corpus = json.loads((data / "corpus.json").read_text())
    questions = json.loads((data / "questions.json").read_text())
    return corpus, questions


def title_mention_edges(corpus: list[dict[str, str]]) -> list[Edge]:
    """`cite` A→B when A's text names B's title; `corroborate` between passages sharing a title."""
    by_title: dict[str, list[int]] = defaultdict(list)
    for index, passage in enumerate(corpus):
        by_title[passage["title"]].append(index)
    linkable = [t for t in by_title if len(t) >= 8 or len(t.split()) >= 2]
    # One alternation per chunk keeps the regex engine fast on 1.9k titles.
    edges: list[Edge] = []
    for start in range(0, len(linkable), 300):
        chunk = sorted(linkable[start : start + 300], key=len, reverse=True)
        pattern = re.compile(r"\b(" + "|".join(re.escape(t) for t in chunk) + r")\b")
        for index, passage in enumerate(corpus):
            for title in set(pattern.findall(passage["text"])):
                if title == passage["title"]:
                    continue
                edges.extend(
                    Edge(str(index), str(target), "cite", 0.5) for target in by_title[title]
                )
    for members in by_title.values():
        edges.extend(
            Edge(str(a), str(b), "corroborate", 0.5) for a in members for b in members if a != b
        )
    return edges


def lexical_edges(documents: list[Document]) -> list[Edge]:
    """The edge classifier's decisions over the whole corpus."""
    return [decision.to_edge() for decision in classify_corpus(documents)]


def gold_pairs(question: dict[str, object], index_of: dict[tuple[str, str], int]) -> list[set[str]]:
    """Consecutive supporting passages of a question, in the order its decomposition uses them."""
    paragraphs = question["paragraphs"]
    steps = question["question_decomposition"]
    assert isinstance(paragraphs, list)
    assert isinstance(steps, list)
    ordered = []
    for step in steps:
        paragraph = paragraphs[step["paragraph_support_idx"]]
        ordered.append(str(index_of[(paragraph["title"], paragraph["paragraph_text"])]))
    return [{a, b} for a, b in itertools.pairwise(ordered) if a != b]


def edge_recall(edges: list[Edge], pairs: list[set[str]]) -> float:
    joined = {frozenset((edge.source, edge.target)) for edge in edges}
    return 100 * sum(frozenset(pair) in joined for pair in pairs) / max(1, len(pairs))


def supporting_ids(question: dict[str, object], index_of: dict[tuple[str, str], int]) -> set[str]:
    paragraphs = question["paragraphs"]
    assert isinstance(paragraphs, list)
    return {
        str(index_of[(p["title"], p["paragraph_text"])]) for p in paragraphs if p["is_supporting"]
    }


def recall(ranked: list[str], gold: set[str], k: int) -> float:
    return len(set(ranked[:k]) & gold) / len(gold)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument(
        "--out", type=Path, default=ROOT / "bench" / "results" / "musique_bench.json"
    )
    parser.add_argument("--budget", type=int, default=5)
    args = parser.parse_args()

    corpus, questions = load(args.data)
    index_of = {(p["title"], p["text"]): i for i, p in enumerate(corpus)}
    documents = [Document(str(i), p["title"], p["text"]) for i, p in enumerate(corpus)]
    pairs = [pair for question in questions for pair in gold_pairs(question, index_of)]
    sources: dict[str, list[Edge]] = {}
    edge_rows = []
    makers: tuple[tuple[str, Callable[[], list[Edge]]], ...] = (
        ("title", lambda: title_mention_edges(corpus)),
        ("lexical", lambda: lexical_edges(documents)),
    )
    for source, make in makers:
        started = time.perf_counter()
        sources[source] = make()
        seconds_to_make = time.perf_counter() - started
        edge_rows.append(
            {
                "source": source,
                "edges": len(sources[source]),
                "edges_per_document": len(sources[source]) / len(documents),
                "edge_recall": edge_recall(sources[source], pairs),
                "seconds": seconds_to_make,
            }
        )
        print(
            f"{source} edges: {len(sources[source])} ({seconds_to_make:.2f} s),"
            f" edge recall on {len(pairs)} gold pairs {edge_rows[-1]['edge_recall']:.1f}"
        )
    graphs = {source: CorpusGraph.build(documents, edges) for source, edges in sources.items()}
    names = ["bm25"] + [f"{s}_{d}" for s in sources for d in ("out", "both")]
    systems: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
    seconds = dict.fromkeys(systems, 0.0)
    any_graph = graphs["title"]
    for number, question in enumerate(questions, 1):
        query = str(question["question"])
        gold = supporting_ids(question, index_of)

        started = time.perf_counter()
        relevance = query_view(any_graph, query, DEFAULT_PARAMS).relevance
        order = np.lexsort((np.arange(len(relevance)), -relevance))[: args.budget]
        bm25 = [any_graph.ids[i] for i in order if relevance[i] > 0]
        seconds["bm25"] += time.perf_counter() - started
        systems["bm25"].append((recall(bm25, gold, 2), recall(bm25, gold, 5)))

        for source, graph in graphs.items():
            for direction in ("out", "both"):
                name = f"{source}_{direction}"
                started = time.perf_counter()
                walk = navigate(graph, query, budget=args.budget, direction=direction)
                seconds[name] += time.perf_counter() - started
                path = [hit.id for hit in walk.hits]
                systems[name].append((recall(path, gold, 2), recall(path, gold, 5)))
        if number % 25 == 0:
            print(f"  {number}/{len(questions)} questions")

    rows = []
    base2, base5 = (100 * float(np.mean([r[k] for r in systems["bm25"]])) for k in (0, 1))
    print(f"\n{'system':<13} {'recall@2':>9} {'recall@5':>9} {'@5 vs bm25':>11} {'ms/query':>9}")
    for name, results in systems.items():
        at2 = 100 * float(np.mean([r[0] for r in results]))
        at5 = 100 * float(np.mean([r[1] for r in results]))
        per_query = 1000 * seconds[name] / len(questions)
        ratio = at5 / base5 if base5 else float("nan")
        print(f"{name:<13} {at2:>9.1f} {at5:>9.1f} {ratio:>10.3f}x {per_query:>9.1f}")
        rows.append({"system": name, "recall@2": at2, "recall@5": at5, "ms_per_query": per_query})
    print(f"(bm25 recall@2 {base2:.1f}; published anchors on the full dev set: BM25 32.3 / 41.2)")

    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "documents": len(documents),
                "edge_sources": edge_rows,
                "gold_pairs": len(pairs),
                "questions": len(questions),
                "budget": args.budget,
                "results": rows,
            },
            indent=2,
        )
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
