"""Seed, walk and classifier rules, one trial at a time, on both vendored datasets (the ledger).

Every trial runs the engine (`bench/quality.py`) on MuSiQue and on 2WikiMultiHopQA. Each varies one
choice from the configuration kept so far, starting from the configuration before the first trial
(direction `out`, titles mentioned only as written, no title-named seeding). The variant a trial
proposes is the best on the two `tune` halves together (recall@5 summed over the datasets, then
recall@2); it replaces the current choice only if it beats it there, does not lose on either
dataset's `held_out` half (neither recall@5 nor recall@2 lower by one passage's worth or more:
ONE_PASSAGE on a half of that size) and helps on at least one (recall@5 higher by more than one
passage's worth). The trials run twice (PASSES): the second pass judges every choice again given
all those the first kept, as the order of the first decided what each was compared with; then each
kept rule is judged once more by removing it from the final configuration (ablations). Every trial
and its verdict is printed; `--markdown` prints the ledger table
bench/README.md keeps; `--out` writes it as JSON.

`--product` runs no trial: it judges the rules the product carries (PRODUCT, the constants of
`mnemo_mdn` and the classifier as they are) by removing each from that configuration, one at a
time (`--rule` picks some): a rule the product keeps should beat its removal by the ledger's
verdict, and one whose removal loses on neither held-out half is a candidate to take out.

Usage: python bench/quality_trials.py [--markdown] [--out FILE]
       python bench/quality_trials.py --product [--rule NAME ...] [--markdown] [--out FILE]
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
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
from mnemo_mdn import frontier as frontier_module
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
    backward: float = 1.0  # frontier.BACKWARD_WEIGHT with direction `both` (before trial 1: 1)
    restart: str = "relevance"  # or "gain", "uncovered mass"
    max_links: int = 10
    qualifier: str = "none"
    title_parts: bool = False
    name_parts: str = "none"  # or "every part", "the last part"
    named_boost: float = 0.0  # mdn_mode.NAMED_BOOST (before trial 10: none)
    named_first: bool = False  # mdn_mode.NAMED_FIRST (before trial 11: off)
    shared_links: str = "classifier"  # or "rare entities, df <= N", "weight x F"
    held_credit: float = 0.0  # mdn_mode.HELD_CREDIT (before trial 15: none)


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


MASS_SHARE = 0.25
"""Trial 12: a frontier step covering less than this share of the best open gain restarts."""


def uncovered_mass_walk(inputs: WalkInputs) -> Walk:
    """`mdn_mode.walk` (title-named documents included) with one change, trial 12: a frontier step
    is replaced by a restart when the frontier's best document adds less than MASS_SHARE of the
    query mass (`g(d|S)`) the unselected document with the largest `g·π` would add: the walk
    leaves a neighbourhood that no longer covers the question for what covers most of the rest."""
    graph, view, params = inputs.graph, inputs.view, inputs.params
    candidates = view.candidates
    candidate_pi = mdn_mode_module.trust(inputs)[candidates]
    relevance = view.relevance.copy()
    relevance[candidates[inputs.named]] *= 1.0 + mdn_mode_module.NAMED_BOOST
    rank = relevance * mdn_mode_module.trust(inputs)
    candidate_rank = rank[candidates]
    matching = view.relevance[candidates] > 0.0
    best = earliest_best(candidate_rank, matching)
    if best is None:
        return Walk((), mdn_mode_module.NO_MATCH)
    first = int(candidates[best])
    unselected = np.ones(len(candidates), dtype=bool)
    covered = np.zeros(len(view.terms), dtype=bool)
    frontier = Frontier(graph, inputs.direction, params.negative_link_factor)
    steps = [Step(document=first, score=float(rank[first]), gain=0.0)]

    def select(document: int, row: int) -> None:
        if row >= 0:
            unselected[row] = False
            covered[:] |= view.contains[row]
        frontier.add(document)

    select(first, int(view.rows_of(np.array([first]))[0]))
    while len(steps) < inputs.budget:
        gains = view.gains(covered)
        strength = frontier.strength[candidates]
        informative = unselected & (strength > 0.0) & (gains >= params.epsilon)
        open_rows = unselected & (gains >= params.epsilon)
        named = unselected & inputs.named & open_rows if mdn_mode_module.NAMED_FIRST else None
        if named is not None and named.any():
            row = earliest_best(gains * strength * candidate_pi, informative & named)
            restart = row is None
            if restart:
                row = earliest_best(candidate_rank, named)
        else:
            row = earliest_best(gains * strength * candidate_pi, informative)
            restart = row is None
            widest = earliest_best(gains * candidate_pi, open_rows)
            if row is not None and widest is not None and gains[row] < MASS_SHARE * gains[widest]:
                row, restart = widest, True
        if row is None:
            row = earliest_best(candidate_rank, unselected & matching)
            if row is None:
                break
        document = int(candidates[row])
        steps.append(
            Step(
                document=document,
                score=0.0,
                gain=float(gains[row]),
                via_edge=-1 if restart else int(frontier.via_edge[document]),
                via_from=-1 if restart else int(frontier.via_from[document]),
                restart=restart,
            )
        )
        select(document, row)
    return Walk(tuple(steps), mdn_mode_module.BUDGET_REACHED)


@contextmanager
def walk_rules(config: Config) -> Iterator[None]:
    """The walk the config asks for: its restart rule, the title-named rules and the credit of
    documents adding no query term (module constants of `mdn_mode`), and the weight of a link
    followed backward (`frontier.BACKWARD_WEIGHT`), swapped in their namespaces for the run."""
    namespace = vars(mdn_mode_module)
    original = dict(namespace)
    frontier_namespace = vars(frontier_module)
    backward = frontier_namespace["BACKWARD_WEIGHT"]
    namespace["NAMED_BOOST"] = config.named_boost
    namespace["NAMED_FIRST"] = config.named_first
    namespace["HELD_CREDIT"] = config.held_credit
    frontier_namespace["BACKWARD_WEIGHT"] = config.backward
    if config.restart == "gain":
        namespace["walk"] = gain_restart_walk
    elif config.restart == "uncovered mass":
        namespace["walk"] = uncovered_mass_walk
    try:
        yield
    finally:
        for name in ("NAMED_BOOST", "NAMED_FIRST", "HELD_CREDIT", "walk"):
            namespace[name] = original[name]
        frontier_namespace["BACKWARD_WEIGHT"] = backward


def rare_entity_links(documents: Sequence[TextDocument], most: int) -> list[Edge]:
    """Trial 13's links: documents sharing a name (a run of capitalised words, the classifier's
    `_names`, titles included) that at most `most` documents hold, each link weighted by rarity,
    `1/(df − 1)`, shared names combined as `1 − Π(1 − w)`; one `elaborate` edge per pair, from the
    earlier document."""
    index = LexicalIndex(documents)
    holders: dict[str, list[int]] = defaultdict(list)
    for position, keys in enumerate(index.keys):
        for name in keys.names | ({keys.title_key} - {""}):
            holders[name].append(position)
    missing: dict[tuple[int, int], float] = defaultdict(lambda: 1.0)
    for name in sorted(holders):
        found = index.holders(name)
        if not 2 <= len(found) <= most:
            continue
        share = 1.0 / (len(found) - 1)
        for a, b in itertools.combinations(found, 2):
            missing[(a, b)] *= 1.0 - share
    return [
        Edge(documents[a].id, documents[b].id, "elaborate", 1.0 - left)
        for (a, b), left in sorted(missing.items())
        if left < 1.0
    ]


CITING_TYPES = frozenset({"cite", "supersede", "contradict"})


def shared_links(edges: Sequence[Edge], documents: Sequence[TextDocument], rule: str) -> list[Edge]:
    """The classifier's edges with its shared-key links (`elaborate`, `corroborate`) replaced by
    trial 13's rare entity links, or weighed down (trial 14)."""
    if rule == "classifier":
        return list(edges)
    if rule.startswith("rare entities"):
        most = int(rule.rsplit(" ", 1)[1])
        kept = [e for e in edges if e.etype in CITING_TYPES]
        return merged(kept, rare_entity_links(documents, most))
    factor = float(rule.rsplit(" ", 1)[1])
    return [
        e if e.etype in CITING_TYPES else Edge(e.source, e.target, e.etype, e.weight * factor)
        for e in edges
    ]


