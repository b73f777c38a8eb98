"""The lexical edge classifier: each rule on a small example, then properties over any text."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mnemo_mdn import RELATION_TYPES
from mnemo_mdn.edge_classification import (
    ClassifierOptions,
    EdgeDecision,
    Rarity,
    TextDocument,
    classify,
    document_keys,
    keys_of,
)
from mnemo_mdn.lexical_index import LexicalIndex, classify_corpus


def _types(decisions: tuple[EdgeDecision, ...]) -> set[tuple[str, str, str]]:
    return {(d.source, d.target, d.etype) for d in decisions}


def test_a_title_mention_is_a_citation_of_the_titled_document() -> None:
    song = TextDocument("s", "Blue Moon Rising", "A song performed by Hilda Hilst in 1990.")
    singer = TextDocument("h", "Hilda Hilst", "A Brazilian poet and singer.")
    decisions = classify(song, [singer], Rarity())
    assert ("s", "h", "cite") in _types(decisions)
    cite = next(d for d in decisions if d.etype == "cite")
    assert cite.weight == 1.0
    assert "Hilda Hilst" in cite.evidence


def test_a_citation_is_found_in_both_directions_from_the_new_document() -> None:
    older = TextDocument("old", "Pricing", "Our Payment Terms are strict.")
    new = TextDocument("new", "Payment Terms", "Net thirty days.")
    assert ("old", "new", "cite") in _types(classify(new, [older], Rarity()))


def test_a_title_borne_by_two_documents_splits_the_citation_weight() -> None:
    citing = TextDocument("c", "Notes", "See Mercury for the details.")
    planet = TextDocument("p", "Mercury", "A planet.")
    element = TextDocument("e", "Mercury", "An element.")
    decisions = classify(citing, [planet, element], Rarity())
    weights = {d.target: d.weight for d in decisions if d.etype == "cite"}
    assert weights == {"p": 0.5, "e": 0.5}


def test_a_mention_of_a_title_without_its_qualifier_is_a_citation() -> None:
    painting = TextDocument(
        "w", "Kansas Landscapes", "A series painted by Henry Worrall in Topeka."
    )
    artist = TextDocument("a", "Henry Worrall (artist)", "An American visual artist and musician.")
    decisions = classify(painting, [artist], Rarity())
    cite = [d for d in decisions if d.etype == "cite"]
    assert [(d.source, d.target, d.weight) for d in cite] == [("w", "a", 1.0)]
    assert "'Henry Worrall', the title without its qualifier" in cite[0].evidence
    assert document_keys(artist).alias_key == "henry worrall"
    assert document_keys(painting).alias_key == ""  # no qualifier, no alias


def test_namesakes_split_a_mention_of_their_shared_name() -> None:
    citing = TextDocument("c", "Rolling Stone", "A biography of Madonna appeared in 2001.")
    singer = TextDocument("s", "Madonna (entertainer)", "An American singer.")
    book = TextDocument("b", "Madonna (book)", "A biography by Andrew Morton.")
    plain = TextDocument("p", "Madonna", "A painting of Mary.")
    decisions = classify(citing, [singer, book, plain], Rarity())
    weights = {d.target: d.weight for d in decisions if d.etype == "cite"}
    assert weights == pytest.approx({"s": 1 / 3, "b": 1 / 3, "p": 1 / 3})
    # Namesakes do not cite each other by their shared name.
    assert not [d for d in classify(book, [singer], Rarity()) if d.etype == "cite"]


def test_the_corpus_index_finds_documents_by_their_title_without_its_qualifier() -> None:
    documents = [
        TextDocument("a", "Henry Worrall (artist)", "An American visual artist."),
        TextDocument("w", "Kansas Landscapes", "Painted by Henry Worrall."),
        TextDocument("x", "Unrelated", "Nothing to see."),
    ]
    index = LexicalIndex(documents)
    assert index.candidates(0) == [1]
    assert index.candidates(1) == [0]
    assert ("w", "a", "cite") in _types(classify_corpus(documents))


def test_a_lowercase_mention_of_a_one_word_title_is_not_a_citation() -> None:
    citing = TextDocument("c", "Notes", "we listened to music all day")
    music = TextDocument("m", "music", "Sound organised in time.")
    assert classify(citing, [music], Rarity()) == ()


def test_an_explicit_id_reference_is_a_citation_of_weight_one() -> None:
    citing = TextDocument("c", "Follow-up", "As decided in adr-0017, we keep Postgres.")
    decision = TextDocument("adr-0017", "Database choice", "We choose Postgres.")
    cite = [d for d in classify(citing, [decision], Rarity()) if d.etype == "cite"]
    assert [(d.target, d.weight) for d in cite] == [("adr-0017", 1.0)]


def test_a_replacement_cue_naming_the_other_document_is_a_supersede() -> None:
    new = TextDocument("v2", "Travel Policy 2025", "This supersedes the Travel Policy 2024.")
    old = TextDocument("v1", "Travel Policy 2024", "Economy class only.")
    assert ("v2", "v1", "supersede") in _types(classify(new, [old], Rarity()))


def test_an_opposition_cue_naming_the_other_document_is_a_contradiction() -> None:
    new = TextDocument("n", "Audit Finding", "The claim in Quarterly Report Nine is incorrect.")
    old = TextDocument("o", "Quarterly Report Nine", "Revenue grew.")
    assert ("n", "o", "contradict") in _types(classify(new, [old], Rarity()))


def test_a_negated_restatement_of_shared_content_is_a_contradiction() -> None:
    old = TextDocument("a", "Ada Lovelace notes", "Ada Lovelace wrote the first published program.")
    new = TextDocument(
        "b", "Babbage letters", "Ada Lovelace never wrote the first published program."
    )
    decisions = classify(new, [old], Rarity({"ada lovelace": 2}))
    assert ("b", "a", "contradict") in _types(decisions)


def test_shared_rare_names_make_an_elaborate_edge_weighted_by_rarity() -> None:
    journal = TextDocument(
        "j", "Journal of Psychotherapy", "Published by the American Psychological Association."
    )
    history = TextDocument(
        "h",
        "Adolescence",
        "Hall was the first president of the American Psychological Association.",
    )
    rare = classify(history, [journal], Rarity({"american psychological association": 2}))
    assert [(d.etype, d.weight) for d in rare] == [("elaborate", 1.0)]
    common = classify(history, [journal], Rarity({"american psychological association": 5}))
    assert [(d.etype, d.weight) for d in common] == [("elaborate", 0.25)]


def test_a_key_held_by_more_documents_than_a_document_may_link_is_not_evidence() -> None:
    a = TextDocument("a", "One", "The United Nations met.")
    b = TextDocument("b", "Two", "The United Nations voted.")
    options = ClassifierOptions(max_links=3)
    assert classify(a, [b], Rarity({"united nations": 5}), options) == ()
    assert classify(a, [b], Rarity({"united nations": 4}), options) != ()


def test_documents_with_the_same_title_corroborate_each_other_both_ways() -> None:
    a = TextDocument("a", "Zanzibar Archipelago", "Islands off Tanzania.")
    b = TextDocument("b", "Zanzibar Archipelago", "A semi-autonomous region.")
    assert _types(classify(a, [b], Rarity())) == {
        ("a", "b", "corroborate"),
        ("b", "a", "corroborate"),
    }


def test_a_document_keeps_only_its_strongest_shared_key_links() -> None:
    new = TextDocument("n", "Hub", "Kaspar Hauser and Nuremberg Castle.")
    others = [TextDocument(f"o{k}", f"Other {k}", "Kaspar Hauser lived.") for k in range(5)]
    others.append(TextDocument("x", "Fortress", "Kaspar Hauser at Nuremberg Castle."))
    rarity = Rarity({"kaspar hauser": 7, "nuremberg castle": 2})
    decisions = classify(new, others, rarity, ClassifierOptions(6))
    assert {d.target for d in decisions if d.source == "n"} == {"o0", "o1", "o2", "o3", "o4", "x"}
    assert max(decisions, key=lambda d: d.weight).target == "x"  # two rare keys beat one
    one = classify(new, others, rarity, ClassifierOptions(1))
    assert {(d.source, d.target) for d in one} == {("n", "x"), ("x", "n")}  # corroborate, both ways


def test_names_are_runs_of_capitalised_words_without_function_words_at_the_ends() -> None:
    keys = document_keys(
        TextDocument(
            "d", "Doc", "In 1783 the Treaty of Paris ended it. The Beatles, then Yoko Ono."
        )
    )
    assert {"treaty of paris", "beatles", "yoko ono"} <= keys.names
    assert "in" not in keys.names
    assert "the" not in keys.names
    assert "doc" in keys_of(keys)


def test_a_candidate_with_the_documents_own_id_is_ignored() -> None:
    doc = TextDocument("same", "Hilda Hilst", "Hilda Hilst wrote poems.")
    assert classify(doc, [doc], Rarity()) == ()


def test_a_decision_outside_the_catalog_or_range_cannot_be_made() -> None:
    with pytest.raises(ValueError, match="catalog"):
        EdgeDecision("a", "b", "hugs", 0.5)
    with pytest.raises(ValueError, match=r"\(0, 1\]"):
        EdgeDecision("a", "b", "cite", 1.5)
    with pytest.raises(ValueError, match="both ends"):
        EdgeDecision("a", "a", "cite", 0.5)


def test_the_corpus_index_counts_phrases_as_a_full_text_index_would() -> None:
    index = LexicalIndex(
        [
            TextDocument("1", "A", "Hilda Hilst wrote."),
            TextDocument("2", "B", "Hilst, Hilda: no."),
            TextDocument("3", "C", "About Hilda Hilst and more"),
        ]
    )
    assert index.holders("hilda hilst") == (0, 2)
    assert index.rarity(index.keys[0]).document_frequency["hilda hilst"] == 2


def test_classifying_a_corpus_finds_the_bridge_between_two_hops() -> None:
    decisions = classify_corpus(
        [
            TextDocument("song", "Blue Moon Rising", "Performed by Hilda Hilst."),
            TextDocument("poet", "Hilda Hilst", "She married Dante Casarini."),
            TextDocument("other", "Weather", "It rained in Lisbon."),
        ]
    )
    assert ("song", "poet", "cite") in _types(decisions)
    assert all(d.source != "other" and d.target != "other" for d in decisions)


# -- properties ----------------------------------------------------------------------------------

_WORDS = st.sampled_from(
    [
        "Hilda", "Hilst", "Paris", "Treaty", "of", "the", "not", "never", "replaces", "contradicts",
        "is", "incorrect", "Ada", "wrote", "program", "music", "Music", "doc-17", "and", ".", ",",
        "\n\n", "isn't", "Über", "x", "7",
    ]
)  # fmt: skip
_TEXT = st.lists(_WORDS, max_size=30).map(" ".join)
_DOCUMENT = st.builds(
    TextDocument,
    id=st.sampled_from(["a", "b", "c", "doc-17", "d"]),
    title=st.lists(_WORDS, max_size=4).map(" ".join),
    body=st.none() | _TEXT,
)
_RARITY = st.dictionaries(
    st.sampled_from(["hilda hilst", "paris", "treaty of paris", "ada", "music"]),
    st.integers(min_value=-3, max_value=20),
).map(Rarity)


@given(_DOCUMENT, st.lists(_DOCUMENT, max_size=5), _RARITY, st.integers(1, 12))
def test_every_decision_is_in_the_catalog_weighted_in_range_and_never_a_self_loop(
    document: TextDocument,
    candidates: list[TextDocument],
    rarity: Rarity,
    max_links: int,
) -> None:
    decisions = classify(document, candidates, rarity, ClassifierOptions(max_links))
    ids = {document.id} | {c.id for c in candidates}
    for decision in decisions:
        assert decision.etype in RELATION_TYPES
        assert 0.0 < decision.weight <= 1.0
        assert decision.source != decision.target
        assert document.id in (decision.source, decision.target)
        assert {decision.source, decision.target} <= ids
    assert len({(d.source, d.target, d.etype) for d in decisions}) == len(decisions)


@given(_DOCUMENT, st.lists(_DOCUMENT, max_size=5), _RARITY)
def test_classification_is_deterministic_and_ignores_candidate_order(
    document: TextDocument, candidates: list[TextDocument], rarity: Rarity
) -> None:
    first = classify(document, candidates, rarity)
    assert classify(document, candidates, rarity) == first
    # Candidates with distinct ids: order never matters (a repeated id keeps its first copy).
    unique = list({c.id: c for c in candidates}.values())
    assert classify(document, unique, rarity) == classify(document, unique[::-1], rarity)
