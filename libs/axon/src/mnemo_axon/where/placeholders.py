"""Named binds: SQL written with `$(name)` placeholders, numbered `$1, $2, …` in one place
(`number_binds`) when the statement they end up in is assembled.

A piece never counts the binds of another: a filter compiled once with named binds can be placed
in any statement, twice in the same one (a scope's documents and relations conditions share their
values), or next to the statement's own named binds, and the numbering happens once, over the
assembled text. The text is scanned as Postgres lexes it: `$(…)` inside a quoted string, a quoted
identifier, a dollar-quoted string or a comment is text, not a bind; `::` casts are operators and
never start one. A positional `$N` outside them is refused: a statement written with named binds
that also counts its own would number two ways.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from mnemo_axon.errors import RenderArgumentError

_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
# One alternative per lexical element that can hold a `$`: the ones before `bind` are skipped.
_LEXEME: Final = re.compile(
    r"""
      (?<![A-Za-z0-9_$])[Ee]'(?:[^'\\]|\\.|'')*(?P<e_end>'|\Z)   # escape string: E'…\'…'
    | '(?:[^']|'')*(?P<s_end>'|\Z)                               # string
    | "(?:[^"]|"")*(?P<q_end>"|\Z)                               # quoted identifier
    | (?<![A-Za-z0-9_$])(?P<tag>\$(?:[A-Za-z_][A-Za-z0-9_]*)?\$)(?:.*?(?P=tag)|(?P<d_open>.*\Z))
    | --[^\n]*                                                   # line comment
    | /\*(?:.*?\*/|(?P<c_open>.*\Z))                             # block comment
    | \$\((?P<bind>[A-Za-z_][A-Za-z0-9_]{0,62})\)                # a named bind
    | \$\((?P<bad>[^)]*)\)?                                      # `$(` not followed by a name
    | (?<![A-Za-z0-9_])\$(?P<positional>[0-9]+)                  # a positional bind
    """,
    re.VERBOSE | re.DOTALL,
)


def named_bind(name: str) -> str:
    """The placeholder of the bind called `name` (a plain identifier)."""
    if _NAME.fullmatch(name) is None:
        raise RenderArgumentError(
            f"bind name {name!r} is not a plain identifier ([A-Za-z_][A-Za-z0-9_]*, at most 63 "
            "bytes)"
        )
    return f"$({name})"


@dataclass(frozen=True, slots=True)
class NumberedBinds:
    """SQL texts with `$N` placeholders, the values to bind in that order, and the next number."""

    texts: tuple[str, ...]
    params: tuple[object, ...]
    next_param_index: int


def number_binds(
    texts: Sequence[str],
    values: Mapping[str, object],
    first_param_index: int = 1,
    *,
    leading: Sequence[str] = (),
) -> NumberedBinds:
    """Number the named binds of `texts` from `first_param_index`: the names of `leading` first,
    in that order (a statement's own values), then every other name once, in order of first
    appearance (read in order), and list their `values` in that order.

    Every placeholder must have a value and every value a placeholder: a bind left unnumbered, a
    value bound to nothing, an unterminated quote or comment, or a positional `$N` is the caller's
    bug (`RenderArgumentError`), never silently passed on.
    """
    if isinstance(first_param_index, bool) or first_param_index < 1:
        raise RenderArgumentError(f"first_param_index must be at least 1, got {first_param_index}")
    numbers: dict[str, int] = {}
    params: list[object] = []

    def assign(name: str) -> int:
        if name not in numbers:
            if name not in values:
                raise RenderArgumentError(
                    f"bind $({name}) has no value; values were given for "
                    f"{sorted(values) or 'no bind'}"
                )
            numbers[name] = first_param_index + len(numbers)
            params.append(values[name])
        return numbers[name]

    for name in leading:
        if name in numbers:
            raise RenderArgumentError(f"bind $({name}) is listed twice in leading")
        assign(name)
    used: set[str] = set()

    def number(match: re.Match[str]) -> str:
        if match["e_end"] == "" or match["s_end"] == "" or match["q_end"] == "":
            raise RenderArgumentError(f"unterminated quoted text in SQL: {match[0][:40]!r}")
        if match["d_open"] is not None or match["c_open"] is not None:
            raise RenderArgumentError(f"unterminated dollar quote or comment: {match[0][:40]!r}")
        if match["bad"] is not None:
            raise RenderArgumentError(f"{match[0]!r} is not a named bind ($(plain_identifier))")
        if match["positional"] is not None:
            raise RenderArgumentError(
                f"positional ${match['positional']} in SQL written with named binds: name it"
            )
        name = match["bind"]
        if name is None:
            return match[0]  # a literal, a quoted identifier or a comment: text
        used.add(name)
        return f"${assign(name)}"

    numbered = tuple(_LEXEME.sub(number, text) for text in texts)
    unused = sorted(set(values) - used)
    if unused:
        raise RenderArgumentError(f"values given for binds the SQL does not use: {unused}")
    return NumberedBinds(numbered, tuple(params), first_param_index + len(numbers))
