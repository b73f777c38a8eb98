"""Pure checks of a persist command's row: its values against its store's declared columns (the
one rule set, `mnemo_axon.row_values`) and, for edge rows, the graph rules: G3 (the type is in the
relation catalog), G4 (`0 < weight <= 1`).

`coerce_row` returns the values as the database driver binds them (uuid, datetime, Decimal, …), or
raises `InvalidRow` saying what was wrong and what would be right.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from mnemo_axon.ir import StoreDecl
from mnemo_axon.row_values import InvalidRowError, check_row, preview
from mnemo_mdn.relations import RELATION_TYPES

from mnemo_ingest.errors import InvalidRow


def coerce_row(store: StoreDecl, values: Mapping[str, Any]) -> dict[str, Any]:
    """`values` checked and converted for `store`'s columns (in the store's column order)."""
    try:
        return check_row(store, values)
    except InvalidRowError as error:
        raise InvalidRow(str(error)) from None


def check_edge(row: Mapping[str, Any], etype_column: str, weight_column: str) -> None:
    """G3 and G4 for an edge row already coerced to its columns."""
    etype = row.get(etype_column)
    if etype not in RELATION_TYPES:
        raise InvalidRow(
            f"edge type {preview(etype)} is not in the relation catalog (G3); "
            f"use one of {', '.join(RELATION_TYPES)}"
        )
    weight = row.get(weight_column)
    if not isinstance(weight, int | float | Decimal) or not 0 < float(weight) <= 1:
        raise InvalidRow(f"edge weight {preview(weight)} is outside (0, 1] (G4)")


def key_text(value: Any) -> str:
    """A document id as the text Postgres prints for it (uuid, integer or text ids alike)."""
    return str(value)
