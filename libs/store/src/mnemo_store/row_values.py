"""Values bound into store rows and outbox payloads, checked before they reach the driver.

asyncpg and Postgres refuse some values with errors that name neither the row nor the column (`invalid
input for query argument $3`, `unsupported Unicode escape sequence`, `value overflows numeric
format`). Every value is checked here first, with the rules `mnemo_axon.column_values` states for
each Axon type, so a bad value is an `InvalidValueError` naming the store, the row, the column and
the value, and saying what the column takes.

Text given for a non-text column is converted by those rules (an id `"42"` for a BigInt column is
42); a value of the column's own Python type is checked for what Postgres can hold.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Callable, Mapping
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from mnemo_axon.column_types import AxonType
from mnemo_axon.column_values import ValueConversionError, value_from_text
from mnemo_axon.ir import ColumnDecl

from mnemo_store.errors import InvalidValueError

_MAX_NUMERIC_BITS = 3300  # about 1000 decimal digits, what the where: renderer accepts too
_INTEGER_RANGES = {
    AxonType.INTEGER: (-(2**31), 2**31 - 1),
    AxonType.BIGINT: (-(2**63), 2**63 - 1),
}


def column_value(store: str, row: int, column: ColumnDecl, value: object) -> object:
    """`value` as the driver binds it for `column`, or InvalidValueError naming where it was."""
    if value is None:
        return None
    try:
        return _converted(column.type, value)
    except ValueConversionError as error:
        raise InvalidValueError(
            f"store {store!r}, row {row}, column {column.name!r} ({column.type.value}): {error}; "
            f"got {preview(value)}"
        ) from None


def column_array(store: str, column: ColumnDecl, values: list[object]) -> list[object]:
    """`values` (row 0 first) as the driver binds them for `column`, or InvalidValueError.

    A column whose values are all of the column's own Python type is checked in a few passes over
    the whole array (a 100k-row insert spends most of its time in Postgres, not here); anything
    else, or a column the fast check refuses, is checked value by value, which names the row.
    """
    fast = _FAST_CHECKS.get(column.type)
    if fast is not None and fast(values):
        return values
    if column.type is AxonType.JSON and None not in values:
        texts = _json_texts(values)
        if texts is not None:
            return texts
    return [column_value(store, row, column, value) for row, value in enumerate(values)]


def _types(values: list[object]) -> set[type]:
    return set(map(type, values)) - {type(None)}


def _present(values: list[object]) -> list[Any]:
    return [value for value in values if value is not None]


def _storable_texts(values: list[object]) -> bool:
    if _types(values) - {str}:
        return False
    joined = "".join(_present(values))
    if "\x00" in joined:
        return False
    try:
        joined.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _integers(axon_type: AxonType) -> Callable[[list[object]], bool]:
    low, high = _INTEGER_RANGES[axon_type]

    def check(values: list[object]) -> bool:
        if _types(values) - {int}:
            return False
        present = _present(values)
        return not present or (low <= min(present) and max(present) <= high)

    return check


def _finite_floats(values: list[object]) -> bool:
    if _types(values) - {float, int}:
        return False
    try:
        return all(map(math.isfinite, _present(values)))
    except OverflowError:  # an int too large for a float
        return False


def _of_type(kind: type) -> Callable[[list[object]], bool]:
    def check(values: list[object]) -> bool:
        return not _types(values) - {kind}

    return check


def _aware_datetimes(values: list[object]) -> bool:
    if _types(values) - {datetime}:
        return False
    return None not in map(datetime.utcoffset, _present(values))


def _json_texts(values: list[object]) -> list[object] | None:
    """Every value as JSON text, the encoded ones checked in one pass as one array; None when any
    is refused (the caller then checks value by value)."""
    texts: list[object] = []
    encoded: list[str] = []
    try:
        for value in values:
            if isinstance(value, str):
                texts.append(value_from_text(value, AxonType.JSON))
            else:
                text = _RAW_ENCODER.encode(value)
                encoded.append(text)
                texts.append(text)
        joined = ",".join(encoded)
        # Encoded here, every number is in jsonb's range (finite floats, ints int() can print); a
        # NUL is written as an escape and a lone surrogate raw, so text with no escape that is
        # valid UTF-8 needs no parse.
        if "\\u" in joined:
            value_from_text(f"[{joined}]", AxonType.JSON)
        else:
            joined.encode("utf-8")
    except (TypeError, ValueError, RecursionError):  # ValueConversionError, UnicodeEncodeError too
        return None
    return texts


def json_text(value: object, where: str) -> str:
    """`value` (an object, or JSON text) as JSON text Postgres jsonb accepts, or InvalidValueError."""
    try:
        return _json(value)
    except ValueConversionError as error:
        raise InvalidValueError(f"{where}: {error}") from None


def preview(value: object, limit: int = 60) -> str:
    """A value for a message: its repr, control characters escaped, cut to `limit` characters."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 200:
        return f"an integer of about {int(value.bit_length() * 0.30103) + 1} digits"
    text = ascii(value) if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _converted(axon_type: AxonType, value: object) -> object:
    if axon_type is AxonType.JSON:
        return _json(value)
    if isinstance(value, str):
        return value_from_text(value, axon_type)
    if axon_type in _INTEGER_RANGES and isinstance(value, int) and not isinstance(value, bool):
        low, high = _INTEGER_RANGES[axon_type]
        if not low <= value <= high:
            raise ValueConversionError(f"out of range for {axon_type.value} [{low}, {high}]")
        return value
    if axon_type in (AxonType.FLOAT, AxonType.DOUBLE) and _is_number(value):
        assert isinstance(value, int | float | Decimal)
        try:
            number = float(value)
        except OverflowError:
            number = math.inf
        if not math.isfinite(number):
            raise ValueConversionError(f"a {axon_type.value} must be finite")
        return number
    if axon_type is AxonType.NUMERIC and _is_number(value):
        if isinstance(value, int) and value.bit_length() > _MAX_NUMERIC_BITS:
            raise ValueConversionError("too many digits for a Numeric (at most 1000)")
        decimal = value if isinstance(value, Decimal) else Decimal(repr(value))
        if not decimal.is_finite():
            raise ValueConversionError("a Numeric must be finite")
        return decimal
    if axon_type is AxonType.BOOLEAN and isinstance(value, bool):
        return value
    if axon_type is AxonType.UUID and isinstance(value, uuid.UUID):
        return value
    if axon_type is AxonType.TIMESTAMPTZ and isinstance(value, datetime):
        if value.utcoffset() is None:
            raise ValueConversionError(
                "a Timestamptz needs a UTC offset (a naive datetime has none)"
            )
        return value
    if axon_type is AxonType.DATE and isinstance(value, date) and not isinstance(value, datetime):
        return value
    raise ValueConversionError(
        f"a Python {type(value).__name__} is not a {axon_type.value} value (give "
        f"{_TAKES[axon_type]}, or its text)"
    )


