"""Navigation quality on the vendored MuSiQue and 2WikiMultiHopQA subsets (bench/quality.py,
engine mode), pinned.

The numbers are the ones recorded in bench/README.md; a change to the classifier or the walk that
moves them by more than the tolerance must be measured there (bench/quality_trials.py, on both
datasets) and the pins moved with it."""

from __future__ import annotations

import importlib.util
import json
import sys
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
TOLERANCE = 1.5  # recall points


@cache
def quality() -> ModuleType:
    spec = importlib.util.spec_from_file_location("quality", ROOT / "bench" / "quality.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["quality"] = module
    spec.loader.exec_module(module)
    return module


@cache
def measured(name: str) -> dict[str, Any]:
    q = quality()
    data, data_format = q.DATASETS[name]
    dataset = q.LOADERS[data_format](data)
    results, edges = q.run_engine(dataset)
    summary: dict[str, Any] = q.report(dataset, results, edges, "engine", 0.0)
    return summary


def musique() -> dict[str, Any]:
    return measured("musique")


@pytest.mark.parametrize(
    ("name", "system", "at2", "at5"),
    [
        ("musique", "bm25", 39.8, 50.5),
        ("musique", "navigate", 58.6, 69.3),
        ("musique", "navigate_no_edges", 45.2, 53.4),
        ("twowiki", "bm25", 54.9, 66.0),
        ("twowiki", "navigate", 73.4, 86.9),
        ("twowiki", "navigate_no_edges", 64.0, 68.5),
    ],
)
def test_recall_on_both_subsets_stays_where_it_was_measured(
    name: str, system: str, at2: float, at5: float
) -> None:
    recall = measured(name)["results"][system]["all"]
    assert recall["recall@2"] == pytest.approx(at2, abs=TOLERANCE)
    assert recall["recall@5"] == pytest.approx(at5, abs=TOLERANCE)


def test_navigation_on_musique_stays_ten_points_above_bm25_and_its_held_out_half_above_64() -> None:
    results = musique()["results"]
    assert results["navigate"]["all"]["recall@5"] >= results["bm25"]["all"]["recall@5"] + 10.0
    assert results["navigate"]["all"]["recall@2"] > results["bm25"]["all"]["recall@2"]
    assert results["navigate"]["held_out"]["recall@5"] >= 64.8  # issue 28: not below it


def test_navigation_on_2wiki_stays_fifteen_points_above_bm25_at_2_and_at_5() -> None:
    # Issue 28's target: +15 at both (bench/README.md: +18.5 and +20.9 with trials 1 and 15).
    results = measured("twowiki")["results"]
    assert results["navigate"]["all"]["recall@2"] >= results["bm25"]["all"]["recall@2"] + 15.0
    assert results["navigate"]["all"]["recall@5"] >= results["bm25"]["all"]["recall@5"] + 15.0


def test_the_classifier_joins_two_thirds_of_consecutive_supporting_passages() -> None:
    summary = musique()
    assert summary["gold_pairs"] == 137
    assert summary["edge_recall"] == pytest.approx(67.2, abs=2.0)
    assert summary["edges_per_document"] == pytest.approx(6.4, abs=0.5)


def test_the_simple_format_reads_titles_in_hop_order(tmp_path: Path) -> None:
    corpus = [
        {"title": "Hilda Hilst", "text": "Hilda Hilst was a poet born in Jaú."},
        {"title": "Jaú", "text": "Jaú is a city in São Paulo state."},
        {"title": "Jaú", "text": "Jaú has a football club."},
        {"title": "Lisbon", "text": "Lisbon is the capital of Portugal."},
    ]
    questions = [
        {
            "question": "In which state is the city where Hilda Hilst was born?",
            "supporting_titles": ["Hilda Hilst", "Jaú"],
        }
    ]
    (tmp_path / "corpus.json").write_text(json.dumps(corpus))
    (tmp_path / "questions.json").write_text(json.dumps(questions))
    q = quality()
    dataset = q.load_simple(tmp_path)
    assert dataset.questions[0].hops == (frozenset({0}), frozenset({1, 2}))
    results, edges = q.run_engine(dataset)
    summary = q.report(dataset, results, edges, "engine", 0.0)
    assert summary["edge_recall"] == 100.0  # the poet's passage names the city's title
    # Both Jaú passages support the question; the walk reaches the poet and the state's city.
    assert summary["results"]["navigate"]["all"]["recall@5"] == pytest.approx(200 / 3)


def test_a_simple_question_naming_an_absent_title_is_refused(tmp_path: Path) -> None:
    (tmp_path / "corpus.json").write_text(json.dumps([{"title": "A", "text": "a"}]))
    (tmp_path / "questions.json").write_text(
        json.dumps([{"question": "?", "supporting_titles": ["B"]}])
    )
    with pytest.raises(SystemExit, match="no passage titled"):
        quality().load_simple(tmp_path)
