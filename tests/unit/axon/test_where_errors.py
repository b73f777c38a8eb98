"""One test per `where:` error of AXON.md §3: its own type, its code, the offending position."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from mnemo_axon import FilterError, TableColumns, compile_where
from mnemo_axon.errors import (
    FILTER_ERROR_TYPES,
    BadTimeValueError,
    ColumnTooLongError,
    DanglingConnectorError,
    ExpectedColumnError,
    ExpectedConnectorError,
    ExpectedOperatorError,
    ExpectedValueError,
    InvalidNumberError,
    LikeRequiresTextError,
    LikeWithTimeError,
    MissingOperatorError,
    MissingValueError,
    NullComparisonError,
    TooManyConditionsError,
    TypeMismatchError,
    UnboundParameterError,
    UnexpectedCharacterError,
    UnknownColumnError,
    UnquotedValueError,
    UnterminatedStringError,
)

DOCS = TableColumns.of(
    "docs",
    {
        "a": "Integer",
        "b": "Integer",
        "n": "Integer",
        "big": "BigInt",
        "name": "Text",
        "id": "Uuid",
        "t": "Timestamptz",
        "day": "Date",
        "flag": "Boolean",
        "meta": "Json",
        "amount": "Numeric",
        "score": "Float",
    },
)


def failure(
    filter_text: str,
    params: Mapping[str, object] | None = None,
    tables: list[TableColumns] | None = None,
) -> FilterError:
    with pytest.raises(FilterError) as caught:
        compile_where(filter_text, params or {}, tables or [DOCS])
    return caught.value


def assert_error(error: FilterError, kind: type[FilterError], position: int) -> None:
    assert type(error) is kind, f"{type(error).__name__}: {error}"
    assert error.position == position, str(error)
    assert error.code == kind.code
    assert f"at position {position}" in str(error)


def test_every_error_type_has_its_own_code() -> None:
    codes = [kind.code for kind in FILTER_ERROR_TYPES]
    assert len(set(codes)) == len(codes) == 20


def test_unexpected_character() -> None:
    assert_error(failure("a = 1 ; b = 2"), UnexpectedCharacterError, 6)
    assert_error(failure("(a = 1)"), UnexpectedCharacterError, 0)
    assert_error(failure("a ! 1"), UnexpectedCharacterError, 2)
    assert_error(failure("name = 'x' -- comment"), InvalidNumberError, 11)


def test_a_parameter_reference_outside_quotes_is_a_lexer_error() -> None:
    error = failure("name = ${x}", {"x": "a"})
    assert_error(error, UnexpectedCharacterError, 7)
    assert "must be inside quotes" in error.message


def test_unterminated_string() -> None:
    assert_error(failure("name = 'abc"), UnterminatedStringError, 7)
    assert_error(failure('name = "abc\\"'), UnterminatedStringError, 7)
    assert_error(failure("name = 'abc\\"), UnterminatedStringError, 7)


def test_invalid_number() -> None:
    assert_error(failure("a = 1.2.3"), InvalidNumberError, 4)
    assert_error(failure("a = 12abc"), InvalidNumberError, 4)
    assert_error(failure("a = -"), InvalidNumberError, 4)
    assert_error(failure("a = .5"), InvalidNumberError, 4)
    assert_error(failure("a = 5."), InvalidNumberError, 4)


def test_expected_column() -> None:
    assert_error(failure("= 1"), ExpectedColumnError, 0)
    assert_error(failure("'a' = 1"), ExpectedColumnError, 0)
    assert_error(failure("NULL = 1"), ExpectedColumnError, 0)
    assert_error(failure("a = 1 AND 5 = 5"), ExpectedColumnError, 10)


def test_an_empty_filter_is_refused_rather_than_meaning_everything() -> None:
    error = failure("   ")
    assert_error(error, ExpectedColumnError, 0)
    assert "omit where:" in error.message


def test_column_too_long() -> None:
    assert_error(failure("c" * 64 + " = 1"), ColumnTooLongError, 0)
    assert_error(failure("a = 1 OR " + "c" * 64 + " = 1"), ColumnTooLongError, 9)


def test_expected_operator() -> None:
    assert_error(failure("a 1"), ExpectedOperatorError, 2)
    assert_error(failure("a b = 1"), ExpectedOperatorError, 2)


def test_missing_operator() -> None:
    assert_error(failure("a"), MissingOperatorError, 1)
    assert_error(failure("a = 1 AND name  "), MissingOperatorError, 14)


def test_expected_value() -> None:
    assert_error(failure("a = = 1"), ExpectedValueError, 4)
    assert_error(failure("a = AND b = 1"), ExpectedValueError, 4)


def test_missing_value() -> None:
    assert_error(failure("a ="), MissingValueError, 3)
    assert_error(failure("a >=  "), MissingValueError, 4)


def test_unquoted_value() -> None:
    error = failure("name = Alice")
    assert_error(error, UnquotedValueError, 7)
    assert "'Alice'" in error.message


def test_expected_connector() -> None:
    assert_error(failure("a = 1 b = 2"), ExpectedConnectorError, 6)
    assert_error(failure("a = 1 'x'"), ExpectedConnectorError, 6)


def test_dangling_connector() -> None:
    assert_error(failure("a = 1 AND"), DanglingConnectorError, 6)
    assert_error(failure("AND a = 1"), DanglingConnectorError, 0)
    assert_error(failure("a = 1 AND OR b = 2"), DanglingConnectorError, 6)


def test_null_with_a_non_equality_operator() -> None:
    assert_error(failure("a > NULL"), NullComparisonError, 2)
    assert_error(failure("name LIKE null"), NullComparisonError, 5)


def test_like_requires_text() -> None:
    assert_error(failure("name LIKE 5"), LikeRequiresTextError, 10)
    assert_error(failure("name LIKE TRUE"), LikeRequiresTextError, 10)
    assert_error(failure("n LIKE '1%'"), LikeRequiresTextError, 2)


def test_like_with_a_time_value() -> None:
    assert_error(failure("name LIKE now()"), LikeWithTimeError, 10)


def test_bad_time_value() -> None:
    assert_error(failure("t > now() - interval '3 fortnights'"), BadTimeValueError, 21)
    assert_error(failure("t > now() - interval '1234567 days'"), BadTimeValueError, 21)
    assert_error(failure("t > now() - interval 'ten days'"), BadTimeValueError, 21)
    assert_error(failure("t > now() - interval '6001 years'"), BadTimeValueError, 21)
    assert compile_where("t > now() - interval '6000 years'", {}, [DOCS]).params == ()
    assert_error(failure("t > now() - 5"), BadTimeValueError, 10)
    assert_error(failure("t > now(1)"), BadTimeValueError, 7)
    assert_error(failure("t > now() - interval '${days} days'", {"days": 3}), BadTimeValueError, 21)


def test_too_many_conditions() -> None:
    allowed = " AND ".join(["a = 1"] * 256)
    assert len(compile_where(allowed, {}, [DOCS]).params) == 256
    error = failure(allowed + " AND b = 2")
    assert_error(error, TooManyConditionsError, len(allowed) + 5)


def test_unbound_parameter() -> None:
    error = failure("name = '${who}'", {"someone": "else"})
    assert_error(error, UnboundParameterError, 8)
    assert error.message == "unbound parameter 'who'"
    nested = failure("name = 'x${e.to_id}'", {"e": {"etype": "cite"}})
    assert_error(nested, UnboundParameterError, 9)
    assert nested.message.startswith("unbound parameter 'e.to_id'")
    assert_error(failure("name = '${e.to_id}'", {"e": "flat"}), UnboundParameterError, 8)
    assert_error(failure("name = '${1x}'"), UnboundParameterError, 8)
    assert_error(failure("name = '${x'"), UnboundParameterError, 8)


def test_unknown_column() -> None:
    error = failure("missing = 1")
    assert_error(error, UnknownColumnError, 0)
    assert error.message == "unknown column 'missing' in store 'docs'"


def test_a_column_must_exist_in_every_table_the_filter_applies_to() -> None:
    edges = TableColumns.of("edges", {"a": "Integer"})
    error = failure("a = 1 AND name = 'x'", tables=[DOCS, edges])
    assert_error(error, UnknownColumnError, 10)
    assert error.message == "unknown column 'name' in store 'edges'"


@pytest.mark.parametrize(
    ("filter_text", "params", "position"),
    [
        ("id = 'not-a-uuid'", {}, 5),
        ("n = 'abc'", {}, 4),
        ("n = 2147483648", {}, 4),
        ("big = 9223372036854775808", {}, 6),
        ("n = 1.5", {}, 4),
        ("flag = 1", {}, 7),
        ("name = 5", {}, 7),
        ("id = TRUE", {}, 5),
        ("name > now()", {}, 7),
        ("amount = 'NaN'", {}, 9),
        ("score = '1e999'", {}, 8),
        ("t = '2024-05-01T12:00:00'", {}, 4),
        ("day = '2024-02-30'", {}, 6),
        ("meta = '{not json'", {}, 7),
        ("name = '${v}'", {"v": "nul\x00byte"}, 7),
        ("name = '${v}'", {"v": None}, 8),
        ("name = '${v}'", {"v": b"bytes"}, 8),
        ("name LIKE 'ends with \\\\'", {}, 10),
    ],
)
def test_type_mismatch_is_caught_before_sql_runs(
    filter_text: str, params: dict[str, object], position: int
) -> None:
    assert_error(failure(filter_text, params), TypeMismatchError, position)


def test_a_column_with_different_types_in_two_tables_is_a_type_mismatch() -> None:
    edges = TableColumns.of("edges", {"id": "Text"})
    error = failure("id = 'x'", tables=[DOCS, edges])
    assert_error(error, TypeMismatchError, 0)
    assert error.message == (
        "column 'id' is Uuid in store 'docs' but Text in store 'edges'; a filter applied to both "
        "needs one type"
    )


def test_errors_carry_line_and_column_for_multi_line_filters() -> None:
    error = failure("a = 1\nAND b = 2\nOR name = Alice")
    assert (error.line, error.column) == (3, 11)
