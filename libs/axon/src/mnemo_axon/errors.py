"""Every error mnemo_axon raises: declaration diagnostics, IR format errors and `where:` filter errors.

Declarations are checked as a whole and every problem becomes a `Diagnostic` (file, line, column,
message); `InvalidDeclarationsError` carries all of them at once. A `where:` filter stops at its first
problem: each kind of problem is its own `FilterError` subclass carrying the 0-based offset into the
filter text (and the 1-based line and column derived from it) and a stable `code`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar


class AxonError(Exception):
    """Base of every error raised by mnemo_axon."""


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One problem found in a declarations file, at a 1-based line and column."""

    file: str
    line: int
    column: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}: error: {self.message}"


class InvalidDeclarationsError(AxonError):
    """A compile run found problems; `diagnostics` holds every one of them, in source order."""

    def __init__(self, diagnostics: Sequence[Diagnostic]) -> None:
        self.diagnostics: tuple[Diagnostic, ...] = tuple(diagnostics)
        count = len(self.diagnostics)
        first = str(self.diagnostics[0]) if self.diagnostics else "no diagnostics"
        plural = "" if count == 1 else "s"
        super().__init__(f"{count} error{plural} in the declarations; first: {first}")


class IrFormatError(AxonError, ValueError):
    """A JSON document is not a valid Mnemo declarations IR; the message names the offending path."""


class RenderArgumentError(AxonError, ValueError):
    """The calling code gave the filter renderer a bad argument (qualifier, table list, type name).

    Unlike a FilterError this is the caller's bug, not a problem of the filter text or parameters.
    """


class FilterError(AxonError):
    """A `where:` filter could not be compiled; `position` is the 0-based offset of the problem."""

    code: ClassVar[str] = "filter_error"

    def __init__(self, message: str, position: int, source: str = "") -> None:
        self.message = message
        self.position = position
        before = source[:position]
        self.line = before.count("\n") + 1
        self.column = position - (before.rfind("\n") + 1) + 1
        super().__init__(
            f"{message} (at position {position}, line {self.line}, column {self.column})"
        )


class UnexpectedCharacterError(FilterError):
    """A character that no token of the filter grammar starts with (including `${` outside quotes)."""

    code = "unexpected_character"


class UnterminatedStringError(FilterError):
    """A quoted string that is not closed before the end of the filter."""

    code = "unterminated_string"


class InvalidNumberError(FilterError):
    """A number that is not an optional '-', digits and at most one '.' followed by digits."""

    code = "invalid_number"


class ExpectedColumnError(FilterError):
    """A condition that does not start with a column name."""

    code = "expected_column"


class ColumnTooLongError(FilterError):
    """A column name longer than a Postgres identifier (63 bytes)."""

    code = "column_too_long"


class ExpectedOperatorError(FilterError):
    """A column followed by something other than a comparison operator."""

    code = "expected_operator"


class MissingOperatorError(FilterError):
    """The filter ends right after a column name."""

    code = "missing_operator"


class ExpectedValueError(FilterError):
    """An operator followed by something other than a value."""

    code = "expected_value"


class MissingValueError(FilterError):
    """The filter ends right after an operator."""

    code = "missing_value"


class UnquotedValueError(FilterError):
    """A bare word where a value belongs (`name = Alice`): values must be quoted."""

    code = "unquoted_value"


class ExpectedConnectorError(FilterError):
    """A condition followed by something other than AND or OR."""

    code = "expected_connector"


class DanglingConnectorError(FilterError):
    """An AND or OR without a condition on one of its sides."""

    code = "dangling_connector"


class NullComparisonError(FilterError):
    """NULL compared with an operator other than equality or inequality."""

    code = "null_comparison"


class LikeRequiresTextError(FilterError):
    """LIKE with a value that is not a quoted string, or on a column that is not Text."""

    code = "like_requires_text"


class LikeWithTimeError(FilterError):
    """LIKE with a `now()` time value."""

    code = "like_with_time"


class BadTimeValueError(FilterError):
    """A `now()` value with a malformed interval or a unit outside the closed list."""

    code = "bad_time_value"


class TooManyConditionsError(FilterError):
    """More conditions than a filter may have (256)."""

    code = "too_many_conditions"


class UnboundParameterError(FilterError):
    """A `${name}` reference that the request's parameters do not provide (or a malformed one)."""

    code = "unbound_parameter"


class UnknownColumnError(FilterError):
    """A column that some table the filter is applied to does not have."""

    code = "unknown_column"


class TypeMismatchError(FilterError):
    """A value that cannot be converted to its column's type (caught before any SQL runs)."""

    code = "type_mismatch"


FILTER_ERROR_TYPES: tuple[type[FilterError], ...] = (
    UnexpectedCharacterError,
    UnterminatedStringError,
    InvalidNumberError,
    ExpectedColumnError,
    ColumnTooLongError,
    ExpectedOperatorError,
    MissingOperatorError,
    ExpectedValueError,
    MissingValueError,
    UnquotedValueError,
    ExpectedConnectorError,
    DanglingConnectorError,
    NullComparisonError,
    LikeRequiresTextError,
    LikeWithTimeError,
    BadTimeValueError,
    TooManyConditionsError,
    UnboundParameterError,
    UnknownColumnError,
    TypeMismatchError,
)
