"""Where declared stores live in Postgres and how their names are written in SQL.

Every `axonstore` becomes one table in the schema `axon_stores`, named exactly as declared
(`axon_stores."LtmEdges"`), so declarations never collide with Mnemo's own tables in `mnemo`.
Identifiers only ever come from compiled declarations and are always double-quoted.
"""

from __future__ import annotations

import hashlib
from typing import Final

STORE_SCHEMA: Final = "axon_stores"
TENANT_COLUMN: Final = "axon_tenant"
# Added to a store that declares no primary key, so every row still has a key leading with the tenant.
ROW_ID_COLUMN: Final = "axon_row_id"
# Postgres truncates longer identifiers silently, which could make two index names collide.
_MAX_IDENTIFIER_BYTES: Final = 63


def quote(identifier: str) -> str:
    """`identifier` as a double-quoted SQL identifier."""
    return '"' + identifier.replace('"', '""') + '"'


def store_table(store: str) -> str:
    """The schema-qualified, quoted table name of the store called `store`."""
    return f"{quote(STORE_SCHEMA)}.{quote(store)}"


def object_name(store: str, suffix: str) -> str:
    """A name for an index or trigger of `store`, shortened with a digest when it would not fit."""
    name = f"{store}__{suffix}"
    if len(name.encode("utf-8")) <= _MAX_IDENTIFIER_BYTES:
        return name
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:10]
    keep = _MAX_IDENTIFIER_BYTES - len(digest) - 1
    return name.encode("utf-8")[:keep].decode("utf-8", "ignore") + "_" + digest
