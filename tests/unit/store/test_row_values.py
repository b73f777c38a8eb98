"""A column's values are checked as one array when they are all of its own Python type, and value
by value otherwise: both ways agree on what goes in, and a refused value names its row."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, date, datetime
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mnemo_axon.column_types import AxonType
from mnemo_axon.ir import ColumnDecl
from mnemo_store.errors import InvalidValueError
from mnemo_store.row_values import column_array, column_value


def column(axon_type: AxonType) -> ColumnDecl:
    return ColumnDecl(name="c", type=axon_type)


def value_by_value(axon_type: AxonType, values: list[object]) -> list[object]:
    return [column_value("s", row, column(axon_type), value) for row, value in enumerate(values)]


GOOD = [
    (AxonType.TEXT, ["a", None, "é ☃ 😀", ""]),
    (AxonType.INTEGER, [0, -(2**31), 2**31 - 1, None]),
    (AxonType.BIGINT, [1, 2**63 - 1, "42"]),
    (AxonType.FLOAT, [0.5, 3, None, "1e-3"]),
    (AxonType.DOUBLE, [1e308, -2.5]),
    (AxonType.NUMERIC, [Decimal("1.25"), 3, "7.5"]),
    (AxonType.BOOLEAN, [True, False, None, "true"]),
    (AxonType.UUID, [uuid.UUID(int=5), None, str(uuid.UUID(int=7))]),
    (AxonType.TIMESTAMPTZ, [datetime(2024, 5, 1, tzinfo=UTC), "2024-05-01T00:00:00Z"]),
    (AxonType.DATE, [date(2024, 5, 1), None, "2024-05-02"]),
]


@pytest.mark.parametrize(("axon_type", "values"), GOOD)
def test_a_column_of_good_values_binds_what_checking_each_value_binds(
    axon_type: AxonType, values: list[object]
) -> None:
    assert column_array("s", column(axon_type), values) == value_by_value(axon_type, values)
    own_type = [value for value in values if not isinstance(value, str)]
    assert column_array("s", column(axon_type), own_type) == value_by_value(axon_type, own_type)


@pytest.mark.parametrize(
    ("axon_type", "values", "message"),
    [
        (AxonType.TEXT, ["fine", "a\x00b"], "row 1, column 'c' (Text): text cannot contain NUL"),
        (AxonType.TEXT, ["fine", "ok", "\ud800"], "row 2, column 'c' (Text): text contains an"),
        (AxonType.BIGINT, [1, 2**63], "row 1, column 'c' (BigInt): out of range"),
        (AxonType.INTEGER, [2**31, 1], "row 0, column 'c' (Integer): out of range"),
        (AxonType.FLOAT, [1.0, float("inf")], "row 1, column 'c' (Float): a Float must be finite"),
        (AxonType.DOUBLE, [2**2000], "row 0, column 'c' (Double): a Double must be finite"),
        (AxonType.BOOLEAN, [True, 1], "row 1, column 'c' (Boolean): a Python int is not"),
        (
            AxonType.TIMESTAMPTZ,
            [datetime(2024, 5, 1, tzinfo=UTC), datetime(2024, 5, 1)],
            "row 1, column 'c' (Timestamptz): a Timestamptz needs a UTC offset",
        ),
        (AxonType.DATE, [datetime(2024, 5, 1, tzinfo=UTC)], "row 0, column 'c' (Date): a Python"),
        (AxonType.JSON, [{"a": 1}, {"a": "\x00"}], "row 1, column 'c' (Json): JSON string value"),
        (AxonType.JSON, [{"a": "\udc00"}], "row 0, column 'c' (Json): JSON string value"),
        (AxonType.JSON, [[1], [float("nan")]], "row 1, column 'c' (Json): not JSON-encodable"),
        (AxonType.JSON, ["[1]", "1, 2"], "row 1, column 'c' (Json): not valid JSON"),
        (AxonType.JSON, ["1e999999"], "row 0, column 'c' (Json): JSON number '1e999999' is"),
    ],
)
def test_a_refused_value_names_its_row_whichever_way_the_column_was_checked(
    axon_type: AxonType, values: list[object], message: str
) -> None:
    with pytest.raises(InvalidValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        column_array("s", column(axon_type), values)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=12,
)


@given(st.lists(json_values, min_size=1, max_size=6))
def test_json_values_go_in_as_one_array_exactly_when_each_goes_in_alone(
    values: list[object],
) -> None:
    try:
        expected = value_by_value(AxonType.JSON, values)
    except InvalidValueError:
        with pytest.raises(InvalidValueError):
            column_array("s", column(AxonType.JSON), values)
        return
    got = column_array("s", column(AxonType.JSON), values)
    assert parsed(got) == parsed(expected)


def parsed(texts: list[object]) -> list[object]:
    return [None if text is None else json.loads(str(text)) for text in texts]