Scores = dict[str, dict[str, tuple[float, float]]]  # dataset → split → (recall@2, recall@5)


class Trials:
    def __init__(self, datasets: dict[str, quality.Dataset]) -> None:
        self.datasets = datasets
        self._edges: dict[tuple[str, int, str, bool, str, str], list[Edge]] = {}
        self._scores: dict[Config, Scores] = {}
        self.rows: list[dict[str, Any]] = []

    def edges(self, name: str, config: Config) -> list[Edge]:
        key = (
            name,
            config.max_links,
            config.qualifier,
            config.title_parts,
            config.name_parts,
            config.shared_links,
        )
        if key not in self._edges:
            options = ClassifierOptions(max_links=config.max_links)
            documents = [
                TextDocument(d.id, d.title, d.body) for d in self.datasets[name].documents()
            ]
            with qualifier_rule(config.qualifier), name_rule(config.name_parts):
                edges = [d.to_edge() for d in classify_corpus(documents, options)]
                if config.title_parts:
                    edges = merged(edges, title_part_edges(documents))
                edges = shared_links(edges, documents, config.shared_links)
            self._edges[key] = edges
        return self._edges[key]

    def edges_per_document(self, config: Config) -> dict[str, float]:
        return {
            name: len(self.edges(name, config)) / len(dataset.passages)
            for name, dataset in self.datasets.items()
        }

    def score(self, config: Config) -> Scores:
        if config not in self._scores:
            scores: Scores = {}
            for name, dataset in self.datasets.items():
                with walk_rules(config):
                    results, _ = quality.run_engine(
                        dataset,
                        params=config.params,
                        direction=config.direction,
                        edges=self.edges(name, config),
                    )
                scores[name] = {
                    split: results.mean("navigate", split) for split in ("tune", "held_out", "all")
                }
            self._scores[config] = scores
        return self._scores[config]

    def one_passage(self, name: str) -> float:
        """Recall points one supporting passage of one two-hop question is worth on a half."""
        half = len(self.datasets[name].questions) / 2
        return 100.0 / (2 * half)

    def tune(self, scores: Scores) -> tuple[float, float]:
        """Recall@5, then @2, summed over the datasets' tune halves (what a trial ranks by)."""
        return (
            sum(s["tune"][1] for s in scores.values()),
            sum(s["tune"][0] for s in scores.values()),
        )

    def losses(self, base: Scores, score: Scores) -> list[str]:
        """The datasets whose held-out half `score` reads lower than `base` by one passage's worth
        or more, at recall@5 or @2."""
        return [
            name
            for name in self.datasets
            if any(
                score[name]["held_out"][k] <= base[name]["held_out"][k] - self.one_passage(name)
                for k in (0, 1)
            )
        ]

    def verdict(self, base: Scores, score: Scores) -> tuple[bool, str]:
        if self.tune(score) <= self.tune(base):
            return False, "not better on tune"
        losses = self.losses(base, score)
        if losses:
            return False, f"loses on held-out ({', '.join(losses)})"
        helps = [
            name
            for name in self.datasets
            if score[name]["held_out"][1] > base[name]["held_out"][1] + self.one_passage(name)
        ]
        if not helps:
            return False, "no help on held-out beyond one passage"
        return True, f"helps on held-out ({', '.join(helps)}), loses on neither"

    def trial(self, name: str, current: Config, variants: Sequence[tuple[str, Config]]) -> Config:
        base = self.score(current)
        scored = [
            (label, config, self.score(config)) for label, config in variants if config != current
        ]
        label, best, score = max(scored, key=lambda s: self.tune(s[2]))
        kept, why = self.verdict(base, score)
        print(f"\n== {name}")
        print(f"  {'current':<32} {line(base)}")
        for variant, _, s in scored:
            print(f"  {variant:<32} {line(s)}")
        print(f"  best on tune: {label} -> {'kept' if kept else 'not kept'} ({why})")
        self.rows.append(
            {
                "trial": name,
                "current": base,
                "current_edges_per_document": self.edges_per_document(current),
                "variants": {
                    v: {"scores": s, "edges_per_document": self.edges_per_document(c)}
                    for v, c, s in scored
                },
                "best_on_tune": label,
                "kept": kept,
                "why": why,
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


def fmt(pair: tuple[float, float]) -> str:
    return f"@2 {pair[0]:5.1f} @5 {pair[1]:5.1f}"


def line(scores: Scores) -> str:
    return "  ".join(
        f"{name}: tune {fmt(s['tune'])} held-out {fmt(s['held_out'])}" for name, s in scores.items()
    )


class ParamChanges(TypedDict, total=False):
    """The float `MdnParams` fields the trials vary."""

    bm25_k1: float
    bm25_b: float
    trust_weight: float


def with_params(config: Config, **changes: Unpack[ParamChanges]) -> Config:
    return dataclasses.replace(config, params=dataclasses.replace(config.params, **changes))


def replaced(c: Config, **changes: Any) -> Config:
    return dataclasses.replace(c, **changes)


TRIALS: list[tuple[str, Callable[[Config], list[tuple[str, Config]]]]] = [
    (
        "1 direction",
        lambda c: [
            ("out", replaced(c, direction="out", backward=1.0)),
            *(
                (f"both, backward x {v:g}", replaced(c, direction="both", backward=v))
                for v in (1.0, 0.5, 0.25)
            ),
        ],
    ),
    (
        "2 restart rule",
        lambda c: [
            ("best r·π", replaced(c, restart="relevance")),
            ("best g·π, gain >= ε", replaced(c, restart="gain")),
        ],
    ),
    ("3 BM25 k1", lambda c: [(f"k1={v}", with_params(c, bm25_k1=v)) for v in (0.9, 1.2, 1.5, 2.0)]),
    ("4 BM25 b", lambda c: [(f"b={v}", with_params(c, bm25_b=v)) for v in (0.5, 0.75, 0.9)]),
    (
        "5 κ (trust weight)",
        lambda c: [(f"κ={v}", with_params(c, trust_weight=v)) for v in (0.0, 0.25, 0.5, 0.75)],
    ),
    (
        "6 classifier max_links",
        lambda c: [(f"max_links={v}", replaced(c, max_links=v)) for v in (5, 10, 20)],
    ),
    (
        "7 title without its qualifier",
        lambda c: [(name, replaced(c, qualifier=name)) for name in QUALIFIERS],
    ),
    (
        "8 title parts",
        lambda c: [
            ("titles only", replaced(c, title_parts=False)),
            ("cited by a title part", replaced(c, title_parts=True)),
        ],
    ),
    (
        "9 name parts",
        lambda c: [
            (which, replaced(c, name_parts=which))
            for which in ("none", "every part", "the last part")
        ],
    ),
    (
        "10 title-named seeding",
        lambda c: [
            (f"named: r x {1 + v:g}", replaced(c, named_boost=v)) for v in (0.0, 0.5, 1.0, 2.0)
        ],
    ),
    (
        "11 title-named documents first",
        lambda c: [
            ("named first: off", replaced(c, named_first=False)),
            ("named first", replaced(c, named_first=True)),
        ],
    ),
    (
        "12 restart on uncovered query mass",
        lambda c: [
            ("restart only when no frontier", replaced(c, restart="relevance")),
            (f"frontier gain < {MASS_SHARE:g} of best", replaced(c, restart="uncovered mass")),
        ],
    ),
    (
        "13 rare shared entities",
        lambda c: [
            ("classifier's shared keys", replaced(c, shared_links="classifier")),
            *((f"df <= {v}", replaced(c, shared_links=f"rare entities {v}")) for v in (3, 5)),
        ],
    ),
    (
        "14 shared-key links weigh less",
        lambda c: [
            ("classifier's weights", replaced(c, shared_links="classifier")),
            *((f"weight x {v:g}", replaced(c, shared_links=f"weight x {v}")) for v in (0.25, 0.5)),
        ],
    ),
    (
        "15 linked documents adding no query term",
        lambda c: [
            ("unreachable (gain < ε)", replaced(c, held_credit=0.0)),
            *((f"step worth {v:g}·q(d)", replaced(c, held_credit=v)) for v in (0.1, 0.3, 0.5)),
        ],
    ),
]
"""Each trial's options; the one equal to the current configuration is its `current` row."""

PASSES = 2
"""The trials run twice: the second pass judges every choice again given all the others kept."""

SHORT = {"musique": "MuSiQue", "twowiki": "2Wiki"}


def markdown(trials: Trials) -> str:
    """The ledger: one row per trial's current choice and per variant."""

    def cells(scores: Scores, per_document: dict[str, float]) -> str:
        recall = " | ".join(
            f"{scores[n]['tune'][1]:.1f} / {scores[n]['tune'][0]:.1f} | "
            f"{scores[n]['held_out'][1]:.1f} / {scores[n]['held_out'][0]:.1f}"
            for n in trials.datasets
        )
        edges = " / ".join(f"{per_document[n]:.1f}" for n in trials.datasets)
        return f"{recall} | {edges}"

    names = list(trials.datasets)
    header = " | ".join(f"{SHORT[n]} tune | {SHORT[n]} held-out" for n in names)
    rows = [
        f"| rule | {header} | edges/doc | kept |",
        "|---|" + "---:|" * (2 * len(names) + 1) + "---|",
    ]
    for row in trials.rows:
        current = cells(row["current"], row["current_edges_per_document"])
        rows.append(f"| **{row['trial']}**: current | {current} | |")
        for variant, measured in row["variants"].items():
            verdict = ""
            if variant == row["best_on_tune"]:
                verdict = f"**{'yes' if row['kept'] else 'no'}**: {row['why']}"
            rows.append(
                f"| {variant} | {cells(measured['scores'], measured['edges_per_document'])} "
                f"| {verdict} |"
            )
    return "\n".join(rows)


def ablations(trials: Trials, kept: Config) -> None:
    """Each kept rule judged again against the final configuration: the final configuration
    with that one choice back to its value before the trial, by the same verdict."""
    before = Config()
    judged: set[tuple[str, ...]] = set()
    for row in trials.rows:
        if not row["kept"]:
            continue
        changed = {
            f.name: getattr(before, f.name)
            for f in dataclasses.fields(Config)
            if getattr(kept, f.name) != getattr(before, f.name) and f.name in row.get("fields", ())
        }
        if not changed or tuple(changed) in judged:
            continue
        judged.add(tuple(changed))
        without = dataclasses.replace(kept, **changed)
        base, score = trials.score(without), trials.score(kept)
        stands, why = trials.verdict(base, score)
        print(f"\n== without {row['trial']} ({', '.join(changed)} as before the trial)")
        print(f"  {'without':<32} {line(base)}")
        print(f"  {'kept':<32} {line(score)}")
        print(f"  the rule {'stands' if stands else 'does not stand'} ({why})")
        row["ablation"] = {"without": base, "stands": stands, "why": why}


PRODUCT = Config(
    direction=quality.DIRECTION,
    backward=frontier_module.BACKWARD_WEIGHT,
    qualifier="parenthesised",
    named_boost=mdn_mode_module.NAMED_BOOST,
    named_first=mdn_mode_module.NAMED_FIRST,
    held_credit=mdn_mode_module.HELD_CREDIT,
)
"""The configuration the product runs: the navigator's direction, the walk's constants as they
are, the classifier's qualifier rule, κ and BM25 as `DEFAULT_PARAMS`."""

PRODUCT_RULES: dict[str, Callable[[Config], Config]] = {
    "1 backward weight": lambda c: replaced(c, backward=1.0),
    "7 title without its qualifier": lambda c: replaced(c, qualifier="none"),
    "10 title-named seeding": lambda c: replaced(c, named_boost=0.0),
    "11 title-named documents first": lambda c: replaced(c, named_first=False),
    "15 linked documents adding no query term": lambda c: replaced(c, held_credit=0.0),
}
"""Each rule the product carries, and the product without it (the rule's value before its trial)."""


def product_removals(trials: Trials, rules: Sequence[str]) -> None:
    """Each of `rules` taken out of PRODUCT alone. It stands when the product beats its removal
    by the trials' verdict; its removal is also said to lose or not on each held-out half."""
    product = trials.score(PRODUCT)
    print(f"\n== the product\n  {'product':<32} {line(product)}")
    for name, s in product.items():
        print(f"  {name} all: {fmt(s['all'])}")
    for rule in rules:
        without = PRODUCT_RULES[rule](PRODUCT)
        if without == PRODUCT:
            print(f"\n== {rule}: not in the product")
            continue
        score = trials.score(without)
        stands, why = trials.verdict(score, product)
        losses = trials.losses(product, score)
        removal = f"loses on held-out ({', '.join(losses)})" if losses else "loses on neither"
        print(f"\n== without {rule}\n  {'without':<32} {line(score)}")
        for name, s in score.items():
            print(f"  {name} all: {fmt(s['all'])}")
        print(
            f"  the rule {'stands' if stands else 'does not stand'} ({why}); its removal {removal}"
        )
        trials.rows.append(
            {
                "trial": f"{rule} (taken out of the product)",
                "current": product,
                "current_edges_per_document": trials.edges_per_document(PRODUCT),
                "variants": {
                    "without": {
                        "scores": score,
                        "edges_per_document": trials.edges_per_document(without),
                    }
                },
                "best_on_tune": "without",
                "kept": stands,
                "why": f"the rule {'stands' if stands else 'does not stand'}: {why}; "
                f"its removal {removal}",
            }
        )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--markdown", action="store_true", help="print the ledger table")
    parser.add_argument("--out", type=Path, help="write the trials as JSON")
    parser.add_argument(
        "--product", action="store_true", help="judge the product's rules by removing each"
    )
    parser.add_argument(
        "--rule",
        action="append",
        choices=sorted(PRODUCT_RULES),
        help="with --product: only this rule (repeatable; default: all)",
    )
    args = parser.parse_args(argv)
    trials = Trials(
        {
            name: quality.LOADERS[data_format](data)
            for name, (data, data_format) in quality.DATASETS.items()
        }
    )
    if args.product:
        product_removals(trials, args.rule or list(PRODUCT_RULES))
        finish(trials, args.markdown, args.out)
        return
    config = Config()
    for number in range(1, PASSES + 1):
        for name, variants in TRIALS:
            proposed = variants(config)
            after = trials.trial(
                f"{name}" if number == 1 else f"{name} (pass {number})", config, proposed
            )
            trials.rows[-1]["fields"] = sorted(
                {
                    f.name
                    for f in dataclasses.fields(Config)
                    for _, variant in proposed
                    if getattr(variant, f.name) != getattr(config, f.name)
                }
            )
            config = after
    ablations(trials, config)
    final = trials.score(config)
    print(f"\nkept: {config}")
    print(f"final: {line(final)}")
    for name, s in final.items():
        print(f"  {name} all: {fmt(s['all'])}")
    finish(trials, args.markdown, args.out)


def finish(trials: Trials, as_markdown: bool, out: Path | None) -> None:
    if as_markdown:
        print()
        print(markdown(trials))
    if out is not None:
        out.write_text(json.dumps(trials.rows, indent=1, default=str) + "\n")


if __name__ == "__main__":
    main()
