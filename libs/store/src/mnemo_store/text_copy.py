"""Decoding PostgreSQL's text COPY stream (`COPY (...) TO STDOUT`) column by column.

Text columns are what a graph load spends its Python time on. In the text format a row is its
fields joined by tabs and ended by a newline, and a tab, newline or backslash inside a value is
escaped, so the whole stream splits into fields with one decode and one split (C loops, no Python
work per row). Only a column that holds a backslash (an escape or `\\N`, SQL NULL) is then walked
to unescape it.
"""

from __future__ import annotations

import re
from typing import Final, cast

from mnemo_store.binary_copy import CopyFormatError

NULL: Final = "\\N"
# COPY TO writes only these escapes (and `\\` for a backslash); it never writes octal or hex ones.
_ESCAPE: Final = re.compile(r"\\(.)", re.DOTALL)
_SINGLE: Final = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}


def text_columns(data: bytes | bytearray, width: int) -> list[list[str | None]]:
    """The `width` columns of a text COPY stream, each as a list (None for SQL NULL)."""
    if not data:
        return [[] for _ in range(width)]
    if not data.endswith(b"\n"):
        raise CopyFormatError("text COPY stream does not end with a newline: it was cut short")
    # One string at a time: the decoded text is dropped once its fields are split out of it.
    text = data.decode("utf-8").replace("\n", "\t")
    escaped = "\\" in text
    fields = text.split("\t")
    del text
    fields.pop()  # the empty field after the last row's end
    if len(fields) % width:
        raise CopyFormatError(
            f"text COPY stream has {len(fields)} fields, not a whole number of {width}-field rows"
        )
    columns: list[list[str | None]] = []
    for k in range(width):
        column: list[str] = fields[k::width]
        if escaped and any("\\" in value for value in column):
            columns.append([None if value == NULL else _unescape(value) for value in column])
        else:
            columns.append(cast("list[str | None]", column))
    return columns


def _unescape(value: str) -> str:
    if "\\" not in value:
        return value
    return _ESCAPE.sub(_replacement, value)


def _replacement(match: re.Match[str]) -> str:
    escaped = match.group(1)
    return _SINGLE.get(escaped, escaped)
