"""At most `MAX_QUERY_TERMS` distinct tokens of a query reach the tsquery, the first ones the
query holds: a 20k-term disjunction cost about 10 s of Postgres per retrieve, 40k overflowed its
stack (issue 20)."""

from __future__ import annotations

from mnemo_store.retrieval import MAX_QUERY_TERMS, text_query


def test_a_twenty_thousand_word_query_reaches_the_tsquery_as_its_first_distinct_terms() -> None:
    query = " ".join(f"w{n}" for n in range(20_000))
    terms = text_query(query).split(" | ")
    assert len(terms) == MAX_QUERY_TERMS
    assert set(terms) == {f"w{n}" for n in range(MAX_QUERY_TERMS)}


def test_repeats_count_once_and_a_short_query_is_unchanged() -> None:
    assert text_query("beta alpha beta ALPHA gamma") == "alpha | beta | gamma"
    assert text_query("!! ?") == ""
    repeated = " ".join(["same"] * 5000 + ["other"])
    assert text_query(repeated) == "other | same"
