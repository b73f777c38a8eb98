"""Differential test of the `where:` compiler against real Postgres.

A table holds tricky values (quotes, backslashes, LIKE wildcards, unicode, NULLs, SQL-looking text,
extreme numbers, times around now). For generated filters and parameters, the rows Postgres returns
for the compiled SQL must be exactly the rows a plain-Python evaluation of the same bound filter
selects (SQL three-valued logic, C collation, LIKE with backslash escapes). And no injection payload,
as a parameter, ever returns a row whose value is not the payload itself, in `LIKE` too: a
parameter's `%` and `_` are data, wildcards come only from the filter's own text.
"""

from __future__ import annotations

import calendar
import json
import re
import uuid
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import asyncpg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mnemo_axon import AxonType, CompiledWhere, TableColumns, compile_where
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
    format_filter,
)

TENANTS = [
    uuid.UUID(int=1),
    uuid.UUID("4b1c0b8e-35d5-4a5f-9c69-0d3f7fd0a5b8"),
    uuid.uuid5(uuid.NAMESPACE_URL, "c"),
]

PAYLOADS = [
    "x' OR '1'='1",
    "' OR 1=1 --",
    "'; DROP TABLE probe; --",
    "\\'; SELECT 1; --",
    "') OR ('a'='a",
    "%",
    "_",
    "%%",
    "\\",
    "*/ OR TRUE /*",
    "$1",
    "${name}",
    "NULL",
    "",
]

NAMES = [
    "Alice",
    "alice",
    "ALICE",
    "O'Brien",
    'say "hi"',
    "back\\slash",
    "trailing\\",
    "100%",
    "a_b",
    "a%b",
    "ünïcødé",
    "🙂 smile",
    "tab\there",
    "line\nbreak",
    "-- comment",
    "/* block */",
    *PAYLOADS,
]

TABLE = TableColumns.of(
    "probe",
    {
        "id": "Integer",
        "name": "Text",
        "tenant_id": "Uuid",
        "n": "Integer",
        "big": "BigInt",
        "score": "Double",
        "amount": "Numeric",
        "flag": "Boolean",
        "t": "Timestamptz",
        "day": "Date",
        "meta": "Json",
    },
)

JSON_TEXTS = [
    '{"a": 1}',
    '{"a": 1.0}',
    "[]",
    '"x\' OR 1=1"',
    "null",
    "true",
    "1",
    '{"b": [1, "ü"]}',
]


@dataclass(frozen=True, slots=True)
class Probe:
    connection: asyncpg.Connection
    table: str
    rows: tuple[Mapping[str, object], ...]


@pytest.fixture(scope="module")
async def probe(owner_dsn: str) -> AsyncIterator[Probe]:
    schema = f"axon_where_{uuid.uuid4().hex[:12]}"
    connection = await asyncpg.connect(owner_dsn, server_settings={"timezone": "UTC"})
    table = f'"{schema}"."probe"'
    try:
        await connection.execute(f'CREATE SCHEMA "{schema}"')
        await connection.execute(
            f"""CREATE TABLE {table} (
                id integer PRIMARY KEY, name text COLLATE "C", tenant_id uuid, n integer,
                big bigint, score double precision, amount numeric, flag boolean,
                t timestamptz, day date, meta jsonb)"""
        )
        rows = []
        numbers = [None, 0, -1, 3, 2**31 - 1, -(2**31)]
        bigs = [None, 0, 2**63 - 1, -(2**63), 10]
        scores = [None, 0.1, 0.5, -2.5, 1e300, 0.0]
        amounts = [
            None,
            Decimal("10.10"),
            Decimal("10.1"),
            Decimal("-0.001"),
            Decimal("123456789.987654321"),
        ]
        offsets = [None, "-10 minutes", "-2 days", "+1 day", "-40 days", "-3 years", "+2 hours"]
        days = [None, date(2024, 2, 29), date(1999, 12, 31), date(2100, 1, 1)]
        for index, name in enumerate([*NAMES, None, None]):
            rows.append(
                (
                    index,
                    name,
                    None if index % 7 == 6 else TENANTS[index % 3],
                    numbers[index % len(numbers)],
                    bigs[index % len(bigs)],
                    scores[index % len(scores)],
                    amounts[index % len(amounts)],
                    None if index % 5 == 4 else index % 2 == 0,
                    offsets[index % len(offsets)],
                    days[index % len(days)],
                    JSON_TEXTS[index % len(JSON_TEXTS)] if index % 9 else None,
                )
            )
        await connection.executemany(
            f"INSERT INTO {table} VALUES ($1, $2, $3, $4, $5, $6, $7, $8, "
            f"now() + $9::text::interval, $10, $11::jsonb)",
            rows,
        )
        records = await connection.fetch(f"SELECT * FROM {table} ORDER BY id")
        yield Probe(connection, table, tuple(dict(record) for record in records))
    finally:
        await connection.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        await connection.close()


