"""The one rule set for a value written to a store column, and for a row's columns.

A value is either text (converted by `mnemo_axon.column_values`, the rules the `where:` renderer
and the checker use: an id `"42"` for a BigInt column is 42) or a value of the column's own Python
type, checked for what Postgres can hold (an int within the column's bits, a finite float, an
aware datetime, …). A Json value is an object to encode, or JSON text. The result is what asyncpg
binds; a refused value is a `ValueConversionError` saying what the column takes.

A row written through a service (ingest's persist command, the navigator's HTTP write) is checked
by `check_store_row`: `check_row` (every column declared, the required ones given), then, for each
corpus reading the store as its edges, the graph rules G3 (the type is in the relation catalog)
and G4 (`0 < weight <= 1`); each service frames the one `InvalidRowError` it raises. The store checks each column of an insert with `column_values`, which looks at a column of values
of the column's own type in a few passes over the whole array and gives up (None) otherwise, so the
caller checks value by value and names the row.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Callable, Collection, Iterable, Mapping
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from mnemo_axon.column_types import AxonType
from mnemo_axon.column_values import INTEGER_RANGES, ValueConversionError, value_from_text
from mnemo_axon.errors import AxonError
from mnemo_axon.ir import RELATION_CATALOG, ColumnDecl, StoreDecl

_MAX_NUMERIC_BITS = 3300  # about 1000 decimal digits, what the where: renderer accepts too


class InvalidRowError(AxonError, ValueError):
    """A row its store cannot take: a column the store does not declare, a required column left
    out, or a value its column does not take; the message names the store and the column."""


def check_row(store: StoreDecl, values: Mapping[str, object]) -> dict[str, object]:
    """`values` as the driver binds them for `store`'s columns (in the store's column order; a Json
    value checked but left as given), or InvalidRowError saying what was wrong."""
    if not values.keys() <= {column.name for column in store.columns}:
        row_columns(store, values)  # raises, naming the undeclared columns
    row: dict[str, object] = {}
    for column in store.columns:
        if column.name not in values:
            if (column.not_null or column.primary_key) and column.default is None:
                raise InvalidRowError(f"store {store.name!r}: column {column.name!r} is required")
            continue
        value = values[column.name]
        if value is None:
            if column.not_null or column.primary_key:
                raise InvalidRowError(f"{_where(store, column)}: null is not allowed")
            row[column.name] = None
            continue
        try:
            checked = value_for_column(column.type, value)
        except ValueConversionError as error:
            raise InvalidRowError(
                f"{_where(store, column)}: {error}; got {preview(value)}"
            ) from None
        # A Json value stays as given (an object, or JSON text): the store encodes it once.
        row[column.name] = value if column.type is AxonType.JSON else checked
    return row


def check_store_row(
    store: StoreDecl, values: Mapping[str, object], edges: Iterable[tuple[str, str]] = ()
) -> dict[str, object]:
    """`check_row`, then G3 and G4 on the checked row for each (type column, weight column) of
    `edges` (one per corpus reading `store` as its edges); InvalidRowError saying what was wrong."""
    row = check_row(store, values)
    for etype_column, weight_column in edges:
        etype = row.get(etype_column)
        if etype not in RELATION_CATALOG:
            raise InvalidRowError(
                f"edge type {preview(etype)} is not in the relation catalog (G3); "
                f"use one of {', '.join(RELATION_CATALOG)}"
            )
        weight = row.get(weight_column)
        if not isinstance(weight, int | float | Decimal) or not 0 < float(weight) <= 1:
            raise InvalidRowError(f"edge weight {preview(weight)} is outside (0, 1] (G4)")
    return row


def _where(store: StoreDecl, column: ColumnDecl) -> str:
    return f"store {store.name!r}, column {column.name!r} ({column.type.value})"


def row_columns(store: StoreDecl, names: Collection[str]) -> list[ColumnDecl]:
    """The declared columns `names` stand for, in their order, or InvalidRowError naming the ones
    `store` does not declare."""
    declared = {column.name: column for column in store.columns}
    unknown = sorted(set(names) - declared.keys())
    if unknown:
        raise InvalidRowError(
            f"store {store.name!r} has no column {', '.join(map(repr, unknown))}; its columns are "
            f"{', '.join(declared)}"
        )
    return [declared[name] for name in names]


def value_for_column(axon_type: AxonType, value: object) -> object:
    """`value` (not None) as the driver binds it for a column of `axon_type`."""
    if axon_type is AxonType.JSON:
        return json_value_text(value)
    if isinstance(value, str):
        return value_from_text(value, axon_type)
    if axon_type in INTEGER_RANGES and isinstance(value, int) and not isinstance(value, bool):
        low, high = INTEGER_RANGES[axon_type]
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


def column_values(axon_type: AxonType, values: list[object]) -> list[object] | None:
    """`values` (None for null) as the driver binds them, checked in a few passes over the whole
    array (a 100k-row insert spends most of its time in Postgres, not here); None when they are
    not all of the column's own Python type or one is refused: check them one by one then."""
    fast = _FAST_CHECKS.get(axon_type)
    if fast is not None and fast(values):
        return values
    if axon_type is AxonType.JSON and None not in values:
        return _json_texts(values)
    return None


def json_value_text(value: object) -> str:
    """`value` (an object, or JSON text) as JSON text Postgres jsonb accepts."""
    if isinstance(value, str):
        return str(value_from_text(value, AxonType.JSON))
    try:
        text = _ENCODER.encode(value)
    except (TypeError, ValueError, RecursionError) as error:
        raise ValueConversionError(f"not JSON-encodable ({_first_line(error)})") from None
    return str(value_from_text(text, AxonType.JSON))


def preview(value: object, limit: int = 60) -> str:
    """A value for a message: its repr, control characters escaped, cut to `limit` characters."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 200:
        return f"an integer of about {int(value.bit_length() * 0.30103) + 1} digits"
    text = ascii(value) if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


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
    low, high = INTEGER_RANGES[axon_type]

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


def _first_line(error: BaseException) -> str:
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    return text[:120]