_FAST_CHECKS: dict[AxonType, Callable[[list[object]], bool]] = {
    AxonType.TEXT: _storable_texts,
    AxonType.INTEGER: _integers(AxonType.INTEGER),
    AxonType.BIGINT: _integers(AxonType.BIGINT),
    AxonType.FLOAT: _finite_floats,
    AxonType.DOUBLE: _finite_floats,
    AxonType.BOOLEAN: _of_type(bool),
    AxonType.UUID: _of_type(uuid.UUID),
    AxonType.TIMESTAMPTZ: _aware_datetimes,
    AxonType.DATE: _of_type(date),
}

_TAKES = {
    AxonType.TEXT: "a str",
    AxonType.INTEGER: "an int",
    AxonType.BIGINT: "an int",
    AxonType.FLOAT: "a number",
    AxonType.DOUBLE: "a number",
    AxonType.NUMERIC: "a number",
    AxonType.BOOLEAN: "a bool",
    AxonType.UUID: "a uuid.UUID",
    AxonType.TIMESTAMPTZ: "an aware datetime",
    AxonType.DATE: "a date",
    AxonType.JSON: "a JSON-encodable value",
}


def _is_number(value: object) -> bool:
    return isinstance(value, int | float | Decimal) and not isinstance(value, bool)


# Built once: json.dumps with keyword arguments builds an encoder per call.
_ENCODER = json.JSONEncoder(allow_nan=False)
_RAW_ENCODER = json.JSONEncoder(allow_nan=False, ensure_ascii=False)


def _json(value: object) -> str:
    if isinstance(value, str):
        return str(value_from_text(value, AxonType.JSON))
    try:
        text = _ENCODER.encode(value)
    except (TypeError, ValueError, RecursionError) as error:
        raise ValueConversionError(f"not JSON-encodable ({_first_line(error)})") from None
    return str(value_from_text(text, AxonType.JSON))


def _first_line(error: BaseException) -> str:
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    return text[:120]


def check_payload(payload: Mapping[str, object], where: str) -> None:
    """An outbox payload Postgres jsonb accepts (no NUL, no lone surrogate, numbers in range)."""
    json_text(dict(payload), where)
