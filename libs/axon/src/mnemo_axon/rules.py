"""What a declaration must be for `mnemo apply` to create it, stated once.

The checker reports each rule at the position of the offending text. The store planner runs the same
functions over the IR it is given (which may come from IR JSON, not from the checker) and refuses
the apply when one fails, so `mnemo check` says ok exactly when `apply` can create what it plans.
Each function returns the problem as a sentence, or None.

Names Postgres and Mnemo generate beside a store's table `axon_stores."<Store>"`, in the same
namespace: `<Store>_pkey` (the primary key's index), `<Store>_axon_row_id_seq` (the hidden row id's
sequence; Postgres shortens the store part when needed, the suffix stays), `<Store>__<what>` (Mnemo's
indexes and constraints), and, for a name over 63 bytes, its first 52 bytes, `_` and 10 hex digits.
A store name that could be one of those is refused, whatever other stores exist.
"""

from __future__ import annotations

import re
from typing import Final

from mnemo_axon.ir import Deployment, StoreDecl

TENANT_COLUMN: Final = "axon_tenant"
ROW_ID_COLUMN: Final = "axon_row_id"
RESERVED_PREFIX: Final = "axon_"
MAX_IDENTIFIER_BYTES: Final = 63
# Postgres holds at most 1600 columns in a table; Mnemo adds its two hidden ones.
MAX_DECLARED_COLUMNS: Final = 1600 - 2
# `mnemo.corpora.corpus_id` holds 1 to 200 characters.
MAX_CORPUS_ID_CHARACTERS: Final = 200
NAME_PATTERN: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_GENERATED_SUFFIXES: Final = ("_pkey", "_seq")
_SHORTENED_NAME: Final = re.compile(r".{52}_[0-9a-f]{10}")


def identifier_problem(what: str, name: str) -> str | None:
    """A store or column name Postgres cannot hold as written."""
    if NAME_PATTERN.fullmatch(name) is None:
        return (
            f"{what} '{name}' is not a name: use ASCII letters, digits and '_', not starting with "
            "a digit"
        )
    size = len(name.encode("utf-8"))
    if size > MAX_IDENTIFIER_BYTES:
        return (
            f"{what} '{name}' is {size} bytes long; a Postgres identifier holds at most "
            f"{MAX_IDENTIFIER_BYTES} (shorten it)"
        )
    return None


def store_name_problem(store: str) -> str | None:
    """A store name that is not an identifier, or could be a name generated for another store."""
    problem = identifier_problem("Store name", store)
    if problem is not None:
        return problem
    generated = None
    if "__" in store:
        generated = "'<store>__<what>' is how Mnemo names a store's indexes and constraints"
    elif store.lower().endswith(_GENERATED_SUFFIXES):
        generated = (
            "Postgres names a store's primary key '<store>_pkey' and its row id sequence "
            "'<store>_axon_row_id_seq'"
        )
    elif _SHORTENED_NAME.fullmatch(store):
        generated = "Mnemo shortens a long index name to 52 bytes, '_' and 10 hex digits"
    if generated is None:
        return None
    return (
        f"Store name '{store}' could collide with a name generated for another store ({generated}); "
        "choose a name without '__' that does not end in _pkey or _seq"
    )


def column_name_problem(store: str, column: str) -> str | None:
    """A column name that is reserved for Mnemo's hidden columns or is not an identifier."""
    if column == TENANT_COLUMN:
        return (
            f"Store '{store}': column '{TENANT_COLUMN}' is reserved (Mnemo adds it to every store "
            "for row-level security); choose another name"
        )
    if column.lower().startswith(RESERVED_PREFIX):
        return (
            f"Store '{store}': column '{column}' starts with '{RESERVED_PREFIX}' (in any case), "
            f"which Mnemo reserves for its hidden columns ({TENANT_COLUMN}, {ROW_ID_COLUMN}); "
            "choose another name"
        )
    return identifier_problem(f"Store '{store}': column", column)


def column_count_problem(store: str, count: int) -> str | None:
    """More columns than a Postgres table holds beside Mnemo's hidden ones."""
    if count <= MAX_DECLARED_COLUMNS:
        return None
    return (
        f"Store '{store}' declares {count} columns; a Postgres table holds at most "
        f"{MAX_DECLARED_COLUMNS} besides Mnemo's two hidden ones (split the store)"
    )


def corpus_name_problem(corpus: str) -> str | None:
    """A corpus name longer than the registry's corpus id holds."""
    if len(corpus) <= MAX_CORPUS_ID_CHARACTERS:
        return None
    return (
        f"Corpus name '{corpus[:40]}…' is {len(corpus)} characters long; a corpus id holds at "
        f"most {MAX_CORPUS_ID_CHARACTERS} (shorten it)"
    )


def store_problems(store: StoreDecl) -> list[str]:
    """Every rule above over one store of the IR."""
    found = [store_name_problem(store.name), column_count_problem(store.name, len(store.columns))]
    found += [column_name_problem(store.name, column.name) for column in store.columns]
    return [problem for problem in found if problem is not None]


def deployment_problems(deployment: Deployment) -> list[str]:
    """Every rule above over a whole IR (what the planner refuses before any SQL)."""
    found = [problem for store in deployment.stores for problem in store_problems(store)]
    found += [
        problem
        for corpus in deployment.corpora
        if (problem := corpus_name_problem(corpus.name)) is not None
    ]
    return found
