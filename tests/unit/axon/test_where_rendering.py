"""Rendering `where:` filters: the spec's examples, casts, values, precedence, digests."""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal

import pytest
from mnemo_axon import (
    UNSCOPED_DIGEST,
    AxonType,
    RenderArgumentError,
    StoreDecl,
    TableColumns,
    compile_where,
    load_deployment,
)
from mnemo_axon.errors import TypeMismatchError
from mnemo_axon.where import format_filter, parse_filter

TENANT = "4b1c0b8e-35d5-4a5f-9c69-0d3f7fd0a5b8"
TABLE = TableColumns.of(
    "LtmSummaries",
    {
        "tenant_id": "Uuid",
        "a": "Integer",
        "big": "BigInt",
        "f": "Float",
        "d": "Double",
        "amount": "Numeric",
        "flag": "Boolean",
        "name": "Text",
        "t": "Timestamptz",
        "day": "Date",
        "meta": "Json",
    },
)


def test_the_spec_example_binds_a_tenant_uuid() -> None:
    compiled = compile_where("tenant_id == '${tenant_id}'", {"tenant_id": TENANT}, [TABLE])
    assert compiled.sql == '"tenant_id" = $1::uuid'
    assert compiled.params == (uuid.UUID(TENANT),)
    assert compiled.param_types == (AxonType.UUID,)
    assert compiled.next_param_index == 2


@pytest.mark.parametrize(
    ("column", "literal", "cast", "value"),
    [
        ("a", "1", "integer", 1),
        ("big", "-9223372036854775808", "bigint", -(2**63)),
        ("f", "0.25", "double precision", 0.25),
        ("d", "-3", "double precision", -3.0),
        ("amount", "10.10", "numeric", Decimal("10.10")),
        ("meta", "7", "jsonb", "7"),
    ],
)
def test_a_number_is_cast_to_its_columns_type(
    column: str, literal: str, cast: str, value: object
) -> None:
    compiled = compile_where(f"{column} > {literal}", {}, [TABLE])
    assert compiled.sql == f'"{column}" > $1::{cast}'
    assert compiled.params == (value,)
    assert type(compiled.params[0]) is type(value)


@pytest.mark.parametrize(
    ("column", "text", "value"),
    [
        ("tenant_id", TENANT.upper(), uuid.UUID(TENANT)),
        ("a", "-42", -42),
        ("f", "1e-3", 0.001),
        ("amount", "0.1", Decimal("0.1")),
        ("flag", "TRUE", True),
        ("name", 'it\'s \\ "quoted"', 'it\'s \\ "quoted"'),
        ("t", "2024-05-01T12:00:00Z", datetime(2024, 5, 1, 12, tzinfo=UTC)),
        (
            "t",
            "2024-05-01 14:00:00+02:00",
            datetime(2024, 5, 1, 14, tzinfo=timezone(timedelta(hours=2))),
        ),
        ("day", "2024-02-29", date(2024, 2, 29)),
        ("meta", '{"k": [1, 2.5, null]}', '{"k": [1, 2.5, null]}'),
    ],
)
def test_a_quoted_value_becomes_the_python_type_asyncpg_wants(
    column: str, text: str, value: object
) -> None:
    compiled = compile_where(f"{column} = '${{v}}'", {"v": text}, [TABLE])
    assert compiled.params == (value,)
    assert type(compiled.params[0]) is type(value)


def test_parameters_that_are_not_text_are_written_the_way_their_column_reads_them() -> None:
    stamp = datetime(2024, 5, 1, 12, 30, tzinfo=UTC)
    compiled = compile_where(
        "a = '${n}' AND flag = '${yes}' AND meta = '${obj}' AND tenant_id = '${id}' "
        "AND t = '${when}' AND amount = '${money}' AND f = '${ratio}' AND day = '${today}'",
        {
            "n": 42,
            "yes": False,
            "obj": {"b": [1, "ü"]},
            "id": uuid.UUID(TENANT),
            "when": stamp,
            "money": Decimal("12.50"),
            "ratio": 0.1,
            "today": date(2024, 5, 1),
        },
        [TABLE],
    )
    assert compiled.params == (
        42,
        False,
        '{"b": [1, "ü"]}',
        uuid.UUID(TENANT),
        stamp,
        Decimal("12.50"),
        0.1,
        date(2024, 5, 1),
    )


def test_null_renders_is_null_and_is_not_null_without_a_parameter() -> None:
    assert compile_where("tenant_id = null", {}, [TABLE]).sql == '"tenant_id" IS NULL'
    assert compile_where("tenant_id == NULL", {}, [TABLE]).sql == '"tenant_id" IS NULL'
    assert compile_where("tenant_id != Null", {}, [TABLE]).sql == '"tenant_id" IS NOT NULL'
    compiled = compile_where("tenant_id <> NULL", {}, [TABLE])
    assert compiled.sql == '"tenant_id" IS NOT NULL'
    assert compiled.params == ()


