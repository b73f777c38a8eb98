"""A pinned scope and a request filter are compiled apart and ANDed: whatever the request sends,
the pinned part comes first, keeps its own bound values, and the request cannot reach them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mnemo_axon.compiler import load_deployment
from mnemo_axon.errors import FilterError
from mnemo_axon.where import NumberedBinds, number_binds
from mnemo_store import Scope, StoreCorpus
from mnemo_store.scope import compile_scope

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


def numbered(scope: Scope, corpus: StoreCorpus) -> NumberedBinds:
    """The scope's documents condition as a statement holding only it would bind it."""
    compiled = compile_scope(scope, corpus)
    return number_binds([compiled.sql], compiled.binds)


def pinned_only(corpus: StoreCorpus) -> tuple[str, tuple[object, ...]]:
    rendered = numbered(Scope(pinned=PINNED, pinned_params={"client": {"tenant_id": "c1"}}), corpus)
    return rendered.texts[0], rendered.params


@given(
    where=st.one_of(
        st.sampled_from(
            [
                "tenant_id LIKE '%'",
                "tenant_id == 'c2' OR tenant_id == 'c1'",
                "title == '${client.tenant_id}'",
                "tenant_id LIKE '${x}' OR title != ''",
            ]
        ),
        st.text(max_size=40),
    ),
    value=st.text(max_size=10),
)
def test_a_request_filter_is_anded_after_the_pinned_scope_and_never_rebinds_it(
    corpus: StoreCorpus, where: str, value: str
) -> None:
    scope = Scope(
        where=where,
        params={"x": value, "client": {"tenant_id": "c2"}},
        pinned=PINNED,
        pinned_params={"client": {"tenant_id": "c1"}},
    )
    try:
        rendered = numbered(scope, corpus)
    except FilterError:
        return  # refused before any SQL runs
    sql, params = pinned_only(corpus)
    if where.strip():
        assert rendered.texts[0].startswith(f"({sql}) AND (")
    else:
        assert rendered.texts[0] == sql
    assert rendered.params[: len(params)] == params == ("c1",)


def test_the_digest_of_a_pinned_scope_depends_on_the_bound_client(corpus: StoreCorpus) -> None:
    one = compile_scope(Scope(pinned=PINNED, pinned_params={"client": {"tenant_id": "c1"}}), corpus)
    two = compile_scope(Scope(pinned=PINNED, pinned_params={"client": {"tenant_id": "c2"}}), corpus)
    assert one.digest != two.digest