async def selected_ids(probe: Probe, compiled: CompiledWhere) -> tuple[list[int], datetime]:
    record = await probe.connection.fetchrow(
        f"SELECT now() AS at, coalesce(array_agg(id ORDER BY id), '{{}}') AS ids "
        f"FROM {probe.table} WHERE {compiled.sql}",
        *compiled.params,
    )
    assert record is not None
    return list(record["ids"]), record["at"]


# --- the plain-Python evaluation ------------------------------------------------------------------


def like(value: str, pattern: str) -> bool:
    regex, index = [], 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\" and index + 1 < len(pattern):
            regex.append(re.escape(pattern[index + 1]))
            index += 2
            continue
        regex.append(".*" if char == "%" else "." if char == "_" else re.escape(char))
        index += 1
    return re.fullmatch("".join(regex), value, re.DOTALL) is not None


def json_equal(left: object, right: object) -> bool:
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    if isinstance(left, int | float) and isinstance(right, int | float):
        return Decimal(str(left)) == Decimal(str(right))
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(map(json_equal, left, right))
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(json_equal(left[k], right[k]) for k in left)
    return type(left) is type(right) and left == right


def shifted(now: datetime, value: TimeValue) -> datetime:
    if value.offset is None or value.unit is None:
        return now
    sign = 1 if value.offset == "+" else -1
    if value.unit in (TimeUnit.MONTH, TimeUnit.YEAR):
        months = sign * value.amount * (12 if value.unit is TimeUnit.YEAR else 1)
        years, month_index = divmod(now.month - 1 + months, 12)
        year, month = now.year + years, month_index + 1
        return now.replace(
            year=year, month=month, day=min(now.day, calendar.monthrange(year, month)[1])
        )
    seconds = {
        TimeUnit.SECOND: 1,
        TimeUnit.MINUTE: 60,
        TimeUnit.HOUR: 3600,
        TimeUnit.DAY: 86400,
        TimeUnit.WEEK: 604800,
    }
    return now + sign * timedelta(seconds=value.amount * seconds[value.unit])


def compare(left: object, operator: Operator, right: object) -> bool:
    if operator is Operator.LIKE:
        assert isinstance(left, str)
        assert isinstance(right, str)
        return like(left, right)
    if operator is Operator.EQ:
        return left == right
    if operator is Operator.NE:
        return left != right
    ordered = {
        Operator.GT: lambda a, b: a > b,
        Operator.GE: lambda a, b: a >= b,
        Operator.LT: lambda a, b: a < b,
        Operator.LE: lambda a, b: a <= b,
    }
    return bool(ordered[operator](left, right))


def evaluate(compiled: CompiledWhere, row: Mapping[str, object], now: datetime) -> bool:
    params = iter(compiled.params)
    results: list[bool | None] = []
    for condition in compiled.bound.conditions:
        cell = row[condition.column]
        value = condition.value
        if isinstance(value, NullValue):
            results.append((cell is None) == (condition.operator is Operator.EQ))
            continue
        right: object = shifted(now, value) if isinstance(value, TimeValue) else next(params)
        if cell is None:
            results.append(None)
            continue
        left: object = cell
        if (
            isinstance(cell, date)
            and not isinstance(cell, datetime)
            and isinstance(right, datetime)
        ):
            left = datetime(cell.year, cell.month, cell.day, tzinfo=UTC)
        if TABLE.columns[condition.column] is AxonType.JSON:
            equal = json_equal(json.loads(str(cell)), json.loads(str(right)))
            results.append(equal if condition.operator is Operator.EQ else not equal)
            continue
        results.append(compare(left, condition.operator, right))
    # SQL three-valued logic: AND groups, joined by OR.
    groups: list[list[bool | None]] = [[results[0]]]
    for connector, result in zip(compiled.bound.connectors, results[1:], strict=True):
        if connector is Connector.AND:
            groups[-1].append(result)
        else:
            groups.append([result])

    def conjunction(items: list[bool | None]) -> bool | None:
        if any(item is False for item in items):
            return False
        return None if any(item is None for item in items) else True

    return any(conjunction(group) is True for group in groups)


