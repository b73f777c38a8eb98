"""Named binds: SQL pieces written with `$(name)` placeholders, numbered `$1, $2, …` in one place
(`number_binds`) when the statement they end up in is assembled.

A piece never counts the binds of another: a filter compiled once with named binds can be placed
in any statement, twice in the same one (a scope's documents and relations conditions share their
values), or after the statement's own binds, and the numbering happens once, over the assembled
text. `$(` appears in no SQL the filter renderer writes other than its placeholders: its text is
made of validated identifiers, operators, casts and fixed literals only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from mnemo_axon.errors import RenderArgumentError

_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
_PLACEHOLDER: Final = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]{0,62})\)")


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
    texts: Sequence[str], values: Mapping[str, object], first_param_index: int = 1
) -> NumberedBinds:
    """Number the named binds of `texts` (read in order) from `first_param_index`, each name once
    in order of first appearance, and list their `values` in that order.

    Every placeholder must have a value and every value a placeholder: a bind left unnumbered or
    a value bound to nothing is the caller's bug (`RenderArgumentError`), never silently passed on.
    """
    if isinstance(first_param_index, bool) or first_param_index < 1:
        raise RenderArgumentError(f"first_param_index must be at least 1, got {first_param_index}")
    numbers: dict[str, int] = {}
    params: list[object] = []

    def number(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in numbers:
            if name not in values:
                raise RenderArgumentError(
                    f"bind $({name}) has no value; values were given for "
                    f"{sorted(values) or 'no bind'}"
                )
            numbers[name] = first_param_index + len(numbers)
            params.append(values[name])
        return f"${numbers[name]}"

    numbered = tuple(_PLACEHOLDER.sub(number, text) for text in texts)
    unused = sorted(set(values) - set(numbers))
    if unused:
        raise RenderArgumentError(f"values given for binds the SQL does not use: {unused}")
    return NumberedBinds(numbered, tuple(params), first_param_index + len(numbers))
