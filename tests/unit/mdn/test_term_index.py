"""The term index built in bulk equals the spec's tokens taken one document at a time (MDN.md §3)."""

from __future__ import annotations

import mnemo_mdn.tokenization as tokenization
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mnemo_mdn import CorpusGraph, Document
from mnemo_mdn.relevance import term_index
from mnemo_mdn.tokenization import many_token_lists, token_list

# Separators of every kind (ASCII, NUL, Unicode dashes and spaces, a lone surrogate), letters whose
# lowercase form is longer or depends on context (İ, Σ), ligatures, CJK, digits and `_`.
ALPHABET = "aZq09_ -.,\t\n\x00—’\u00a0\u2009éÉΣσςİıßﬁŉΑ日本\ud800x"
texts = st.lists(st.text(alphabet=ALPHABET, max_size=14), max_size=9)


def literal(texts: list[str]) -> list[tuple[int, str]]:
    return [(k, token) for k, text in enumerate(texts) for token in token_list(text)]


def bulk(texts: list[str]) -> list[tuple[int, str]]:
    found = many_token_lists(texts)
    return [(int(k), found.terms[int(t)]) for k, t in zip(found.text, found.term, strict=True)]


@settings(max_examples=400, deadline=None)
@given(texts)
def test_bulk_tokens_are_token_list_of_every_text_in_order(texts: list[str]) -> None:
    assert bulk(texts) == literal(texts)


@pytest.mark.parametrize(
    "text",
    [
        "ΟΔΟΣ—ΣΟΦΙΑ",
        "İstanbul",
        "naïve café",
        "x\x00yz",
        "ab\u00a0cd",
        "\ud800ab",
        "ﬁx ŉ ß",
        "A b CC",
    ],
)
def test_bulk_tokens_match_token_list_on_texts_that_need_unicode_rules(text: str) -> None:
    assert bulk(["first words", text, "", text.upper()]) == literal(
        ["first words", text, "", text.upper()]
    )


def test_texts_split_into_several_rounds_keep_their_positions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(tokenization, "_TEXTS_PER_ROUND", 3)
    texts = [f"doc{k} Word{k % 4} — é{k}" for k in range(11)] + ["", "a"]
    assert bulk(texts) == literal(texts)


def literal_index(
    graph: CorpusGraph,
) -> tuple[dict[str, list[int]], dict[str, list[int]], dict[str, list[int]], list[int]]:
    """The index as it was first written: one document at a time, with Python dicts."""
    documents_with: dict[str, list[int]] = {}
    frequencies: dict[str, list[int]] = {}
    titles_with: dict[str, list[int]] = {}
    lengths = []
    for k, (title, body) in enumerate(zip(graph.titles, graph.bodies, strict=True)):
        title_terms = token_list(title)
        terms = title_terms if body is None else title_terms + token_list(body)
        lengths.append(len(terms))
        counts: dict[str, int] = {}
        for term in terms:
            counts[term] = counts.get(term, 0) + 1
        for term, count in counts.items():
            documents_with.setdefault(term, []).append(k)
            frequencies.setdefault(term, []).append(count)
        for term in set(title_terms):
            titles_with.setdefault(term, []).append(k)
    return documents_with, frequencies, titles_with, lengths


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(texts.map(" ".join), st.none() | texts.map(" ".join)), max_size=8))
def test_the_term_index_equals_the_one_built_document_by_document(
    rows: list[tuple[str, str | None]],
) -> None:
    graph = CorpusGraph.build(
        [Document(f"d{k}", title, body) for k, (title, body) in enumerate(rows)], []
    )
    index = term_index(graph)
    documents_with, frequencies, titles_with, lengths = literal_index(graph)
    assert set(index.terms) == set(documents_with)
    for term, documents in documents_with.items():
        assert index.documents_with(term).tolist() == documents
        assert index.frequencies(term).tolist() == frequencies[term]
        assert index.titles_with(term).tolist() == titles_with.get(term, [])
        assert index.document_frequency(term) == len(documents)
    assert index.lengths.tolist() == lengths
    assert index.average_length == (float(np.mean(lengths)) if lengths else 0.0)
    assert index.documents_with("never-a-token").tolist() == []
    assert index.document_frequency("never-a-token") == 0
