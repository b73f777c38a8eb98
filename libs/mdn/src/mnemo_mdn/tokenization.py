"""Tokens (spec §3): split on every non-alphanumeric character, keep pieces of >= 2 UTF-8 bytes.

`token_list` tokenises one text. `many_token_lists` tokenises a whole corpus at once, for the term
index: a Python loop per document cost seconds at a million documents (bench/README.md).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

# Python's `\w` is exactly `str.isalnum()` plus `_`, so this splits on every character that is not
# alphanumeric, `_` and `-` included.
_SEPARATORS: Final = re.compile(r"[\W_]+")


def token_list(text: str) -> list[str]:
    """Tokens of `text` in order, repeats kept (term frequencies count them)."""
    # The length rule applies to the piece as written, before lowercasing (spec §3 order). A piece
    # is shorter than 2 UTF-8 bytes only when it is empty or one ASCII character.
    return [
        piece.lower()
        for piece in _SEPARATORS.split(text)
        if len(piece) >= 2 or (piece and ord(piece) >= 0x80)
    ]


def tokens(text: str) -> frozenset[str]:
    """`tokens(s)` of the spec: the set of tokens. `sess_b` → {sess}; `liability_cap` → {liability, cap}."""
    return frozenset(token_list(text))


# ------------------------------------------------------------------------------ many texts at once

#: Texts joined and split per round: bounds the memory of the pieces (about 50 bytes each).
_TEXTS_PER_ROUND: Final = 65_536
_SPACE: Final = 0x20
# Each ASCII byte that is not a letter or digit (NUL, which joins the texts, included) becomes a
# space; letters, digits and every byte of a multi-byte UTF-8 character stay.
_ASCII_SEPARATORS_TO_SPACE: Final = bytes(
    byte if byte >= 0x80 or chr(byte).isalnum() else _SPACE for byte in range(256)
)
_JOIN: Final = "\x00"


@dataclass(frozen=True, slots=True, eq=False)
class TokenOccurrences:
    """The tokens of many texts: token k is `terms[term[k]]` and occurs in `texts[text[k]]`.

    Occurrences are in text order, then in order within the text: exactly `token_list` of each text.
    """

    terms: list[str]  # distinct tokens; a term's id is its position
    text: npt.NDArray[np.int32]
    term: npt.NDArray[np.int32]


_DROPPED: Final = -1  # a piece that is no token (one ASCII character)


class _PieceTerms(dict[bytes, int]):
    """Piece → its term id, worked out the first time the piece is looked up (C speed once known).

    A piece that holds several tokens (it has a non-ASCII separator) gets a code below -1 and its
    terms in `several`.
    """

    def __init__(self) -> None:
        super().__init__()
        self.terms: dict[str, int] = {}
        self.several: list[list[int]] = []

    def __missing__(self, piece: bytes) -> int:
        if piece.isascii():
            found = [piece.decode("ascii")] if len(piece) >= 2 else []
        else:
            found = token_list(piece.decode("utf-8", "surrogatepass"))
        ids = [self.terms.setdefault(term, len(self.terms)) for term in found]
        if len(ids) == 1:
            code = ids[0]
        elif not ids:
            code = _DROPPED
        else:
            code = _DROPPED - 1 - len(self.several)
            self.several.append(ids)
        self[piece] = code
        return code


def many_token_lists(texts: Sequence[str]) -> TokenOccurrences:
    """`token_list` of every text, computed in bulk.

    Per round of texts: join them with NUL, encode once as UTF-8, lowercase the ASCII letters and
    turn every ASCII separator into a space with one byte table, and split on spaces (all in C).
    Numpy finds where each piece starts, hence its text (NUL positions are the text boundaries).
    Each distinct piece is read once: an ASCII piece is its own token when it has >= 2 bytes; a
    piece with other characters goes through `token_list` (it may still hold separators such as `—`
    or a no-break space, and needs full Unicode lowercasing). Lowercasing the ASCII letters first
    changes neither the length rule (lengths are kept) nor the final lowercase form.
    """
    pieces_to_terms = _PieceTerms()
    term_rounds: list[npt.NDArray[np.int32]] = []
    text_rounds: list[npt.NDArray[np.int32]] = []
    for first in range(0, len(texts), _TEXTS_PER_ROUND):
        chunk = texts[first : first + _TEXTS_PER_ROUND]
        joined = _JOIN.join(chunk)
        if joined.count(_JOIN) != len(chunk) - 1:  # a text holds NUL, itself a separator
            joined = _JOIN.join(text.replace(_JOIN, " ") for text in chunk)
        data = joined.encode("utf-8", "surrogatepass")
        boundaries = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 0).astype(np.int32)
        spaced = data.lower().translate(_ASCII_SEPARATORS_TO_SPACE)
        pieces = spaced.split()
        if not pieces:
            continue
        inside = np.frombuffer(spaced, dtype=np.uint8) != _SPACE
        starts = np.flatnonzero(inside[1:] & ~inside[:-1]).astype(np.int32) + 1
        if inside[0]:
            starts = np.concatenate((np.zeros(1, dtype=np.int32), starts))
        text = np.searchsorted(boundaries, starts).astype(np.int32) + first
        term = np.fromiter(map(pieces_to_terms.__getitem__, pieces), np.int32, len(pieces))
        if int(term.min()) < 0:
            text, term = _resolve(text, term, pieces_to_terms.several)
        term_rounds.append(term)
        text_rounds.append(text)
    terms = list(pieces_to_terms.terms)
    if not term_rounds:
        empty = np.zeros(0, dtype=np.int32)
        return TokenOccurrences(terms, empty, empty)
    return TokenOccurrences(terms, np.concatenate(text_rounds), np.concatenate(term_rounds))


def _resolve(
    text: npt.NDArray[np.int32], term: npt.NDArray[np.int32], several: list[list[int]]
) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int32]]:
    """Drop the pieces that are no token; repeat a piece of several tokens once per token."""
    kept = np.flatnonzero(term != _DROPPED)
    text, term = text.take(kept), term.take(kept)
    compound = term < _DROPPED
    if not compound.any():
        return text, term
    sizes = np.ones(len(term), dtype=np.int64)
    which = _DROPPED - 1 - term[compound]
    lengths = np.array([len(ids) for ids in several], dtype=np.int64)
    sizes[compound] = lengths[which]
    expanded = np.repeat(term, sizes)
    # Where each compound occurrence's tokens go, and the tokens themselves.
    starts = np.cumsum(sizes) - sizes
    flat = np.array([t for ids in several for t in ids], dtype=np.int32)
    flat_starts = np.cumsum(lengths) - lengths
    for position, code in zip(starts[compound].tolist(), which.tolist(), strict=True):
        size = int(lengths[code])
        expanded[position : position + size] = flat[flat_starts[code] : flat_starts[code] + size]
    return np.repeat(text, sizes), expanded
