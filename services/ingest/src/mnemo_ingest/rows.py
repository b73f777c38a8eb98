"""Pure checks of a persist command's row: its values against its store's declared columns and,
for an edge row, the graph rules G3 and G4 (`mnemo_axon.row_values.check_store_row`, the one home
of both, which the navigator's HTTP writes use too).

`coerce_row` returns the values as the database driver binds them (uuid, datetime, Decimal, …), or
raises `InvalidRow` (a dead letter's reason) saying what was wrong and what would be right.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from mnemo_axon.ir import StoreDecl
from mnemo_axon.row_values import InvalidRowError, check_store_row

from mnemo_ingest.errors import InvalidRow


def coerce_row(
    store: StoreDecl, values: Mapping[str, Any], edges: Iterable[tuple[str, str]] = ()
) -> dict[str, Any]:
    """`values` checked and converted for `store`'s columns (in the store's column order), and
    G3 and G4 for each (type column, weight column) of `edges`."""
    try:
        return check_store_row(store, values, edges)
    except InvalidRowError as error:
        raise InvalidRow(str(error)) from None


def key_text(value: Any) -> str:
    """A document id as the text Postgres prints for it (uuid, integer or text ids alike)."""
    return str(value)
