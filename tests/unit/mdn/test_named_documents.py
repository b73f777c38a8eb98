"""Documents a query names by their title (`relevance.named_by_query`) and how the default walk
takes them (`mdn_mode.NAMED_BOOST`, `NAMED_FIRST`; bench/README.md, trials 10 and 11)."""

from __future__ import annotations

from mnemo_mdn import CorpusGraph, Document, Edge, MdnParams, navigate
from mnemo_mdn.relevance import named_by_query, query_view


def named_titles(graph: CorpusGraph, query: str) -> set[str]:
    view = query_view(graph, query, MdnParams())
    flags = named_by_query(graph, query, view)
    return {graph.titles[int(d)] for d, named in zip(view.candidates, flags, strict=True) if named}


def test_a_query_names_a_title_as_written_or_without_its_qualifier_as_whole_tokens() -> None:
    graph = CorpusGraph.build(
        [
            Document("1", "Dark River (2017 film)", "A British drama film."),
            Document("2", "Dark River (1990 film)", "A drama film."),
            Document("3", "The Who", "An English rock band; who were they?"),
            Document("4", "Riverside", "A town by the river, dark at night."),
            Document("5", "The", "A word: the."),
        ],
        [],
    )
    query = "Which film has the director who is older, Dark River (2017 Film) or the other?"
    # Both Dark River films by their name without the qualifier; `The Who` is not named by
    # `the director who` (not consecutive), `Riverside` not by `river` (not a whole token), and
    # `The` names nothing (a function word alone).
    assert named_titles(graph, query) == {"Dark River (2017 film)", "Dark River (1990 film)"}


def test_a_question_naming_two_documents_takes_both_before_following_an_edge() -> None:
    graph = CorpusGraph.build(
        [
            Document("a", "Aas Ka Panchhi", "Aas Ka Panchhi is a 1961 Hindi film by Mohan Kumar."),
            Document("k", "Mohan Kumar", "Mohan Kumar was a director whose first film released."),
            Document("p", "Phoolwari", "Phoolwari is a 1946 film."),
        ],
        [Edge("a", "k", "cite", 1.0)],
    )
    walk = navigate(graph, "Which film was released first, Aas Ka Panchhi or Phoolwari?", budget=2)
    # Before the rule the walk followed the citation to the director (who adds `released` and
    # `first`) and never reached the second film the question names.
    assert walk.path == ("a", "p")
    assert walk.hits[1].restart is True


def test_a_named_document_an_edge_reaches_is_taken_through_the_edge() -> None:
    graph = CorpusGraph.build(
        [Document("s", "alpha"), Document("a", "beta"), Document("b", "beta")],
        [Edge("s", "a", "cite", 0.2), Edge("s", "b", "cite", 0.9)],
    )
    walk = navigate(graph, "alpha beta", seed="s", budget=2)
    assert walk.path == ("s", "b")
    assert walk.hits[1].restart is False
    assert walk.traversed == (Edge("s", "b", "cite", 1.0 * 0.9),)
