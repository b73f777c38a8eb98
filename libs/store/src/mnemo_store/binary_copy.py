"""Decoding PostgreSQL's binary COPY stream (`COPY (...) TO STDOUT (FORMAT binary)`).

Fixed-width rows decode in one numpy call: every row of a query whose columns are all fixed-width
and never NULL has the same byte layout, so the whole body is one structured array
(`fixed_rows`), or, read as it streams in, one structured array per block of whole rows
(`FixedRowStream`), so the stream never has to be held whole.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final

import numpy as np
import numpy.typing as npt

from mnemo_store.errors import StoreError

SIGNATURE: Final = b"PGCOPY\n\xff\r\n\x00"
_TRAILER_BYTES: Final = 2  # int16 -1 after the last row


class CopyFormatError(StoreError):
    """The bytes are not the binary COPY stream the query should have produced."""


def body_offset(data: bytes | bytearray) -> int:
    """Where the first row starts: after the signature, the flags and the header extension."""
    if not data.startswith(SIGNATURE) or len(data) < 19 + _TRAILER_BYTES:
        raise CopyFormatError("not a binary COPY stream: the PGCOPY signature is missing")
    extension = int.from_bytes(data[15:19], "big")
    return 19 + extension


def row_type(columns: Sequence[tuple[str, npt.DTypeLike]]) -> np.dtype[np.void]:
    """The byte layout of one row: its field count, then each field's length and value."""
    fields: list[tuple[str, npt.DTypeLike]] = [("_count", ">i2")]
    for name, kind in columns:
        fields += [(f"_len_{name}", ">i4"), (name, kind)]
    return np.dtype(fields)


def fixed_rows(
    data: bytes | bytearray, columns: Sequence[tuple[str, npt.DTypeLike]]
) -> npt.NDArray[np.void]:
    """The rows of a stream whose columns are all fixed-width and non-NULL, as a structured array.

    `columns` gives each column's name and big-endian numpy type (`">i4"`, `">f8"`, `"S16"`, or a
    structured type of the same width, such as a uuid's two halves).
    The per-row field count and the per-field lengths are checked, so a NULL or a wrong type
    fails loudly instead of shifting every following row.
    """
    dtype = row_type(columns)
    start = body_offset(data)
    body = len(data) - start - _TRAILER_BYTES
    if body % dtype.itemsize != 0 or data[-2:] != b"\xff\xff":
        raise CopyFormatError(
            f"binary COPY body of {body} bytes is not a whole number of {dtype.itemsize}-byte rows: "
            "a column is NULL or not of the declared width"
        )
    rows = np.frombuffer(data, dtype=dtype, offset=start, count=body // dtype.itemsize)
    _check(rows, columns)
    return rows


def _check(rows: npt.NDArray[np.void], columns: Sequence[tuple[str, npt.DTypeLike]]) -> None:
    if rows.size and not bool((rows["_count"] == len(columns)).all()):
        raise CopyFormatError(f"binary COPY rows do not all have {len(columns)} fields")
    for name, kind in columns:
        width = np.dtype(kind).itemsize
        if rows.size and not bool((rows[f"_len_{name}"] == width).all()):
            raise CopyFormatError(f"binary COPY column {name!r} is not always {width} bytes wide")


class FixedRowStream:
    """`fixed_rows` for a stream read chunk by chunk: whole rows go to `consume` in blocks of
    about `block_bytes`, as a structured array valid only during the call, so the stream is never
    held whole (390 MB for the edges of a million documents: the largest part of a load's peak).
    """

    def __init__(
        self,
        columns: Sequence[tuple[str, npt.DTypeLike]],
        consume: Callable[[npt.NDArray[np.void]], None],
        *,
        block_bytes: int = 1 << 22,
    ) -> None:
        self._columns = list(columns)
        self._dtype = row_type(self._columns)
        self._consume = consume
        self._block = max(block_bytes, self._dtype.itemsize)
        self._pending = bytearray()
        self._started = False
        self.rows = 0

    def feed(self, chunk: bytes | bytearray | memoryview) -> None:
        self._pending += chunk
        if len(self._pending) >= self._block:
            self._drain()

    def finish(self) -> None:
        """The stream has ended: decode what is left and check the trailer."""
        self._drain()
        if not self._started or self._pending != b"\xff\xff":
            raise CopyFormatError(
                f"binary COPY stream does not end in whole {self._dtype.itemsize}-byte rows and its"
                " trailer: a column is NULL or not of the declared width, or it was cut short"
            )

    def _drain(self) -> None:
        data = self._pending
        start = 0
        if not self._started:
            if len(data) < 19 or len(data) < 19 + int.from_bytes(data[15:19], "big"):
                return  # the header is not all here yet
            if not data.startswith(SIGNATURE):
                raise CopyFormatError("not a binary COPY stream: the PGCOPY signature is missing")
            start = 19 + int.from_bytes(data[15:19], "big")
            self._started = True
        count = (len(data) - start) // self._dtype.itemsize
        if count:
            rows = np.frombuffer(data, dtype=self._dtype, offset=start, count=count)
            _check(rows, self._columns)
            self._consume(rows)
            self.rows += count
            del rows  # the buffer cannot be replaced while numpy views it
        self._pending = data[start + count * self._dtype.itemsize :]
