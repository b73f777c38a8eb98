"""Tokens (spec §3): split on every non-alphanumeric character, keep pieces of >= 2 UTF-8 bytes."""

from __future__ import annotations

import re
from typing import Final

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
