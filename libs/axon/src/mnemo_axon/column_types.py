"""The closed set of column types an `axonstore` schema may use, and what each means in Postgres."""

from __future__ import annotations

from enum import StrEnum


class AxonType(StrEnum):
    """A column type of the `.axon` surface; the value is the name as written in a schema."""

    UUID = "Uuid"
    TEXT = "Text"
    INTEGER = "Integer"
    BIGINT = "BigInt"
    FLOAT = "Float"
    DOUBLE = "Double"
    NUMERIC = "Numeric"
    BOOLEAN = "Boolean"
    TIMESTAMPTZ = "Timestamptz"
    DATE = "Date"
    JSON = "Json"

    @property
    def postgres(self) -> str:
        """The Postgres type a column of this type is created with and a bind parameter is cast to."""
        return _POSTGRES_TYPES[self]

    @property
    def is_text_like(self) -> bool:
        """True for types whose values are free text (titles, edge types, LIKE patterns)."""
        return self is AxonType.TEXT

    @property
    def is_numeric(self) -> bool:
        """True for types that hold numbers (edge weights)."""
        return self in _NUMERIC_TYPES

    @property
    def is_temporal(self) -> bool:
        """True for types a `now()` time value can be compared with."""
        return self in (AxonType.TIMESTAMPTZ, AxonType.DATE)

    @classmethod
    def from_name(cls, name: str) -> AxonType | None:
        """The type written `name` (case-sensitive, as in a schema), or None when there is none."""
        return _BY_NAME.get(name)

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """Every type name, in declaration order (for error messages)."""
        return tuple(member.value for member in cls)


# Float is a double precision column, like Double: the seed declares edge weights as Float and
# a single-precision weight would not round-trip the values the navigator writes back.
_POSTGRES_TYPES: dict[AxonType, str] = {
    AxonType.UUID: "uuid",
    AxonType.TEXT: "text",
    AxonType.INTEGER: "integer",
    AxonType.BIGINT: "bigint",
    AxonType.FLOAT: "double precision",
    AxonType.DOUBLE: "double precision",
    AxonType.NUMERIC: "numeric",
    AxonType.BOOLEAN: "boolean",
    AxonType.TIMESTAMPTZ: "timestamptz",
    AxonType.DATE: "date",
    AxonType.JSON: "jsonb",
}

_NUMERIC_TYPES = frozenset(
    {AxonType.INTEGER, AxonType.BIGINT, AxonType.FLOAT, AxonType.DOUBLE, AxonType.NUMERIC}
)

_BY_NAME: dict[str, AxonType] = {member.value: member for member in AxonType}
