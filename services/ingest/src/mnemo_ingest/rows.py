"""Pure checks of a persist command's row against its store's declared columns and, for edge rows,
the graph rules: G3 (the type is in the relation catalog), G4 (`0 < weight <= 1`).

`coerce_row` returns the values as the database driver binds them (uuid, datetime, Decimal, …), or
raises `InvalidRow` saying what was wrong and what would be right.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from mnemo_axon.column_types import AxonType
from mnemo_axon.ir import ColumnDecl, StoreDecl
from mnemo_mdn.relations import RELATION_TYPES

from mnemo_ingest.errors import InvalidRow

_INT_RANGE = {AxonType.INTEGER: 2**31, AxonType.BIGINT: 2**63}


def coerce_row(store: StoreDecl, values: Mapping[str, Any]) -> dict[str, Any]:
    """`values` checked and converted for `store`'s columns (in the store's column order)."""
    unknown = sorted(set(values) - {c.name for c in store.columns})
    if unknown:
        raise InvalidRow(
            f"store {store.name!r} has no column {', '.join(map(repr, unknown))}; its columns are "
            f"{', '.join(c.name for c in store.columns)}"
        )
    row: dict[str, Any] = {}
    for column in store.columns:
        if column.name not in values:
            if (column.not_null or column.primary_key) and column.default is None:
                raise InvalidRow(f"store {store.name!r}: column {column.name!r} is required")
            continue
        row[column.name] = coerce_value(store.name, column, values[column.name])
    return row


def coerce_value(store: str, column: ColumnDecl, value: Any) -> Any:
    where = f"store {store!r}, column {column.name!r} ({column.type.value})"
    if value is None:
        if column.not_null or column.primary_key:
            raise InvalidRow(f"{where}: null is not allowed")
        return None
    try:
        return _COERCE[column.type](value)
    except InvalidRow as error:
        raise InvalidRow(f"{where}: {error}") from None
    except (ValueError, TypeError, InvalidOperation, OverflowError):
        raise InvalidRow(f"{where}: {_shown(value)} is not a {column.type.value}") from None


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError
    if "\x00" in value:
        raise InvalidRow("text contains a NUL character (U+0000), which Postgres text cannot hold")
    return value


def _uuid(value: Any) -> uuid.UUID:
    if not isinstance(value, str):
        raise TypeError
    return uuid.UUID(value)


def _integer(kind: AxonType) -> Any:
    def convert(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError
        if not -_INT_RANGE[kind] <= value < _INT_RANGE[kind]:
            raise InvalidRow(f"{value} is out of range")
        return value

    return convert


def _float(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError
    number = float(value)
    if not math.isfinite(number):
        raise ValueError
    return number


def _numeric(value: Any) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise TypeError
    number = Decimal(str(value))
    if not number.is_finite():
        raise ValueError
    return number


def _boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError
    return value


def _timestamp(value: Any) -> datetime:
    if not isinstance(value, str):
        raise TypeError
    moment = datetime.fromisoformat(value)
    if moment.tzinfo is None:
        raise InvalidRow(f"{_shown(value)} has no time zone (write e.g. 2026-01-02T03:04:05Z)")
    return moment


def _date(value: Any) -> date:
    if not isinstance(value, str):
        raise TypeError
    return date.fromisoformat(value)


def _json(value: Any) -> Any:
    if _has_nul(value):
        raise InvalidRow("JSON contains a NUL character (U+0000), which jsonb cannot hold")
    return value


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_nul(v) for v in value)
    return False


_COERCE: dict[AxonType, Any] = {
    AxonType.UUID: _uuid,
    AxonType.TEXT: _text,
    AxonType.INTEGER: _integer(AxonType.INTEGER),
    AxonType.BIGINT: _integer(AxonType.BIGINT),
    AxonType.FLOAT: _float,
    AxonType.DOUBLE: _float,
    AxonType.NUMERIC: _numeric,
    AxonType.BOOLEAN: _boolean,
    AxonType.TIMESTAMPTZ: _timestamp,
    AxonType.DATE: _date,
    AxonType.JSON: _json,
}


def check_edge(row: Mapping[str, Any], etype_column: str, weight_column: str) -> None:
    """G3 and G4 for an edge row already coerced to its columns."""
    etype = row.get(etype_column)
    if etype not in RELATION_TYPES:
        raise InvalidRow(
            f"edge type {_shown(etype)} is not in the relation catalog (G3); "
            f"use one of {', '.join(RELATION_TYPES)}"
        )
    weight = row.get(weight_column)
    if not isinstance(weight, int | float | Decimal) or not 0 < float(weight) <= 1:
        raise InvalidRow(f"edge weight {_shown(weight)} is outside (0, 1] (G4)")


def key_text(value: Any) -> str:
    """A document id as the text Postgres prints for it (uuid, integer or text ids alike)."""
    return str(value)
