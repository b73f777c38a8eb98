"""Named binds: a filter rendered with `$(name)` placeholders, numbered once when the statement is
assembled (`number_binds`): each name one number, in order of first appearance, values in that
order; a placeholder without a value or a value without a placeholder is refused."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mnemo_axon import RenderArgumentError, TableColumns, compile_where
from mnemo_axon.errors import FilterError
from mnemo_axon.where import named_bind, number_binds

TABLE = TableColumns.of("Notes", {"name": "Text", "n": "Integer"})


def test_a_filter_rendered_with_named_binds_numbers_to_the_sql_rendered_with_numbers() -> None:
    text = "name == 'x' AND n > 3 OR name LIKE '%y%'"
    named = compile_where(text, {}, [TABLE], named="where_")
    numbered = compile_where(text, {}, [TABLE], 4)
    assert named.bind_names == ("where_0", "where_1", "where_2")
    assert "$(where_1)::integer" in named.sql
    assembled = number_binds([named.sql], dict(zip(named.bind_names, named.params, strict=True)), 4)
    assert assembled.texts == (numbered.sql,)
    assert assembled.params == numbered.params == ("x", 3, "%y%")
    assert assembled.next_param_index == 7
    assert named.scope_digest == numbered.scope_digest


def test_a_name_used_twice_is_one_bind_numbered_at_its_first_appearance() -> None:
    assembled = number_binds(
        ["a = $(b) AND c = $(a)", "d = $(b)"], {"a": 1, "b": 2}, first_param_index=3
    )
    assert assembled.texts == ("a = $3 AND c = $4", "d = $3")
    assert assembled.params == (2, 1)


def test_a_placeholder_without_a_value_is_refused_naming_it() -> None:
    with pytest.raises(RenderArgumentError, match=r"bind \$\(x\) has no value"):
        number_binds(["a = $(x)"], {"y": 1})


def test_a_value_no_placeholder_uses_is_refused_naming_it() -> None:
    with pytest.raises(RenderArgumentError, match=r"\['y'\]"):
        number_binds(["a = $(x)"], {"x": 1, "y": 2})


@pytest.mark.parametrize("name", ["", "1a", "a-b", "a)", "a b", "x" * 64])
def test_a_bind_name_that_is_not_a_plain_identifier_is_refused(name: str) -> None:
    with pytest.raises(RenderArgumentError, match="not a plain identifier"):
        named_bind(name)
    with pytest.raises(RenderArgumentError):
        compile_where("n == 1", {}, [TABLE], named=name or "-")


@given(st.text(max_size=30))
def test_no_parameter_value_reaches_the_named_sql_or_its_numbering(value: str) -> None:
    try:
        compiled = compile_where("name == '${p}'", {"p": value}, [TABLE], named="where_")
    except FilterError:  # a value the column cannot take is refused: nothing to assemble
        return
    assembled = number_binds([compiled.sql], {"where_0": compiled.params[0]}, 1)
    assert assembled.texts == ('"name" = $1::text',)
    assert assembled.params == compiled.params


def test_leading_names_take_the_first_numbers_in_the_order_given_then_first_appearance() -> None:
    assembled = number_binds(
        ["SELECT $(s) WHERE a = $(k) AND b = $(x) AND c = $(k) LIMIT $(n)"],
        {"x": "scope", "k": "key", "n": 5, "s": "select"},
        leading=["n", "k"],
    )
    assert assembled.texts == ("SELECT $3 WHERE a = $2 AND b = $4 AND c = $2 LIMIT $1",)
    assert assembled.params == (5, "key", "select", "scope")


def test_a_leading_name_the_sql_does_not_use_is_refused() -> None:
    with pytest.raises(RenderArgumentError, match=r"does not use: \['n'\]"):
        number_binds(["a = $(k)"], {"k": 1, "n": 2}, leading=["n", "k"])
    with pytest.raises(RenderArgumentError, match=r"bind \$\(m\) has no value"):
        number_binds(["a = $(k)"], {"k": 1}, leading=["m"])
    with pytest.raises(RenderArgumentError, match="listed twice"):
        number_binds(["a = $(k)"], {"k": 1}, leading=["k", "k"])


@pytest.mark.parametrize(
    ("sql", "numbered"),
    [
        ("a = '$(x)' AND b = $(x)", "a = '$(x)' AND b = $1"),
        ("a = 'it''s $(x)' || $(x)", "a = 'it''s $(x)' || $1"),
        ('"$(x)" = $(x)', '"$(x)" = $1'),
        ('"a""$(x)" = $(x)', '"a""$(x)" = $1'),
        ("a = E'\\'$(x)' AND $(x)", "a = E'\\'$(x)' AND $1"),
        ("a LIKE $(x) ESCAPE '\\'", "a LIKE $1 ESCAPE '\\'"),
        ("$$ $(x) $$ || $tag$ '$(x) $tag$ || $(x)", "$$ $(x) $$ || $tag$ '$(x) $tag$ || $1"),
        ("$(x) -- $(x) is a comment\n", "$1 -- $(x) is a comment\n"),
        ("/* $(x) */ $(x)", "/* $(x) */ $1"),
        ("$(x)::text::xid8 = a::int8", "$1::text::xid8 = a::int8"),
        ("$(x)::text[]::uuid[]", "$1::text[]::uuid[]"),
    ],
)
def test_names_inside_literals_quoted_identifiers_or_comments_are_text_and_casts_are_not_binds(
    sql: str, numbered: str
) -> None:
    assert number_binds([sql], {"x": 1}).texts == (numbered,)


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("a = $1 AND b = $(x)", r"positional \$1"),
        ("a = 'open $(x)", "unterminated quoted text"),
        ('"open $(x)', "unterminated quoted text"),
        ("$$ open $(x)", "unterminated dollar quote or comment"),
        ("/* open $(x)", "unterminated dollar quote or comment"),
        ("a = $(x) AND b = $(not a name)", "is not a named bind"),
        ("a = $(x) AND b = $(1x)", "is not a named bind"),
    ],
)
def test_sql_that_cannot_be_numbered_unambiguously_is_refused(sql: str, message: str) -> None:
    with pytest.raises(RenderArgumentError, match=message):
        number_binds([sql], {"x": 1})
