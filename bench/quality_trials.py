"""Seed, walk and classifier choices, one trial at a time, on the engine (`bench/quality.py`).

Each trial varies one choice from the configuration kept so far, starting from the configuration
before the first trial (direction `out`, titles mentioned only as written). The variant kept for a trial is
the best on the `tune` half (recall@5, then recall@2); it replaces the current choice only if it
beats it on `tune` and helps on the `held_out` half: recall@5 higher by more than one passage's
worth (ONE_PASSAGE) and recall@2 not lower. Every trial and its verdict
is printed; bench/README.md records them.

Usage: python bench/quality_trials.py [--data DIR] [--format musique|simple]
"""

from __future__ import annotations

import argparse
import dataclasses
import re
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict, Unpack

import numpy as np
import quality
from mnemo_mdn import DEFAULT_PARAMS, Edge, MdnParams, edge_classification
from mnemo_mdn import mdn_mode as mdn_mode_module
from mnemo_mdn.edge_classification import FUNCTION_WORDS, ClassifierOptions, TextDocument
from mnemo_mdn.frontier import Direction, Frontier
from mnemo_mdn.lexical_index import LexicalIndex, classify_corpus
from mnemo_mdn.walk import Step, Walk, WalkInputs, earliest_best

QUALIFIERS: dict[str, re.Pattern[str]] = {
    "none": re.compile(r"(?!)"),  # before trial 7: a title is mentioned only as written
    "parenthesised": edge_classification.QUALIFIER,
    "parenthesised or after a comma": re.compile(r"\([^()]*\)|,.*"),
}
"""What a title's qualifier is (`edge_classification.QUALIFIER`): the title without it is a name
the document is also mentioned by."""


@dataclass(frozen=True)
class Config:
    params: MdnParams = DEFAULT_PARAMS
    direction: Direction = "out"
    restart: str = "relevance"  # or "gain"
    max_links: int = 10
    qualifier: str = "none"
    title_parts: bool = False
    name_parts: str = "none"  # or "every part", "the last part"


@contextmanager
def qualifier_rule(name: str) -> Iterator[None]:
    """The classifier reading titles with another qualifier pattern (a constant of the module,
    swapped in its namespace for the trial)."""
    namespace = vars(edge_classification)
    original = namespace["QUALIFIER"]
    namespace["QUALIFIER"] = QUALIFIERS[name]
    try:
        yield
    finally:
        namespace["QUALIFIER"] = original


def names_with_parts(text: str, which: str) -> set[str]:
    """Trial 9's rule (not kept): a name's parts between connector words are names too
    (`Duke of Mecklenburg` also gives `duke` and `mecklenburg`; or only the last part)."""
    names: set[str] = ORIGINAL_NAMES(text)
    found = set(names)
    for name in names:
        parts: list[list[str]] = [[]]
        for word in name.split():
            if word in edge_classification.NAME_CONNECTORS:
                parts.append([])
            else:
                parts[-1].append(word)
        joined = [" ".join(part) for part in parts if part]
        if len(joined) > 1:
            found.update(joined if which == "every part" else joined[-1:])
    return found


ORIGINAL_NAMES = edge_classification._names


@contextmanager
def name_rule(which: str) -> Iterator[None]:
    namespace = vars(edge_classification)
    if which != "none":
        namespace["_names"] = lambda text: names_with_parts(text, which)
    try:
        yield
    finally:
        namespace["_names"] = ORIGINAL_NAMES


_NAME_WORD = re.compile(r"[^\W_]+")


def _name_parts(text: str) -> set[str]:
    """Runs of capitalised words (or numbers) that punctuation and function words end, lowercased:
    `Nicholas I, Lord of Mecklenburg` gives `nicholas`, `lord`, `mecklenburg` (one-letter words
    are no tokens)."""
    parts: set[str] = set()
    run: list[str] = []
    previous_end = -1

    def close() -> None:
        if run:
            parts.add(" ".join(w.lower() for w in run))
        run.clear()

    for match in _NAME_WORD.finditer(text):
        word = match.group()
        if run and text[previous_end : match.start()].strip(" ") != "":
            close()
        named = word[0].isupper() or word[0].isdigit()
        if named and word.lower() not in FUNCTION_WORDS and (len(word) >= 2 or ord(word) >= 0x80):
            run.append(word)
        else:
            close()
        previous_end = match.end()
    close()
    return parts


