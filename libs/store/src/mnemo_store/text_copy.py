"""Decoding PostgreSQL's text COPY stream (`COPY (...) TO STDOUT`) column by column.

Text columns are what a graph load spends its Python time on. In the text format a row is its
fields joined by tabs and ended by a newline, and a tab, newline or backslash inside a value is
escaped, so the whole stream splits into fields with one decode and one split (C loops, no Python
work per row). Only a column that holds a backslash (an escape or `\\N`, SQL NULL) is then walked
to unescape it.
"""

from __future__ import annotations

import re
from typing import Final

from mnemo_store.binary_copy import CopyFormatError

NULL: Final = "\\N"
# COPY TO writes only these escapes (and `\\` for a backslash); it never writes octal or hex ones.
_ESCAPE: Final = re.compile(r"\\(.)", re.DOTALL)
_SINGLE: Final = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
# Text split per step (whole rows): a few milliseconds of C with the GIL held.
BLOCK_BYTES: Final = 1 << 21


def text_columns(
    data: bytes | bytearray, width: int, *, block_bytes: int = BLOCK_BYTES
) -> list[list[str | None]]:
    """The `width` columns of a text COPY stream, each as a list (None for SQL NULL).

    The stream is split a block of whole rows at a time (`block_bytes`, cut at a row's end): each
    C call holds the GIL for milliseconds, not the half second one split of 150 MB takes, so a
    load decoding its documents in a worker thread keeps reading its edges meanwhile, and only
    one block's text is alive at a time.
    """
    columns: list[list[str | None]] = [[] for _ in range(width)]
    if not data:
        return columns
    if not data.endswith(b"\n"):
        raise CopyFormatError("text COPY stream does not end with a newline: it was cut short")
    start = 0
    while start < len(data):
        end = data.find(b"\n", min(start + max(block_bytes, 1), len(data)) - 1) + 1
        _split_rows(data[start:end], width, columns)
        start = end
    return columns


def _split_rows(block: bytes | bytearray, width: int, columns: list[list[str | None]]) -> None:
    """Append the fields of `block` (whole rows) to `columns`."""
    text = block.decode("utf-8").replace("\n", "\t")
    escaped = "\\" in text
    fields = text.split("\t")
    del text
    fields.pop()  # the empty field after the block's last row
    if len(fields) % width:
        raise CopyFormatError(
            f"text COPY stream has a block of {len(fields)} fields, not a whole number of"
            f" {width}-field rows"
        )
    for k in range(width):
        values: list[str] = fields[k::width]
        if escaped and any("\\" in value for value in values):
            columns[k].extend([None if value == NULL else _unescape(value) for value in values])
        else:
            columns[k].extend(values)


def _unescape(value: str) -> str:
    if "\\" not in value:
        return value
    return _ESCAPE.sub(_replacement, value)


def _replacement(match: re.Match[str]) -> str:
    escaped = match.group(1)
    return _SINGLE.get(escaped, escaped)
