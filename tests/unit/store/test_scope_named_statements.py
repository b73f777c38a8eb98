"""Every statement that holds a scope is written with named binds and numbered in one place
(`mnemo_store.scope.positional`), and a scope is compiled once per (scope, corpus).

The property test holds each builder's numbered statement equal to what the builders produced when
they counted their own binds by hand (`$1…$k`) and took the scope rendered from `$k+1`: the old
form is rebuilt here by numbering the scope from the statement's bind count and writing the
statement's own binds as `$1…$k`, independently of the numbering under test.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mnemo_axon.compiler import load_deployment
from mnemo_axon.errors import FilterError, RenderArgumentError
from mnemo_axon.where import compiler as where_compiler
from mnemo_axon.where import number_binds, parse_filter
from mnemo_store import Scope, StoreCorpus, candidates, refresh, reinforcement, retrieval
from mnemo_store import scope as store_scope
from mnemo_store.loading import LoadLimits, load_queries
from mnemo_store.scope import CompiledScope, compile_scope, positional

DECLARATIONS = """
axonstore D {{ schema {{ id: {ids} primary_key  tenant_id: Text not_null  sub: Uuid  n: Integer
  title: Text not_null  body: Text  flag: Boolean }} }}
axonstore E {{ schema {{ from_id: {ids} not_null  to_id: {ids} not_null  etype: Text not_null
  weight: Float  tenant_id: Text not_null  sub: Uuid  n: Integer }} }}
