"""Text read from the database, made safe to print on a terminal: the one escaping rule for every
value a command shows (tenant names, audit rows' producers, principals, clients, actions).

Stored text is caller-controlled (a token's `sub` and `client`, a producer's name, a tenant name
older than migration 0005): printed raw, a newline forges a row of the listing, a carriage return
overwrites it, an ANSI escape colours or clears the terminal and U+202E reverses what follows.
"""

from __future__ import annotations

from typing import Final

_NAMED: Final = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def shown_text(text: str, *, ascii_only: bool = False) -> str:
    """`text` with every character that is not printable (controls such as newline, carriage
    return and ESC; format characters such as U+202E; line and paragraph separators; lone
    surrogates) and the backslash itself written as a Python escape (`\\n`, `\\x1b`, `\\u202e`),
    so the result is one line that shows exactly what is stored. Printable Unicode stays as it is,
    unless `ascii_only`, which escapes every non-ASCII character too (to expose homoglyphs)."""
    return "".join(_shown(character, ascii_only) for character in text)


def _shown(character: str, ascii_only: bool) -> str:
    named = _NAMED.get(character)
    if named is not None:
        return named
    if character.isprintable() and (character.isascii() or not ascii_only):
        return character
    code = ord(character)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"