def title_part_edges(documents: Sequence[TextDocument]) -> list[Edge]:
    """Trial 8's rule (not kept): a document citing another by a part of its title, e.g. a passage
    naming `Kansas` cites `Kansas's congressional districts`. A part is a name run of the title
    without its qualifier (not the whole title) that the titled document also names on its own in
    its text; the citing document names it as a whole run; weight `1/m`, `m` the documents whose
    title has that part."""
    index = LexicalIndex(documents)
    named = [_name_parts(f"{d.title}\n\n{d.body or ''}") for d in documents]
    in_body = [_name_parts(d.body or "") for d in documents]
    holders: dict[str, set[int]] = defaultdict(set)
    for position, parts in enumerate(named):
        for part in parts:
            holders[part].add(position)
    titled: dict[str, set[int]] = defaultdict(set)
    for position, document in enumerate(documents):
        alias = edge_classification.QUALIFIER.sub(" ", document.title)
        for part in _name_parts(alias) - {index.keys[position].title_key}:
            if part in in_body[position]:
                titled[part].add(position)
    edges = []
    for part, cited in sorted(titled.items()):
        for target in sorted(cited):
            for source in sorted(holders[part] - {target}):
                if part in index.keys[source].title_names:
                    continue
                share = 1.0 / len(cited)
                edges.append(Edge(documents[source].id, documents[target].id, "cite", share))
    return edges


def gain_restart_walk(inputs: WalkInputs) -> Walk:
    """`mdn_mode.walk` with one change: when no frontier document is informative, restart on the
    unselected document with the best `g(d|S)·π(d)` among those whose gain is at least ε (new
    query words), falling back on the best `r(d)·π(d)` only when none has such a gain."""
    graph, view, params = inputs.graph, inputs.view, inputs.params
    pi = mdn_mode_module.trust(inputs)
    rank = view.relevance * pi
    candidates = view.candidates
    candidate_rank = rank[candidates]
    candidate_pi = pi[candidates]
    matching = view.relevance[candidates] > 0.0
    if inputs.seed is not None:
        first = mdn_mode_module.seed_document(graph, inputs.seed)
    else:
        best = earliest_best(candidate_rank, matching)
        if best is None:
            return Walk((), mdn_mode_module.NO_MATCH)
        first = int(candidates[best])
    selected = np.zeros(graph.n_documents, dtype=bool)
    unselected = np.ones(len(candidates), dtype=bool)
    covered = np.zeros(len(view.terms), dtype=bool)
    frontier = Frontier(graph, inputs.direction, params.negative_link_factor)
    seed_row = int(view.rows_of(np.array([first]))[0])
    seed_gain = float(view.gains(covered)[seed_row]) if seed_row >= 0 else 0.0
    steps = [Step(document=first, score=float(rank[first]), gain=seed_gain)]

    def select(document: int, row: int) -> None:
        selected[document] = True
        if row >= 0:
            unselected[row] = False
            covered[:] |= view.contains[row]
        frontier.add(document)

    select(first, seed_row)
    reason = mdn_mode_module.BUDGET_REACHED
    while len(steps) < inputs.budget:
        gains = view.gains(covered)
        strength = frontier.strength[candidates]
        informative = unselected & (strength > 0.0) & (gains >= params.epsilon)
        row = earliest_best(gains * strength * candidate_pi, informative)
        restart = row is None
        if row is None:
            row = earliest_best(gains * candidate_pi, unselected & (gains >= params.epsilon))
        if row is None:
            row = earliest_best(candidate_rank, unselected & matching)
            if row is None:
                reason = mdn_mode_module.NO_MATCH_LEFT
                break
        document = int(candidates[row])
        steps.append(
            Step(
                document=document,
                score=float(gains[row] * candidate_pi[row]),
                gain=float(gains[row]),
                via_edge=-1 if restart else int(frontier.via_edge[document]),
                via_from=-1 if restart else int(frontier.via_from[document]),
                restart=restart,
            )
        )
        select(document, row)
    return Walk(tuple(steps), reason)


@contextmanager
def restart_rule(name: str) -> Iterator[None]:
    original = mdn_mode_module.walk
    if name == "gain":
        mdn_mode_module.walk = gain_restart_walk
    try:
        yield
    finally:
        mdn_mode_module.walk = original


