"""A documents store's title keys, stored: what the edge classifier's title lookup compares.

`mnemo_mdn`'s title key of a title is its tokens (spec §3): lowercase, split on every character that
is not a letter or digit, one-character ASCII pieces dropped, joined with single spaces; its alias
key is the title key of the title without its qualifiers (parenthesised parts). `title_key_sql` and
`alias_key_sql` write both in SQL.

Every documents store of a store corpus holds both as hidden stored generated columns per title
column (`title_key_column`, `alias_key_column`: `axon_title_key_` / `axon_alias_key_` and the
first 10 hex digits of SHA-256 over the column's name), each in a b-tree index after the tenant
(`mnemo apply` for new stores, migration 0012 for the stores registered before it). Postgres
computes them when a row is written, so no writer changes, and the classifier's title lookup is
an index lookup: text equality is leakproof, so row-level security keeps the index usable (a
full-text match `@@` is not, and reads every row of the tenant's scope).

A b-tree entry must fit a third of a page, so the keys of a title longer than `STORED_KEY_BYTES`
bytes lowercased (its keys are never longer) are stored as NULL; the lookup computes those rows'
keys per row (found by the same index, `IS NULL`). A NULL title has NULL keys, as in the lookup.
"""

from __future__ import annotations

import hashlib
from typing import Final

from mnemo_store.identifiers import quote

TITLE_KEY_PREFIX: Final = "axon_title_key_"
ALIAS_KEY_PREFIX: Final = "axon_alias_key_"
STORED_KEY_BYTES: Final = 2000


def title_key_sql(column: str) -> str:
    """SQL for `mnemo_mdn`'s title key of `column` (an SQL expression): lowercase, split on every
    character that is not a letter or digit, drop one-character ASCII pieces, join with single
    spaces."""
    spaced = f"' ' || regexp_replace(lower({column}::text), '[^[:alnum:]]+', ' ', 'g') || ' '"
    # A one-character ASCII piece is a letter or digit between two spaces; the lookahead leaves
    # the second space to the next piece (`a b c` loses all three).
    dropped = f"regexp_replace({spaced}, ' [a-z0-9](?= )', '', 'g')"
    return f"btrim(regexp_replace({dropped}, ' +', ' ', 'g'))"


def alias_key_sql(column: str) -> str:
    """SQL for `mnemo_mdn`'s alias key of `column`: the title key of the title with its qualifiers
    (parenthesised parts, `mnemo_mdn.edge_classification.QUALIFIER`) removed. Equal to the title
    key when there is none (the in-process key is then ''; either way no lookup tells them apart)."""
    return title_key_sql(f"regexp_replace({column}::text, '\\([^()]*\\)', ' ', 'g')")


def _digest(title_column: str) -> str:
    return hashlib.sha256(title_column.encode("utf-8")).hexdigest()[:10]


def title_key_column(title_column: str) -> str:
    """The hidden stored title-key column of a documents store for its title column
    `title_column` (migration 0012 computes the same name in SQL)."""
    return TITLE_KEY_PREFIX + _digest(title_column)


def alias_key_column(title_column: str) -> str:
    """The hidden stored alias-key column, as `title_key_column`."""
    return ALIAS_KEY_PREFIX + _digest(title_column)


def _stored(key: str, title: str) -> str:
    # Bounded by the title's length, not the key's: the regular expressions run once per write.
    return f"CASE WHEN octet_length(lower({title}::text)) <= {STORED_KEY_BYTES} THEN {key} END"


def key_columns_sql(title_column: str) -> tuple[str, str]:
    """The definitions of the two columns: generated from the title, stored."""
    title = quote(title_column)
    return (
        f"{quote(title_key_column(title_column))} text"
        f" GENERATED ALWAYS AS ({_stored(title_key_sql(title), title)}) STORED",
        f"{quote(alias_key_column(title_column))} text"
        f" GENERATED ALWAYS AS ({_stored(alias_key_sql(title), title)}) STORED",
    )
