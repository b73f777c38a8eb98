"""bench/quality.py `--order arrival`: each passage classified when it arrives, against the ones
before it, as the edge-classifier service does when it keeps up with ingest."""

from __future__ import annotations

import importlib.util
import sys
from functools import cache
from pathlib import Path
from types import ModuleType

from mnemo_mdn import Document
from mnemo_mdn.edge_classification import EdgeDecision
from mnemo_mdn.lexical_index import classify_corpus

BENCH = Path(__file__).resolve().parents[3] / "bench"


@cache
def quality() -> ModuleType:
    spec = importlib.util.spec_from_file_location("quality", BENCH / "quality.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("quality", module)
    spec.loader.exec_module(module)
    return module


CORPUS = [
    Document("p000000", "Hilda Hilst", "Hilda Hilst wrote poems in Jundiaí near the Casa do Sol."),
    Document("p000001", "Casa do Sol", "The Casa do Sol is a house that Hilda Hilst built."),
    Document("p000002", "Jundiaí", "Jundiaí is a city; the Casa do Sol stands near it."),
    Document("p000003", "A letter", "Lygia Fagundes Telles wrote to her from Sao Paulo."),
    Document("p000004", "A reply", "An answer came back to Lygia Fagundes Telles in May."),
]


def pairs(decisions: tuple[EdgeDecision, ...], etype: str) -> set[tuple[str, str]]:
    return {(d.source, d.target) for d in decisions if d.etype == etype}


def test_a_shared_key_link_is_made_only_from_the_later_passage_in_arrival_order() -> None:
    arrival = pairs(quality().classify_in_arrival_order(CORPUS), "elaborate")
    corpus = pairs(classify_corpus(CORPUS), "elaborate")
    assert ("p000004", "p000003") in arrival
    assert ("p000003", "p000004") in corpus - arrival  # the earlier passage never saw the later
    assert all(source > target for source, target in arrival)


def test_citations_in_arrival_order_are_the_ones_the_whole_corpus_gives() -> None:
    def citations(decisions: tuple[EdgeDecision, ...]) -> set[tuple[str, str]]:
        return pairs(decisions, "cite")

    arrival = quality().classify_in_arrival_order(CORPUS)
    assert citations(arrival) == citations(classify_corpus(CORPUS))
    assert citations(arrival)  # the corpus has some: the test says something


def test_the_first_passage_alone_has_no_edges() -> None:
    assert quality().classify_in_arrival_order(CORPUS[:1]) == ()
