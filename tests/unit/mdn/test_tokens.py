"""Tokens (MDN.md §3)."""

from __future__ import annotations

import pytest
from mnemo_mdn import tokens


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("sess_b", {"sess"}),
        ("liability_cap", {"liability", "cap"}),
        ("Intro Overview", {"intro", "overview"}),
        ("a-b c-dd", {"dd"}),
        ("x9 Z 42", {"x9", "42"}),
        ("été à", {"été", "à"}),
        ("", set()),
        ("repeat repeat REPEAT", {"repeat"}),
    ],
)
def test_tokens_split_on_non_alphanumerics_and_drop_pieces_under_two_bytes(
    text: str, expected: set[str]
) -> None:
    assert tokens(text) == expected
