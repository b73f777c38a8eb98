"""A request's scope is parsed and bound once per filter (and once per request: compilations are
kept) and rendered with named binds that are numbered in one place: the relations condition, which
repeats a documents-only filter inside a subquery, reuses the documents condition's binds rather
than counting its own."""

from __future__ import annotations

import pytest
from mnemo_axon import where as axon_where
from mnemo_axon.compiler import load_deployment
from mnemo_axon.where import compiler as where_compiler
from mnemo_store import Scope, StoreCorpus
from mnemo_store import scope as store_scope
from mnemo_store.scope import compile_scope, positional

DECLARATIONS = """
axonstore D { schema { id: Text primary_key  tenant_id: Text not_null  title: Text not_null } }
axonstore E { schema { from_id: Text not_null  to_id: Text not_null  etype: Text not_null
                        weight: Float not_null  tenant_id: Text not_null } }
corpus C from axonstore { documents: D(id, title)  relations: E(from_id, to_id, etype, weight) }
"""
PINNED = "tenant_id == '${client.tenant_id}'"


@pytest.fixture(scope="module")
def corpus() -> StoreCorpus:
    return StoreCorpus.from_deployment(load_deployment(DECLARATIONS, "c.axon"), "C")


def test_each_filter_of_a_scope_is_parsed_once_whatever_stores_it_applies_to(
    corpus: StoreCorpus, monkeypatch: pytest.MonkeyPatch
) -> None:
    parsed: list[str] = []
    original = axon_where.parse_filter

    def counting(text: str) -> axon_where.Filter:
        parsed.append(text)
        return original(text)

    # Wherever the scope module reaches the parser from (directly, or through compile_where).
    monkeypatch.setattr(where_compiler, "parse_filter", counting)
    monkeypatch.setattr(store_scope, "parse_filter", counting, raising=False)
    scope = Scope(
        where="title == 'x' OR title == '${t}'",  # documents-only: edges scoped by their ends
        params={"t": "parsed once"},
        pinned=PINNED,
        pinned_params={"client": {"tenant_id": "c1"}},
    )
    for _ in range(3):  # a request's digest, graph load and reinforcement
        compiled = compile_scope(scope, corpus)
    assert parsed == [PINNED, "title == 'x' OR title == '${t}'"]
    again = Scope(  # an equal scope, in new objects: the same compilation
        where="title == 'x' OR title == '${t}'",
        params={"t": "parsed once"},
        pinned=PINNED,
        pinned_params={"client": {"tenant_id": "c1"}},
    )
    assert compile_scope(again, corpus) is compiled
    assert parsed == [PINNED, "title == 'x' OR title == '${t}'"]


def test_the_relations_condition_reuses_the_documents_conditions_binds(
    corpus: StoreCorpus,
) -> None:
    scope = Scope(
        where="title == '${t}'",
        params={"t": "y"},
        pinned=PINNED,
        pinned_params={"client": {"tenant_id": "c1"}},
    )
    compiled = compile_scope(scope, corpus)
    assert compiled.binds == {"pinned_0": "c1", "where_0": "y"}
    assert compiled.relations_sql.count("$(where_0)") == 2  # each end's subquery
    sql, params = positional(
        f"SELECT $(a), $(b), $(c), $(d) WHERE {compiled.sql} AND {compiled.relations_sql}",
        compiled,
        a=1,
        b=2,
        c=3,
        d=4,
    )
    assert params == (1, 2, 3, 4, "c1", "y")
    assert sql.startswith(
        'SELECT $1, $2, $3, $4 WHERE ("tenant_id" = $5::text) AND ("title" = $6::text) AND '
    )
    assert sql.count("$5::text") == 2
    assert sql.count("$6::text") == 3  # the documents condition and each end's subquery
    assert "$7" not in sql
    assert "$(" not in sql


def test_a_scope_without_a_filter_is_the_whole_tenant_and_binds_nothing(
    corpus: StoreCorpus,
) -> None:
    compiled = compile_scope(Scope(where="  "), corpus)
    assert (compiled.sql, compiled.relations_sql, dict(compiled.binds)) == ("TRUE", "TRUE", {})
    assert positional("SELECT $(a) WHERE TRUE", compile_scope(Scope(), corpus), a=1) == (
        "SELECT $1 WHERE TRUE",
        (1,),
    )


def test_a_request_value_that_looks_like_a_named_bind_stays_a_value(corpus: StoreCorpus) -> None:
    scope = Scope(
        where="title == '${t}'",
        params={"t": "$(pinned_0)"},
        pinned=PINNED,
        pinned_params={"client": {"tenant_id": "c1"}},
    )
    compiled = compile_scope(scope, corpus)
    sql, params = positional(f"SELECT 1 WHERE {compiled.sql}", compiled)
    assert params == ("c1", "$(pinned_0)")
    assert "pinned_0" not in sql