def expected_ids(probe: Probe, compiled: CompiledWhere, now: datetime) -> list[int]:
    return [int(str(row["id"])) for row in probe.rows if evaluate(compiled, row, now)]


# --- generated filters ----------------------------------------------------------------------------

ORDERING = [Operator.EQ, Operator.NE, Operator.GT, Operator.GE, Operator.LT, Operator.LE]
# NUL is left out: Postgres text cannot hold it, and the compiler refuses it before any SQL
# (tested in tests/unit/axon), so there is no row to compare.
text_values = st.sampled_from(NAMES) | st.text(st.characters(exclude_characters="\x00"), max_size=6)
like_patterns = st.sampled_from(
    [
        "%",
        "A%",
        "a%",
        "%\\%%",
        "%\\_%",
        "_",
        "a_b",
        "%'%",
        "%\\\\%",
        "O'%",
        "%e",
        "__%",
        "%🙂%",
        "x' OR '1'='1",
    ]
)
time_values = st.builds(
    TimeValue,
    offset=st.sampled_from(["+", "-"]),
    amount=st.integers(0, 50),
    unit=st.sampled_from(TimeUnit),
) | st.just(TimeValue())


def parameter(name: str) -> StringValue:
    return StringValue((ParameterRef((name,)),))


def written(text: str) -> StringValue:
    return StringValue((TextPart(text),) if text else ())


@st.composite
def generated_condition(draw: st.DrawFn, index: int) -> tuple[Condition, dict[str, object]]:
    column = draw(st.sampled_from(sorted(TABLE.columns)))
    axon_type = TABLE.columns[column]
    key = f"p{index}"
    if draw(st.integers(0, 9)) == 0:
        return Condition(column, draw(st.sampled_from([Operator.EQ, Operator.NE])), NullValue()), {}
    if axon_type is AxonType.TEXT:
        if draw(st.booleans()):
            # Wildcards written in the filter, a parameter (data: escaped, so never a wildcard),
            # or a parameter between wildcards written in the filter.
            shape = draw(st.sampled_from(["literal", "parameter", "contains"]))
            if shape == "literal":
                return Condition(column, Operator.LIKE, written(draw(like_patterns))), {}
            pattern = parameter(key)
            if shape == "contains":
                pattern = StringValue((TextPart("%"), ParameterRef((key,)), TextPart("%")))
            return Condition(column, Operator.LIKE, pattern), {key: draw(like_patterns)}
        return Condition(column, draw(st.sampled_from(ORDERING)), parameter(key)), {
            key: draw(text_values)
        }
    if axon_type is AxonType.UUID:
        value = draw(st.sampled_from(TENANTS) | st.uuids())
        return Condition(column, draw(st.sampled_from(ORDERING)), parameter(key)), {key: str(value)}
    if axon_type in (AxonType.INTEGER, AxonType.BIGINT):
        number = draw(st.sampled_from(["0", "-1", "3", "2147483647", "-2147483648", "7"]))
        return Condition(column, draw(st.sampled_from(ORDERING)), NumberValue(number)), {}
    if axon_type in (AxonType.DOUBLE, AxonType.NUMERIC):
        number = draw(
            st.sampled_from(["0.1", "10.1", "10.10", "-2.5", "0", "-0.001", "123456789.987654321"])
        )
        if draw(st.booleans()):
            return Condition(column, draw(st.sampled_from(ORDERING)), NumberValue(number)), {}
        return Condition(column, draw(st.sampled_from(ORDERING)), parameter(key)), {key: number}
    if axon_type is AxonType.BOOLEAN:
        operator = draw(st.sampled_from([Operator.EQ, Operator.NE]))
        if draw(st.booleans()):
            return Condition(column, operator, BooleanValue(draw(st.booleans()))), {}
        return Condition(column, operator, parameter(key)), {key: draw(st.booleans())}
    if axon_type in (AxonType.TIMESTAMPTZ, AxonType.DATE):
        if draw(st.booleans()):
            return Condition(column, draw(st.sampled_from(ORDERING)), draw(time_values)), {}
        literal = "2024-02-29" if axon_type is AxonType.DATE else "2024-02-29T12:00:00+01:00"
        return Condition(column, draw(st.sampled_from(ORDERING)), parameter(key)), {key: literal}
    assert axon_type is AxonType.JSON
    operator = draw(st.sampled_from([Operator.EQ, Operator.NE]))
    return Condition(column, operator, parameter(key)), {key: draw(st.sampled_from(JSON_TEXTS))}


