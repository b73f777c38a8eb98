"""The database's canonical JSON (`mnemo.jcs`) is byte for byte Python's `rfc8785`."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
import rfc8785
from hypothesis import example, given, settings
from hypothesis import strategies as st
from mnemo_store.audit_chain import MAX_SAFE_INTEGER, AuditValueError, check_chain_value

JsonValue = None | bool | int | float | str | list["JsonValue"] | dict[str, "JsonValue"]
"""A JSON value as Python holds it: what `JSON_VALUES` draws and `rfc8785.dumps` takes."""

# NUL cannot live in Postgres JSON and surrogates are not Unicode text: the chain refuses both.
TEXT = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=12)
FLOATS = st.floats(allow_nan=False, allow_infinity=False).filter(
    lambda f: not (f.is_integer() and abs(f) > MAX_SAFE_INTEGER)
)
LEAVES = (
    st.none() | st.booleans() | st.integers(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER) | FLOATS | TEXT
)
JSON_VALUES = st.recursive(
    LEAVES,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(TEXT, children, max_size=6),
    max_leaves=24,
)


@pytest.fixture(scope="module")
def database(owner_dsn: str) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(owner_dsn, autocommit=True) as connection:
        yield connection


def database_jcs(connection: psycopg.Connection[Any], value: object) -> bytes:
    row = connection.execute("SELECT mnemo.jcs(%s::jsonb)", (json.dumps(value),)).fetchone()
    assert row is not None
    return str(row[0]).encode("utf-8")


@settings(max_examples=500)
@given(value=JSON_VALUES)
@example(value={"\ue000": 1, "\U0001f600": 2, "a": 3, "": 4, "\ud7ff": 5})
@example(
    value=[
        1e-7,
        1e-6,
        0.000001,
        1 / 3,
        5e-324,
        2.2250738585072014e-308,
        1.2345e300 / 7e307,
        -0.0,
        0.1,
        2.5,
    ]
)
@example(value=[MAX_SAFE_INTEGER, -MAX_SAFE_INTEGER, 9007199254740990.0, 123456789.125e-5])
@example(value={"s": '"\\\b\f\n\r\t\x01\x1f\x7f\u2028\u2029/é😀'})
def test_the_database_writes_the_same_canonical_json_as_python(
    database: psycopg.Connection[Any], value: JsonValue
) -> None:
    check_chain_value(value)
    assert database_jcs(database, value) == rfc8785.dumps(value)


@pytest.mark.parametrize(
    "number",
    [2**53, -(2**53), 10**21, 1e16, -1e300],
    ids=["2^53", "-2^53", "1e21", "1e16f", "-1e300"],
)
def test_an_integer_outside_the_exact_range_is_refused_on_both_sides(
    database: psycopg.Connection[Any], number: float
) -> None:
    with pytest.raises(AuditValueError, match=r"2\^53"):
        check_chain_value({"n": number})
    with pytest.raises(psycopg.errors.NumericValueOutOfRange, match=r"2\^53"):
        database_jcs(database, {"n": number})


def test_a_number_no_double_can_hold_is_refused_by_the_database(
    database: psycopg.Connection[Any],
) -> None:
    for text in ("1e-400", "1.5e400"):
        with pytest.raises(psycopg.errors.NumericValueOutOfRange):
            database.execute(f"SELECT mnemo.jcs('{text}'::jsonb)")


def test_python_refuses_what_the_database_cannot_store() -> None:
    for bad in ({"s": "a\x00b"}, {"f": math.inf}, {"f": math.nan}, {1: "x"}, {"s": "\ud800"}):
        with pytest.raises(AuditValueError):
            check_chain_value(bad)
