"""Property and fuzz tests of the `where:` compiler, the security boundary between requests and SQL.

- No parameter value (nor a literal written in the filter) ever reaches the SQL text: the SQL
  depends on the filter's structure and column types only, and the bound value equals the input.
- Formatting a filter and parsing it back gives the same structure; a bound filter, formatted,
  compiles to the same SQL, values and scope as the original with its parameters.
- Arbitrary bytes and arbitrary parameters raise nothing but the filter's own error types.
"""

from __future__ import annotations

import uuid

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from mnemo_axon import FilterError, TableColumns, compile_where
from mnemo_axon.errors import TypeMismatchError
from mnemo_axon.where import (
    BooleanValue,
    Condition,
    Connector,
    Filter,
    NullValue,
    NumberValue,
    Operator,
    ParameterRef,
    StringValue,
    TextPart,
    TimeUnit,
    TimeValue,
    Value,
    format_filter,
    parse_filter,
)
from mnemo_axon.where.binder import escape_like

TENANT = "4b1c0b8e-35d5-4a5f-9c69-0d3f7fd0a5b8"
TABLE = TableColumns.of(
    "docs",
    {
        "name": "Text",
        "tenant_id": "Uuid",
        "n": "Integer",
        "t": "Timestamptz",
        "meta": "Json",
        "flag": "Boolean",
    },
)

CLASSIC_PAYLOADS = [
    "x' OR '1'='1",
    "' OR 1=1 --",
    "'; DROP TABLE docs; --",
    "\\'; SELECT pg_sleep(10); --",
    '" OR ""="',
    "') OR ('a'='a",
    "x' AND tenant_id != '",
    "/* comment */",
    "*/ OR 1=1 /*",
    "$1",
    "$1::text OR TRUE",
    "${x}",
    "${tenant_id}",
    "\\",
    "\\\\",
    "'",
    '"',
    "--",
    ";",
    "/*",
    "NULL",
    "%",
    "_",
    "\u2019 OR \u20191\u2019=\u20191",
    "\uff07 OR 1=1",
    "🙂' OR '🙂'='🙂",
    "E'\\x27'",
    "$$ OR TRUE $$",
    "\r\n OR TRUE",
    "a" * 100_000,
    "'" * 5000,
]

values = (
    st.sampled_from(CLASSIC_PAYLOADS)
    | st.text()
    | st.text(alphabet="'\"\\$%_{}-;/*\n ORANDor=1", max_size=200)
    | st.text(min_size=1000, max_size=20_000)
    | st.lists(st.sampled_from(CLASSIC_PAYLOADS), min_size=2, max_size=5).map("".join)
)

FILTER = "name = '${v}' AND tenant_id == '${t}' OR name LIKE '%${v}%' AND meta = '${m}'"
REFERENCE = compile_where(FILTER, {"v": "x", "t": TENANT, "m": "{}"}, [TABLE])


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(value=values)
def test_a_parameter_value_never_reaches_the_sql_and_is_bound_exactly(value: str) -> None:
    params = {"v": value, "t": TENANT, "m": {"payload": value}}
    try:
        compiled = compile_where(FILTER, params, [TABLE])
    except TypeMismatchError:
        assert "\x00" in value  # Postgres text cannot hold NUL; refused before any SQL runs
        return
    assert compiled.sql == REFERENCE.sql
    assert compiled.params[0] == value
    assert type(compiled.params[0]) is str
    # In LIKE, the parameter is escaped: only the filter's own `%` are wildcards.
    assert compiled.params[2] == f"%{escape_like(value)}%"
    assert compiled.params[1] == uuid.UUID(TENANT)
    # The SQL is the same text whatever the value; so a value appears in it only if it is a
    # piece of the value-free reference itself (" AND", "text"), never as injected text.
    if value not in REFERENCE.sql:
        assert value not in compiled.sql


def test_no_classic_payload_appears_in_the_sql() -> None:
    for payload in CLASSIC_PAYLOADS:
        compiled = compile_where(FILTER, {"v": payload, "t": TENANT, "m": "{}"}, [TABLE])
        assert compiled.sql == REFERENCE.sql
        assert compiled.params[0] == payload


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(value=values)
def test_a_literal_written_in_the_filter_is_bound_like_a_parameter(value: str) -> None:
    assume("\x00" not in value)
    literal = Filter(
        (Condition("name", Operator.EQ, StringValue((TextPart(value),) if value else ())),), ()
    )
    compiled = compile_where(format_filter(literal), {}, [TABLE])
    assert compiled.sql == '"name" = $1::text'
    assert compiled.params == (value,)


