"""Seed and walk choices, one trial at a time, on the engine (`bench/quality.py --mode engine`).

Each trial varies one choice from the configuration kept so far. The variant kept for a trial is
the best on the `tune` half (recall@5, then recall@2); it replaces the current choice only if it
beats it on `tune` and helps on the `held_out` half: recall@5 higher by more than one passage's
worth (ONE_PASSAGE) and recall@2 not lower. Every trial and its verdict
is printed; bench/README.md records them.

Usage: python bench/quality_trials.py [--data DIR] [--format musique|simple]
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict, Unpack

import numpy as np
import quality
from mnemo_mdn import DEFAULT_PARAMS, Edge, MdnParams
from mnemo_mdn import mdn_mode as mdn_mode_module
from mnemo_mdn.edge_classification import ClassifierOptions
from mnemo_mdn.frontier import Direction, Frontier
from mnemo_mdn.lexical_index import classify_corpus
from mnemo_mdn.walk import Step, Walk, WalkInputs, earliest_best


@dataclass(frozen=True)
class Config:
    params: MdnParams = DEFAULT_PARAMS
    direction: Direction = "out"
    restart: str = "relevance"  # or "gain"
    max_links: int = 10


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
        self._edges: dict[int, list[Edge]] = {}
        self.rows: list[dict[str, Any]] = []

    def edges(self, max_links: int) -> list[Edge]:
        if max_links not in self._edges:
            options = ClassifierOptions(max_links=max_links)
            self._edges[max_links] = [
                d.to_edge() for d in classify_corpus(self.dataset.documents(), options)
            ]
        return self._edges[max_links]

    def score(self, config: Config) -> dict[str, tuple[float, float]]:
        with restart_rule(config.restart):
            results, _ = quality.run_engine(
                self.dataset,
                params=config.params,
                direction=config.direction,
                edges=self.edges(config.max_links),
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
