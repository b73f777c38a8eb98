"""Values bound into store rows and outbox payloads, checked before they reach the driver.

asyncpg and Postgres refuse some values with errors that name neither the row nor the column (`invalid
input for query argument $3`, `unsupported Unicode escape sequence`, `value overflows numeric
format`). Every value is checked here first, with the rules of `mnemo_axon.row_values` (the one
rule set for column values), so a bad value is an `InvalidValueError` naming the store, the row, the
column and the value, and saying what the column takes.
"""

from __future__ import annotations

from collections.abc import Mapping

from mnemo_axon.column_values import ValueConversionError
from mnemo_axon.ir import ColumnDecl
from mnemo_axon.row_values import column_values, json_value_text, preview, value_for_column

from mnemo_store.errors import InvalidValueError


def column_value(store: str, row: int, column: ColumnDecl, value: object) -> object:
    """`value` as the driver binds it for `column`, or InvalidValueError naming where it was."""
    if value is None:
        return None
    try:
        return value_for_column(column.type, value)
    except ValueConversionError as error:
        raise InvalidValueError(
            f"store {store!r}, row {row}, column {column.name!r} ({column.type.value}): {error}; "
            f"got {preview(value)}"
        ) from None


def column_array(store: str, column: ColumnDecl, values: list[object]) -> list[object]:
    """`values` (row 0 first) as the driver binds them for `column`, or InvalidValueError: the
    whole array at once when it can be (`mnemo_axon.row_values.column_values`), else value by
    value, which names the row."""
    checked = column_values(column.type, values)
    if checked is not None:
        return checked
    return [column_value(store, row, column, value) for row, value in enumerate(values)]


def json_text(value: object, where: str) -> str:
    """`value` (an object, or JSON text) as JSON text Postgres jsonb accepts, or InvalidValueError."""
    try:
        return json_value_text(value)
    except ValueConversionError as error:
        raise InvalidValueError(f"{where}: {error}") from None


def check_payload(payload: Mapping[str, object], where: str) -> None:
    """An outbox payload Postgres jsonb accepts (no NUL, no lone surrogate, numbers in range)."""
    json_text(dict(payload), where)