@given(value=values)
def test_a_payload_in_a_nested_field_or_a_uuid_column_cannot_widen_the_scope(value: str) -> None:
    try:
        compiled = compile_where("tenant_id == '${e.tenant}'", {"e": {"tenant": value}}, [TABLE])
    except TypeMismatchError as error:
        refused: TypeMismatchError | None = error
    else:
        refused = None
    if refused is not None:
        assert refused.position == 13
        return
    assert compiled.sql == '"tenant_id" = $1::uuid'
    assert compiled.params == (uuid.UUID(value.strip("{}")),)


# --- structure round trip -------------------------------------------------------------------------

KEYWORDS = {"AND", "OR", "TRUE", "FALSE", "NULL", "LIKE"}
columns = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,62}", fullmatch=True).filter(
    lambda name: name.upper() not in KEYWORDS
)
paths = st.lists(
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True), min_size=1, max_size=3
)


def merged_parts(items: list[str | tuple[str, ...]]) -> tuple[TextPart | ParameterRef, ...]:
    parts: list[TextPart | ParameterRef] = []
    for item in items:
        if isinstance(item, str):
            if not item:
                continue
            if parts and isinstance(parts[-1], TextPart):
                parts[-1] = TextPart(parts[-1].text + item)
            else:
                parts.append(TextPart(item))
        else:
            parts.append(ParameterRef(item))
    return tuple(parts)


strings = st.lists(st.text() | paths.map(tuple), max_size=5).map(merged_parts).map(StringValue)
numbers = st.from_regex(r"-?[0-9]{1,12}(\.[0-9]{1,6})?", fullmatch=True).map(NumberValue)
short_units = st.sampled_from([TimeUnit.SECOND, TimeUnit.MINUTE, TimeUnit.HOUR, TimeUnit.DAY])
long_units = st.sampled_from([TimeUnit.WEEK, TimeUnit.MONTH, TimeUnit.YEAR])
times = (
    st.just(TimeValue())
    | st.builds(
        TimeValue,
        offset=st.sampled_from(["+", "-"]),
        amount=st.integers(0, 999_999),
        unit=short_units,
    )
    | st.builds(
        TimeValue, offset=st.sampled_from(["+", "-"]), amount=st.integers(0, 6000), unit=long_units
    )
)


@st.composite
def conditions(draw: st.DrawFn) -> Condition:
    operator = draw(st.sampled_from(Operator))
    value: Value
    if operator is Operator.LIKE:
        value = draw(strings)
    elif operator in (Operator.EQ, Operator.NE):
        value = draw(
            strings
            | numbers
            | times
            | st.builds(BooleanValue, st.booleans())
            | st.just(NullValue())
        )
    else:
        value = draw(strings | numbers | times | st.builds(BooleanValue, st.booleans()))
    return Condition(draw(columns), operator, value)


@st.composite
def filters(draw: st.DrawFn) -> Filter:
    chosen = draw(st.lists(conditions(), min_size=1, max_size=12))
    connectors = draw(
        st.lists(st.sampled_from(Connector), min_size=len(chosen) - 1, max_size=len(chosen) - 1)
    )
    return Filter(tuple(chosen), tuple(connectors))


@settings(max_examples=300)
@given(filters())
def test_a_formatted_filter_parses_back_to_the_same_structure(original: Filter) -> None:
    assert parse_filter(format_filter(original)) == original


@settings(max_examples=200)
@given(value=values, pattern=values)
def test_a_bound_filter_formatted_compiles_like_the_original_with_its_parameters(
    value: str, pattern: str
) -> None:
    assume("\x00" not in value + pattern)
    text = "name = '${v}' AND tenant_id = '${t}' OR name LIKE '${p}%' AND n > -3"
    params = {"v": value, "t": TENANT, "p": pattern.rstrip("\\")}
    original = compile_where(text, params, [TABLE])
    again = compile_where(format_filter(original.bound), {}, [TABLE])
    assert (again.sql, again.params, again.scope_digest) == (
        original.sql,
        original.params,
        original.scope_digest,
    )


# --- fuzz ----------------------------------------------------------------------------------------