def test_a_quoted_null_is_the_text_null_not_a_missing_value() -> None:
    compiled = compile_where("name = 'NULL'", {}, [TABLE])
    assert compiled.sql == '"name" = $1::text'
    assert compiled.params == ("NULL",)


def test_time_values_render_inline_from_an_integer_and_the_closed_unit_list() -> None:
    assert compile_where("t > now()", {}, [TABLE]).sql == '"t" > now()'
    assert (
        compile_where("t >= NOW ( ) - INTERVAL '30 minutes'", {}, [TABLE]).sql
        == "\"t\" >= now() - interval '30 minute'"
    )
    assert (
        compile_where("day < now() + interval ' 2 Weeks '", {}, [TABLE]).sql
        == "\"day\" < now() + interval '2 week'"
    )


def test_and_binds_tighter_than_or_and_the_whole_filter_is_one_parenthesised_predicate() -> None:
    compiled = compile_where(
        "a = 1 AND big = 2 OR name like 'x%' and flag = TRUE or day = null", {}, [TABLE]
    )
    assert compiled.sql == (
        '(("a" = $1::integer AND "big" = $2::bigint) OR ("name" LIKE $3::text ESCAPE \'\\\' '
        'AND "flag" = $4::boolean) OR "day" IS NULL)'
    )
    assert compile_where("a = 1 AND big = 2", {}, [TABLE]).sql == (
        '("a" = $1::integer AND "big" = $2::bigint)'
    )
    assert compile_where("a = 1 OR big = 2", {}, [TABLE]).sql == (
        '("a" = $1::integer OR "big" = $2::bigint)'
    )


def test_every_operator_has_its_sql_spelling() -> None:
    compiled = compile_where(
        "a = 1 AND a == 1 AND a != 1 AND a <> 1 AND a > 1 AND a >= 1 AND a < 1 AND a <= 1",
        {},
        [TABLE],
    )
    operators = [part.split(" ")[1] for part in compiled.sql.strip("()").split(" AND ")]
    assert operators == ["=", "=", "<>", "<>", ">", ">=", "<", "<="]


def test_a_qualifier_and_a_first_index_let_the_filter_sit_inside_a_larger_query() -> None:
    compiled = compile_where(
        "tenant_id = '${t}' AND a > 3", {"t": TENANT}, [TABLE], 3, qualifier="d"
    )
    assert compiled.sql == '("d"."tenant_id" = $3::uuid AND "d"."a" > $4::integer)'
    assert compiled.next_param_index == 5


@pytest.mark.parametrize("qualifier", ['d"', "1d", "", "d.e", "x" * 64])
def test_a_qualifier_that_is_not_a_plain_identifier_is_refused(qualifier: str) -> None:
    with pytest.raises(RenderArgumentError):
        compile_where("a = 1", {}, [TABLE], qualifier=qualifier)


def test_bad_render_arguments_are_the_callers_error_not_the_filters() -> None:
    with pytest.raises(RenderArgumentError):
        compile_where("a = 1", {}, [])
    with pytest.raises(RenderArgumentError):
        compile_where("a = 1", {}, [TABLE], 0)
    with pytest.raises(RenderArgumentError):
        TableColumns.of("s", {"a": "Varchar"})
    with pytest.raises(RenderArgumentError):
        TableColumns("s", {"a": "Uuid"})  # type: ignore[dict-item]  # proving it is refused


def test_one_filter_serves_the_documents_and_the_relations_store_of_a_graph() -> None:
    deployment = load_deployment(
        "axonstore Docs { schema { id: Uuid title: Text tenant_id: Uuid } }\n"
        "axonstore Edges { schema { f: Uuid t: Uuid k: Text w: Float tenant_id: Uuid } }\n"
    )
    stores = [deployment.store("Docs"), deployment.store("Edges")]
    tables = [TableColumns.from_store(store) for store in stores if isinstance(store, StoreDecl)]
    compiled = compile_where("tenant_id == '${tenant_id}'", {"tenant_id": TENANT}, tables)
    assert compiled.sql == '"tenant_id" = $1::uuid'


def test_escaped_dollar_braces_stay_literal_and_values_are_never_expanded_again() -> None:
    compiled = compile_where(
        "name = '\\${x}' OR name = '${y}'", {"x": "never used", "y": "${x}"}, [TABLE]
    )
    assert compiled.params == ("${x}", "${x}")


