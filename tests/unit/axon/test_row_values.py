"""One rule set for the values written to store columns: a message row ingest checks and a row the
store binds take and refuse the same values, and a refusal names the store, the column and what it
takes."""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime
from decimal import Decimal

import pytest
from mnemo_axon.column_types import AxonType
from mnemo_axon.ir import ColumnDecl, StoreDecl
from mnemo_axon.row_values import InvalidRowError, check_row, row_columns, value_for_column

DOCS = StoreDecl(
    name="Docs",
    columns=(
        ColumnDecl("id", AxonType.UUID, primary_key=True),
        ColumnDecl("title", AxonType.TEXT, not_null=True),
        ColumnDecl("score", AxonType.INTEGER),
        ColumnDecl("meta", AxonType.JSON),
    ),
)
ID = "9b2f0c4e-5a61-4f2b-8c3d-0e1f2a3b4c5d"

MESSAGE_VALUES = [
    (AxonType.UUID, ID, uuid.UUID(ID)),
    (AxonType.INTEGER, 7, 7),
    (AxonType.BIGINT, "42", 42),
    (AxonType.FLOAT, 3, 3.0),
    (AxonType.NUMERIC, 1.25, Decimal("1.25")),
    (AxonType.NUMERIC, "7.5", Decimal("7.5")),
    (AxonType.BOOLEAN, True, True),
    (AxonType.TIMESTAMPTZ, "2024-05-01T00:00:00Z", datetime(2024, 5, 1, tzinfo=UTC)),
    (AxonType.DATE, "2024-05-02", date(2024, 5, 2)),
    (AxonType.TEXT, "é ☃", "é ☃"),
]


@pytest.mark.parametrize(("axon_type", "given", "bound"), MESSAGE_VALUES)
def test_a_message_value_is_bound_as_the_store_binds_it(
    axon_type: AxonType, given: object, bound: object
) -> None:
    store = StoreDecl(name="S", columns=(ColumnDecl("c", axon_type),))
    assert check_row(store, {"c": given}) == {"c": bound}
    assert value_for_column(axon_type, given) == bound


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"id": ID, "title": "t", "nope": 1}, "store 'Docs' has no column 'nope'; its columns are"),
        ({"title": "t"}, "store 'Docs': column 'id' is required"),
        ({"id": ID, "title": None}, "column 'title' (Text): null is not allowed"),
        ({"id": ID, "title": "t", "score": "many"}, "column 'score' (Integer): not an Integer"),
        ({"id": ID, "title": "t", "score": 2**31}, "column 'score' (Integer): out of range"),
        ({"id": ID, "title": "a\x00b"}, "column 'title' (Text): text cannot contain NUL"),
        ({"id": ID, "title": "\ud800"}, "column 'title' (Text): text contains an unpaired"),
        ({"id": ID, "title": "t", "meta": {"k": "\x00"}}, "column 'meta' (Json): JSON string"),
        ({"id": "x", "title": "t"}, "column 'id' (Uuid): not a Uuid: 'x'"),
    ],
)
def test_a_refused_row_names_its_store_and_column_and_says_what_was_wrong(
    values: dict[str, object], message: str
) -> None:
    with pytest.raises(InvalidRowError) as refused:
        check_row(DOCS, values)
    assert message in str(refused.value)


def test_a_json_value_is_checked_but_left_as_given_and_columns_come_in_store_order() -> None:
    row = check_row(DOCS, {"meta": {"b": [1, None]}, "title": "t", "id": ID})
    assert list(row) == ["id", "title", "meta"]
    assert row["meta"] == {"b": [1, None]}


def test_the_columns_of_a_row_are_named_in_its_order_and_undeclared_ones_all_at_once() -> None:
    assert [c.name for c in row_columns(DOCS, ["title", "id"])] == ["title", "id"]
    with pytest.raises(InvalidRowError, match="no column 'x', 'y'"):
        row_columns(DOCS, ["y", "id", "x"])