FRAGMENTS = [
    "name",
    "tenant_id",
    "n",
    "t",
    "meta",
    "flag",
    "nope",
    " ",
    "  ",
    "\n",
    "\t",
    "=",
    "==",
    "!=",
    "<>",
    ">",
    ">=",
    "<",
    "<=",
    "!",
    "LIKE",
    "like",
    "AND",
    "and",
    "OR",
    "or",
    "NULL",
    "TRUE",
    "false",
    "'",
    '"',
    "\\",
    "${v}",
    "${e.x}",
    "${",
    "}",
    "{",
    "$",
    "now()",
    "now(",
    "NOW ( )",
    "-",
    "+",
    "interval",
    "'3 days'",
    "'x days'",
    "1",
    "1.5",
    "-2",
    "1.2.3",
    ".",
    "(",
    ")",
    ";",
    "é",
    "\x00",
    "\ud800",
    "🙂",
    "'abc'",
    "'%'",
    "'2024-05-01T00:00:00Z'",
    "'{\"a\": 1}'",
    "x" * 70,
    TENANT,
]
grammar_like = st.lists(st.sampled_from(FRAGMENTS), max_size=30).map("".join)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=8,
)
odd_values = (
    st.builds(object)
    | st.binary(max_size=5)
    | st.uuids()
    | st.decimals()
    | st.datetimes()
    | st.dates()
)
parameters = st.dictionaries(
    st.sampled_from(["v", "e", "t", "x"]),
    json_values | odd_values | st.dictionaries(st.just("x"), json_values | odd_values),
    max_size=4,
)


VALUE_FRAGMENTS = [
    "'${v}'",
    "'${e.x}'",
    '"${t}"',
    "'x${v}y'",
    "NULL",
    "TRUE",
    "false",
    "1",
    "-2.5",
    "now()",
    "now() - interval '3 days'",
    "'abc'",
    "'%'",
    f"'{TENANT}'",
    "'{\"a\": 1}'",
    "'2024-05-01T00:00:00Z'",
    "Alice",
    "'\\'",
    "''",
]


@st.composite
def near_valid(draw: st.DrawFn) -> str:
    """Mostly well-formed filters (so the binder and renderer are reached), sometimes damaged."""
    pieces = []
    for index in range(draw(st.integers(1, 6))):
        if index:
            pieces.append(draw(st.sampled_from(["AND", "OR", "and", "Or"])))
        pieces.append(
            draw(st.sampled_from(["name", "tenant_id", "n", "t", "meta", "flag", "nope"]))
        )
        pieces.append(draw(st.sampled_from(["=", "==", "!=", "<>", ">", "<=", "LIKE"])))
        pieces.append(draw(st.sampled_from(VALUE_FRAGMENTS)))
    if draw(st.booleans()):
        pieces.insert(draw(st.integers(0, len(pieces))), draw(st.sampled_from(FRAGMENTS)))
    return " ".join(pieces)


def compile_or_filter_error(text: str, params: dict[str, object]) -> None:
    try:
        compile_where(text, params, [TABLE])
    except FilterError as error:
        refused: FilterError | None = error
    else:
        refused = None
    if refused is not None:
        assert 0 <= refused.position <= len(text)
        assert refused.code != FilterError.code


@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=400), params=parameters)
def test_random_bytes_raise_nothing_but_filter_errors(
    data: bytes, params: dict[str, object]
) -> None:
    compile_or_filter_error(data.decode("utf-8", "surrogateescape"), params)
    compile_or_filter_error(data.decode("latin-1"), params)


@settings(max_examples=1000, suppress_health_check=[HealthCheck.too_slow])
@given(text=grammar_like, params=parameters)
def test_grammar_shaped_noise_raises_nothing_but_filter_errors(
    text: str, params: dict[str, object]
) -> None:
    compile_or_filter_error(text, params)


@settings(max_examples=1000, suppress_health_check=[HealthCheck.too_slow])
@given(text=near_valid(), params=parameters)
def test_nearly_valid_filters_raise_nothing_but_filter_errors(
    text: str, params: dict[str, object]
) -> None:
    compile_or_filter_error(text, params)


@settings(max_examples=300)
@given(text=st.text(), params=parameters)
def test_random_text_raises_nothing_but_filter_errors(text: str, params: dict[str, object]) -> None:
    compile_or_filter_error(text, params)