@st.composite
def generated_filters(draw: st.DrawFn) -> tuple[Filter, dict[str, object]]:
    count = draw(st.integers(1, 4))
    conditions, params = [], {}
    for index in range(count):
        condition, values = draw(generated_condition(index))
        conditions.append(condition)
        params.update(values)
    connectors = tuple(draw(st.sampled_from(Connector)) for _ in range(count - 1))
    return Filter(tuple(conditions), connectors), params


@settings(
    max_examples=250,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=generated_filters())
async def test_postgres_returns_exactly_the_rows_a_python_evaluation_selects(
    probe: Probe, case: tuple[Filter, dict[str, object]]
) -> None:
    filtered, params = case
    compiled = compile_where(format_filter(filtered), params, [TABLE])
    ids, now = await selected_ids(probe, compiled)
    assert ids == expected_ids(probe, compiled, now), (compiled.sql, compiled.params)


@pytest.mark.parametrize("payload", PAYLOADS)
async def test_no_payload_ever_returns_a_row_that_does_not_hold_it(
    probe: Probe, payload: str
) -> None:
    for text in (
        "name = '${p}'",
        "name == '${p}' AND tenant_id = '${t}'",
        "tenant_id = '${t}' AND name != '${p}' AND name = '${p}'",
        "name LIKE '${p}'",
        "name LIKE '${p}' AND tenant_id = '${t}'",
    ):
        params = {"p": payload, "t": str(TENANTS[0])}
        compiled = compile_where(text, params, [TABLE])
        ids, now = await selected_ids(probe, compiled)
        assert ids == expected_ids(probe, compiled, now)
        holders = {int(str(row["id"])) for row in probe.rows if row["name"] == payload}
        assert set(ids) <= holders, (text, payload)


@pytest.mark.parametrize("payload", [*PAYLOADS, "100%", "a_b", "back\\slash", "trailing\\"])
async def test_a_like_parameter_between_the_filters_wildcards_matches_its_text_literally(
    probe: Probe, payload: str
) -> None:
    compiled = compile_where("name LIKE '%${p}%'", {"p": payload}, [TABLE])
    ids, _ = await selected_ids(probe, compiled)
    names = [(int(str(row["id"])), row["name"]) for row in probe.rows]
    assert ids == [i for i, name in names if isinstance(name, str) and payload in name]


async def test_a_wildcard_parameter_does_not_widen_a_scope_to_every_row(probe: Probe) -> None:
    # The adversarial finding: `client LIKE '${c}'` with `c = "%"` used to return every row.
    for wildcard in ("%", "_", "%%", "A%", "__%"):
        compiled = compile_where("name LIKE '${c}'", {"c": wildcard}, [TABLE])
        ids, _ = await selected_ids(probe, compiled)
        assert ids == [int(str(row["id"])) for row in probe.rows if row["name"] == wildcard]
    # The filter's own wildcards still are wildcards.
    every = compile_where("name LIKE '%'", {}, [TABLE])
    ids, _ = await selected_ids(probe, every)
    assert ids == [int(str(row["id"])) for row in probe.rows if row["name"] is not None]


async def test_a_qualified_filter_after_the_callers_own_parameters_runs_in_a_larger_query(
    probe: Probe,
) -> None:
    compiled = compile_where(
        "tenant_id = '${t}' AND name != NULL", {"t": str(TENANTS[1])}, [TABLE], 2, qualifier="d"
    )
    records = await probe.connection.fetch(
        f"SELECT d.id FROM {probe.table} AS d WHERE d.id >= $1 AND {compiled.sql} ORDER BY d.id",
        5,
        *compiled.params,
    )
    expected = [
        row["id"]
        for row in probe.rows
        if int(str(row["id"])) >= 5 and row["tenant_id"] == TENANTS[1] and row["name"] is not None
    ]
    assert [record["id"] for record in records] == expected
    assert expected


async def test_the_probe_table_holds_the_tricky_values_it_claims(probe: Probe) -> None:
    names = {row["name"] for row in probe.rows}
    assert set(NAMES) <= names
    assert None in names
    assert any(row["meta"] is None for row in probe.rows)