def test_a_reference_inside_a_larger_string_is_interpolated_in_place() -> None:
    compiled = compile_where(
        "name LIKE '${prefix}%' AND name != '${e.kind}-x'",
        {"prefix": "Al_", "e": {"kind": "cite"}},
        [TABLE],
    )
    assert compiled.params == ("Al\\_%", "cite-x")  # the parameter's `_` is a literal


def test_a_like_parameter_is_data_and_wildcards_come_only_from_the_filters_own_text() -> None:
    compiled = compile_where("name LIKE '%${q}%'", {"q": "50%_off\\"}, [TABLE])
    assert compiled.sql == "\"name\" LIKE $1::text ESCAPE '\\'"
    assert compiled.params == ("%50\\%\\_off\\\\%",)
    widened = compile_where("name LIKE '${c}'", {"c": "%"}, [TABLE])
    assert widened.params == ("\\%",)  # matches only the client named `%`


def test_a_like_parameter_scopes_like_the_same_text_written_escaped_in_the_filter() -> None:
    bound = compile_where("name LIKE '${c}'", {"c": "a%_\\"}, [TABLE])
    written = compile_where("name LIKE 'a\\\\%\\\\_\\\\\\\\'", {}, [TABLE])
    assert bound.params == written.params
    assert bound.scope_digest == written.scope_digest


def test_literal_text_ending_in_the_escape_character_before_a_like_parameter_is_refused() -> None:
    with pytest.raises(TypeMismatchError, match="before \\$\\{c\\} ends with an unescaped"):
        compile_where("name LIKE 'a\\\\${c}'", {"c": "%"}, [TABLE])
    # An escaped backslash is a literal one: the parameter still follows it as data.
    compiled = compile_where("name LIKE 'a\\\\\\\\${c}'", {"c": "%"}, [TABLE])
    assert compiled.params == ("a\\\\\\%",)


def test_keywords_are_read_in_any_case() -> None:
    compiled = compile_where("flag = true and name like 'a' Or flag = False", {}, [TABLE])
    assert compiled.params == (True, "a", False)


def test_the_scope_digest_is_the_same_for_the_same_scope_written_differently() -> None:
    params = {"tenant_id": TENANT}
    base = compile_where("tenant_id == '${tenant_id}' AND a > 1", params, [TABLE]).scope_digest
    same = [
        compile_where("tenant_id = '${tenant_id}'  and  a > 1", params, [TABLE]),
        compile_where(f"tenant_id = '{TENANT.upper()}' AND a > 1", {}, [TABLE]),
        compile_where("tenant_id = '${tenant_id}' AND a > 1", params, [TABLE], 7, qualifier="x"),
    ]
    assert all(compiled.scope_digest == base for compiled in same)
    other_tenant = {"tenant_id": str(uuid.UUID(int=1))}
    different = [
        compile_where("tenant_id = '${tenant_id}' AND a > 1", other_tenant, [TABLE]),
        compile_where("tenant_id = '${tenant_id}' AND a > 2", params, [TABLE]),
        compile_where("tenant_id = '${tenant_id}' OR a > 1", params, [TABLE]),
        compile_where("tenant_id = '${tenant_id}' AND a >= 1", params, [TABLE]),
    ]
    digests = {compiled.scope_digest for compiled in different} | {base, UNSCOPED_DIGEST}
    assert len(digests) == len(different) + 2


def test_formatting_a_filter_gives_text_that_parses_back_to_the_same_filter() -> None:
    text = (
        "tenant_id == \"${tenant_id}\" and name like 'it\\'s ${a.b} \\${literal}' "
        "OR t > now() - interval '3 days' AND flag != null AND a <= -2.5"
    )
    parsed = parse_filter(text)
    formatted = format_filter(parsed)
    assert formatted == (
        "tenant_id = '${tenant_id}' AND name LIKE 'it\\'s ${a.b} \\${literal}' OR t > now() - "
        "interval '3 day' AND flag <> NULL AND a <= -2.5"
    )
    assert parse_filter(formatted) == parsed


def test_an_integer_parameter_too_long_for_any_column_is_a_filter_error() -> None:
    with pytest.raises(TypeMismatchError, match="integer of about 5001 digits"):
        compile_where("name = '${x}'", {"x": 10**5000}, [TABLE])


@pytest.mark.parametrize("number", ["1e999999", "1e131072", "1e-16384", "-1e-999999"])
def test_a_json_number_postgres_jsonb_cannot_hold_is_refused_before_sql(number: str) -> None:
    with pytest.raises(TypeMismatchError, match="outside what Postgres jsonb holds"):
        compile_where("meta = '${x}'", {"x": f'{{"n": {number}}}'}, [TABLE])
    edge = compile_where("meta = '${x}'", {"x": '[1e131071, 1e-16383, "1e999999"]'}, [TABLE])
    assert edge.params == ('[1e131071, 1e-16383, "1e999999"]',)
