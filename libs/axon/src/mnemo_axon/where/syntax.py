"""The syntax tree of a `where:` filter: a flat list of conditions joined by connectors.

Positions (0-based offsets into the filter text) are carried for error messages but take no part in
equality, so a filter equals the re-parse of its formatted text. A bound filter has the same shape:
binding replaces every `StringValue`'s parts by a single `TextPart` holding the interpolated text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Literal

MAX_CONDITIONS = 256
MAX_COLUMN_BYTES = 63


class Operator(StrEnum):
    """A comparison, by its SQL spelling (`==` is read as `=`, `!=` as `<>`)."""

    EQ = "="
    NE = "<>"
    GT = ">"
    GE = ">="
    LT = "<"
    LE = "<="
    LIKE = "LIKE"


class Connector(StrEnum):
    """AND binds tighter than OR, as in SQL."""

    AND = "AND"
    OR = "OR"


class TimeUnit(StrEnum):
    """The closed list of interval units a time value may use."""

    SECOND = "second"
    MINUTE = "minute"
    HOUR = "hour"
    DAY = "day"
    WEEK = "week"
    MONTH = "month"
    YEAR = "year"


@dataclass(frozen=True, slots=True)
class TextPart:
    """Literal text inside a quoted string (escapes already applied)."""

    text: str


@dataclass(frozen=True, slots=True)
class ParameterRef:
    """`${name}` or `${a.b}` inside a quoted string: a path into the request's parameters."""

    path: tuple[str, ...]
    position: int = field(default=0, compare=False)

    @property
    def name(self) -> str:
        return ".".join(self.path)


@dataclass(frozen=True, slots=True)
class StringValue:
    """A quoted string: literal parts and parameter references, in order (never two TextParts
    in a row, never an empty TextPart)."""

    parts: tuple[TextPart | ParameterRef, ...]
    position: int = field(default=0, compare=False)

    @property
    def is_bound(self) -> bool:
        return all(isinstance(part, TextPart) for part in self.parts)

    @property
    def text(self) -> str:
        """The literal text; only meaningful once bound."""
        return "".join(part.text for part in self.parts if isinstance(part, TextPart))


@dataclass(frozen=True, slots=True)
class NumberValue:
    """An unquoted number, kept as written: its type comes from the column."""

    literal: str
    position: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class BooleanValue:
    value: bool
    position: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class NullValue:
    position: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class TimeValue:
    """`now()`, or `now() ± interval '<amount> <unit>'` (offset None means plain now())."""

    offset: Literal["+", "-"] | None = None
    amount: int = 0
    unit: TimeUnit | None = None
    position: int = field(default=0, compare=False)


Value = StringValue | NumberValue | BooleanValue | NullValue | TimeValue


@dataclass(frozen=True, slots=True)
class Condition:
    """`column operator value`."""

    column: str
    operator: Operator
    value: Value
    position: int = field(default=0, compare=False)
    operator_position: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class Filter:
    """Conditions with one connector between each consecutive pair."""

    conditions: tuple[Condition, ...]
    connectors: tuple[Connector, ...]

    def __post_init__(self) -> None:
        if not self.conditions or len(self.connectors) != len(self.conditions) - 1:
            raise ValueError(
                "a filter has at least one condition and one connector between each pair"
            )

    def or_groups(self) -> tuple[tuple[Condition, ...], ...]:
        """The conditions grouped by AND, the groups joined by OR (SQL precedence)."""
        groups: list[list[Condition]] = [[self.conditions[0]]]
        for connector, condition in zip(self.connectors, self.conditions[1:], strict=True):
            if connector is Connector.AND:
                groups[-1].append(condition)
            else:
                groups.append([condition])
        return tuple(tuple(group) for group in groups)


def ends_with_like_escape(pattern: str) -> bool:
    """True when `pattern` ends with an unescaped backslash, the LIKE escape character."""
    trailing = len(pattern) - len(pattern.rstrip("\\"))
    return trailing % 2 == 1