corpus C from axonstore {{ documents: D(id, title, body)  relations: E(from_id, to_id, etype, weight) }}
"""
CORPORA = [
    StoreCorpus.from_deployment(load_deployment(DECLARATIONS.format(ids=ids), "c.axon"), "C")
    for ids in ("Uuid", "Integer", "Text")
]
SUB = "4b1c0b8e-35d5-4a5f-9c69-0d3f7fd0a5b8"

Builder = Callable[[StoreCorpus, CompiledScope], str]
# Each builder with its own binds in the order the hand-counted statement numbered them.
BUILDERS: dict[str, tuple[Builder, tuple[str, ...]]] = {
    "changed documents": (refresh.changed_documents_sql, ("xmin", "snapshot")),
    "changed edges": (lambda c, s: refresh.changed_edges_sql(c, "k", s), ("xmin", "snapshot")),
    "incident edges": (lambda c, s: refresh.incident_edges_sql(c, "k", s), ("ids",)),
    "retrieve": (retrieval.retrieve_sql, ("query", "k")),
    "page": (retrieval.page_sql, ("after", "limit")),
    "neighbourhood": (
        lambda c, s: candidates.neighbourhood_sql(c, s.sql),
        ("keys", "names", "max_holders", "cited", "titles", "document_id", "limit"),
    ),
    "reinforce": (reinforcement.reinforcement_sql, ("sources", "targets", "etypes", "deltas")),
}

conditions = st.sampled_from(
    [
        "tenant_id == '${p}'",
        "tenant_id LIKE '%${p}%'",
        "sub == '${u}'",
        "sub = NULL",
        "n > 3",
        "n <= '${i}'",
        "title == '${p}'",  # documents only: edges scoped by their ends
        "title != 'x'",
        "flag == TRUE",
    ]
)
filters = st.lists(
    st.tuples(st.sampled_from(["AND", "OR"]), conditions), min_size=1, max_size=4
).map(lambda parts: " ".join(f"{c} {cond}" for c, cond in parts).split(" ", 1)[1])


@st.composite
def scopes(draw: st.DrawFn) -> Scope:
    params = {"p": draw(st.text(max_size=8)), "u": SUB, "i": str(draw(st.integers(-9, 9)))}
    return Scope(
        where=draw(st.none() | filters),
        params=params,
        pinned=draw(st.none() | filters),
        pinned_params=params,
    )


def hand_counted(
    sql: str, own: tuple[str, ...], scope: CompiledScope
) -> tuple[str, tuple[object, ...]]:
    """The statement as the builders wrote it before: own binds `$1…$k`, the scope from `$k+1`."""
    old = number_binds((scope.sql, scope.relations_sql), scope.binds, len(own) + 1)
    # The relations condition first: a documents-only scope's holds the documents condition.
    text = sql.replace(scope.relations_sql, old.texts[1]).replace(scope.sql, old.texts[0])
    for number, name in enumerate(own, 1):
        text = text.replace(f"$({name})", f"${number}")
    return text, tuple(f"<{name}>" for name in own) + old.params


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(scope=scopes(), corpus=st.sampled_from(CORPORA))
def test_every_scoped_statement_numbers_as_the_hand_counted_one_did(
    scope: Scope, corpus: StoreCorpus
) -> None:
    try:
        compiled = compile_scope(scope, corpus)
    except FilterError:
        return  # refused before any SQL, as before
    for name, (build, own) in BUILDERS.items():
        named = build(corpus, compiled)
        sql, params = positional(named, compiled, **{n: f"<{n}>" for n in own})
        assert (sql, params) == hand_counted(named, own, compiled), name
        assert "$(" not in sql
    queries = load_queries(corpus, compiled, LoadLimits(max_documents=9, max_edges=9))
    old = number_binds((compiled.sql, compiled.relations_sql), compiled.binds)
    assert queries.params == queries.edge_params == old.params
    assert f"WHERE {old.texts[0]} " in queries.documents
    assert f"WHERE {old.texts[1]} LIMIT 10" in queries.edges


def test_a_statement_bind_named_like_one_of_the_scopes_is_refused() -> None:
    compiled = compile_scope(Scope("tenant_id == 'a'"), CORPORA[0])
    with pytest.raises(RenderArgumentError, match=r"\['where_0'\]"):
        positional(f"SELECT $(where_0) WHERE {compiled.sql}", compiled, where_0=1)


def test_a_statement_value_without_a_bind_or_a_bind_without_a_value_is_refused() -> None:
    compiled = compile_scope(Scope(), CORPORA[0])
    with pytest.raises(RenderArgumentError, match="does not use"):
        positional("SELECT 1", compiled, k=1)
    with pytest.raises(RenderArgumentError, match="has no value"):
        positional("SELECT $(k)", compiled)


def count_parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    parsed: list[str] = []

    def counting(text: str) -> object:
        parsed.append(text)
        return parse_filter(text)

    monkeypatch.setattr(where_compiler, "parse_filter", counting)
    monkeypatch.setattr(store_scope, "parse_filter", counting)
    return parsed


@pytest.mark.parametrize(
    ("one", "two"),
    [
        ({"p": 1}, {"p": True}),
        ({"p": 1}, {"p": "1"}),
        ({"p": 1}, {"p": 1.0}),
        ({"p": 0.0}, {"p": -0.0}),
        ({"p": None}, {"p": "None"}),
        ({"p": {"q": "a"}}, {"p": {"q": "b"}}),
        ({"p": ["a"]}, {"p": ("a",)}),
    ],
)
def test_scopes_whose_values_differ_in_value_or_type_never_share_a_compilation(
    one: Mapping[str, object], two: Mapping[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    where = "tenant_id == 'cache-${p}' OR tenant_id == '${p.q}'"
    keys = [store_scope._cache_key(Scope(where, params), CORPORA[0], None) for params in (one, two)]
    assert None not in keys
    assert keys[0] != keys[1]


def test_a_scope_is_compiled_once_per_corpus_and_its_binds_cannot_be_changed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parsed = count_parses(monkeypatch)
    scope = Scope("tenant_id == '${p}'", {"p": "compiled once per corpus"})
    first = [compile_scope(scope, corpus) for corpus in CORPORA]
    again = [compile_scope(Scope(scope.where, dict(scope.params)), corpus) for corpus in CORPORA]
    assert parsed == [scope.where] * len(CORPORA)
    assert all(a is b for a, b in zip(first, again, strict=True))
    with pytest.raises(TypeError):
        first[0].binds["where_0"] = "another tenant's value"  # type: ignore[index]


def test_a_value_of_a_type_the_cache_cannot_key_is_compiled_each_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parsed = count_parses(monkeypatch)

    class Text(str):
        """A str subclass: equal to its str, but not keyed as one."""

    scope = Scope("tenant_id == '${p}'", {"p": Text("uncached")})
    one, two = compile_scope(scope, CORPORA[0]), compile_scope(scope, CORPORA[0])
    assert len(parsed) == 2
    assert one == two