class Trials:
    def __init__(self, dataset: quality.Dataset) -> None:
        self.dataset = dataset
        self._edges: dict[tuple[int, str, bool, str], list[Edge]] = {}
        self.rows: list[dict[str, Any]] = []

    def edges(self, config: Config) -> list[Edge]:
        key = (config.max_links, config.qualifier, config.title_parts, config.name_parts)
        if key not in self._edges:
            options = ClassifierOptions(max_links=config.max_links)
            documents = [TextDocument(d.id, d.title, d.body) for d in self.dataset.documents()]
            with qualifier_rule(config.qualifier), name_rule(config.name_parts):
                edges = [d.to_edge() for d in classify_corpus(documents, options)]
                if config.title_parts:
                    edges = merged(edges, title_part_edges(documents))
            self._edges[key] = edges
        return self._edges[key]

    def score(self, config: Config) -> dict[str, tuple[float, float]]:
        with restart_rule(config.restart):
            results, _ = quality.run_engine(
                self.dataset,
                params=config.params,
                direction=config.direction,
                edges=self.edges(config),
            )
        return {split: results.mean("navigate", split) for split in ("tune", "held_out", "all")}

    def trial(self, name: str, current: Config, variants: Sequence[tuple[str, Config]]) -> Config:
        base = self.score(current)
        scored = [(label, config, self.score(config)) for label, config in variants]
        label, best, score = max(scored, key=lambda s: (s[2]["tune"][1], s[2]["tune"][0]))
        held, held_base = score["held_out"], base["held_out"]
        better_on_tune = (score["tune"][1], score["tune"][0]) > (base["tune"][1], base["tune"][0])
        kept = better_on_tune and held[1] > held_base[1] + ONE_PASSAGE and held[0] >= held_base[0]
        print(f"\n== {name}")
        print(f"  current: tune {fmt(base['tune'])}  held-out {fmt(base['held_out'])}")
        for variant, _, s in scored:
            print(f"  {variant:<28} tune {fmt(s['tune'])}  held-out {fmt(s['held_out'])}")
        verdict = "kept" if kept else "not kept"
        if not better_on_tune:
            verdict += " (no variant beats the current choice on tune)"
        print(f"  best on tune: {label} -> {verdict}")
        self.rows.append(
            {
                "trial": name,
                "current": base,
                "variants": {v: s for v, _, s in scored},
                "best_on_tune": label,
                "kept": kept,
            }
        )
        return best if kept else current


def merged(edges: Sequence[Edge], extra: Sequence[Edge]) -> list[Edge]:
    """`edges` and `extra`, one edge per (source, target, type): the heavier."""
    best: dict[tuple[str, str, str], Edge] = {}
    for edge in (*edges, *extra):
        key = (edge.source, edge.target, edge.etype)
        if key not in best or edge.weight > best[key].weight:
            best[key] = edge
    return [best[key] for key in sorted(best)]


ONE_PASSAGE = 1.0
"""Recall@5 points one more supporting passage of one two-hop question adds on a 50-question
half: a change must find more than that on `held_out` to be kept (one passage is noise)."""


def fmt(pair: tuple[float, float]) -> str:
    return f"@2 {pair[0]:5.1f} @5 {pair[1]:5.1f}"


class ParamChanges(TypedDict, total=False):
    """The float `MdnParams` fields the trials vary."""

    bm25_k1: float
    bm25_b: float
    trust_weight: float


def with_params(config: Config, **changes: Unpack[ParamChanges]) -> Config:
    return dataclasses.replace(config, params=dataclasses.replace(config.params, **changes))


TRIALS: list[tuple[str, Callable[[Config], list[tuple[str, Config]]]]] = [
    ("1 direction", lambda c: [("both", dataclasses.replace(c, direction="both"))]),
    (
        "2 restart rule",
        lambda c: [("best g·π, gain >= ε", dataclasses.replace(c, restart="gain"))],
    ),
    ("3 BM25 k1", lambda c: [(f"k1={v}", with_params(c, bm25_k1=v)) for v in (0.9, 1.5, 2.0)]),
    ("4 BM25 b", lambda c: [(f"b={v}", with_params(c, bm25_b=v)) for v in (0.5, 0.9)]),
    (
        "5 κ (trust weight)",
        lambda c: [(f"κ={v}", with_params(c, trust_weight=v)) for v in (0.0, 0.25, 0.75)],
    ),
    (
        "6 classifier max_links",
        lambda c: [(f"max_links={v}", dataclasses.replace(c, max_links=v)) for v in (5, 20)],
    ),
    (
        "7 title without its qualifier",
        lambda c: [
            (name, dataclasses.replace(c, qualifier=name)) for name in QUALIFIERS if name != "none"
        ],
    ),
    (
        "8 title parts",
        lambda c: [("cited by a title part", dataclasses.replace(c, title_parts=True))],
    ),
    (
        "9 name parts",
        lambda c: [
            (which, dataclasses.replace(c, name_parts=which))
            for which in ("every part", "the last part")
        ],
    ),
]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--data", type=Path, default=quality.DEFAULT_DATA)
    parser.add_argument("--format", choices=sorted(quality.LOADERS), default="musique")
    args = parser.parse_args(argv)
    trials = Trials(quality.LOADERS[args.format](args.data))
    config = Config()
    for name, variants in TRIALS:
        config = trials.trial(name, config, variants(config))
    final = trials.score(config)
    print(f"\nkept: {config}")
    print(
        f"final: tune {fmt(final['tune'])}  held-out {fmt(final['held_out'])}  all {fmt(final['all'])}"
    )


if __name__ == "__main__":
    main()
