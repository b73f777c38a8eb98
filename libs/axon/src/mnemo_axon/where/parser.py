"""Parser of the flat `where:` grammar (AXON.md §3): `condition (connector condition)*`.

Naming of the errors: *missing* X means the filter ended where X was required; *expected* X means
something else stood where X was required.
"""

from __future__ import annotations

from mnemo_axon.errors import (
    ColumnTooLongError,
    DanglingConnectorError,
    ExpectedColumnError,
    ExpectedConnectorError,
    ExpectedOperatorError,
    ExpectedValueError,
    LikeRequiresTextError,
    LikeWithTimeError,
    MissingOperatorError,
    MissingValueError,
    NullComparisonError,
    TooManyConditionsError,
    UnquotedValueError,
)
from mnemo_axon.where.lexer import Token, TokenKind, tokenize_filter
from mnemo_axon.where.syntax import (
    MAX_COLUMN_BYTES,
    MAX_CONDITIONS,
    BooleanValue,
    Condition,
    Connector,
    Filter,
    NullValue,
    NumberValue,
    Operator,
    StringValue,
    TimeValue,
    Value,
)

_OPERATORS = {
    "=": Operator.EQ,
    "==": Operator.EQ,
    "!=": Operator.NE,
    "<>": Operator.NE,
    ">": Operator.GT,
    ">=": Operator.GE,
    "<": Operator.LT,
    "<=": Operator.LE,
    "LIKE": Operator.LIKE,
}


def parse_filter(text: str) -> Filter:
    """The syntax tree of `text`; raises the FilterError of the first problem, with its position."""
    return _FilterParser(text, tokenize_filter(text)).parse()


def _describe(token: Token) -> str:
    if token.kind is TokenKind.STRING:
        return "a quoted string"
    if token.kind is TokenKind.TIME:
        return "a time value"
    return f"{token.text!r}"


class _FilterParser:
    def __init__(self, text: str, tokens: list[Token]) -> None:
        self._text = text
        self._tokens = tokens
        self._index = 0

    def _next(self) -> Token:
        token = self._tokens[self._index]
        if token.kind is not TokenKind.END:
            self._index += 1
        return token

    def parse(self) -> Filter:
        text = self._text
        conditions: list[Condition] = []
        connectors: list[Connector] = []
        previous_connector: Token | None = None
        while True:
            column = self._next()
            if column.kind is TokenKind.END:
                if previous_connector is None:
                    raise ExpectedColumnError(
                        "empty filter: expected a column name (omit where: to read the whole "
                        "tenant, under row-level security alone)",
                        column.position,
                        text,
                    )
                raise DanglingConnectorError(
                    f"dangling connector: {previous_connector.text!r} has no condition after it",
                    previous_connector.position,
                    text,
                )
            if column.keyword in ("AND", "OR"):
                side = "before" if previous_connector is None else "after"
                anchor = column if previous_connector is None else previous_connector
                raise DanglingConnectorError(
                    f"dangling connector: {anchor.text!r} has no condition {side} it",
                    anchor.position,
                    text,
                )
            if column.kind is not TokenKind.WORD or column.keyword is not None:
                raise ExpectedColumnError(
                    f"expected a column name, got {_describe(column)}", column.position, text
                )
            if len(column.text.encode("utf-8")) > MAX_COLUMN_BYTES:
                raise ColumnTooLongError(
                    f"column name {column.text[:20]!r}… is {len(column.text)} bytes long; "
                    f"a column name has at most {MAX_COLUMN_BYTES}",
                    column.position,
                    text,
                )
            if len(conditions) == MAX_CONDITIONS:
                raise TooManyConditionsError(
                    f"too many conditions: a filter has at most {MAX_CONDITIONS}",
                    column.position,
                    text,
                )
            conditions.append(self._condition(column))
            connector = self._next()
            if connector.kind is TokenKind.END:
                return Filter(tuple(conditions), tuple(connectors))
            if connector.keyword not in ("AND", "OR"):
                raise ExpectedConnectorError(
                    f"expected AND or OR after the condition on {column.text!r}, "
                    f"got {_describe(connector)}",
                    connector.position,
                    text,
                )
            connectors.append(Connector(connector.keyword))
            previous_connector = connector

    def _condition(self, column: Token) -> Condition:
        text = self._text
        operator_token = self._next()
        if operator_token.kind is TokenKind.END:
            raise MissingOperatorError(
                f"missing operator after column {column.text!r} (one of = == != <> > >= < <= LIKE)",
                column.end,
                text,
            )
        if operator_token.kind is not TokenKind.OPERATOR:
            raise ExpectedOperatorError(
                f"expected an operator after column {column.text!r} (one of = == != <> > >= < <= "
                f"LIKE), got {_describe(operator_token)}",
                operator_token.position,
                text,
            )
        operator = _OPERATORS[operator_token.text]
        value = self._value(operator_token)
        if isinstance(value, NullValue) and operator not in (Operator.EQ, Operator.NE):
            raise NullComparisonError(
                f"NULL can only be compared with = or != (IS NULL / IS NOT NULL), "
                f"not with {operator_token.text}",
                operator_token.position,
                text,
            )
        if operator is Operator.LIKE and isinstance(value, TimeValue):
            raise LikeWithTimeError(
                "LIKE with a time value: LIKE matches text patterns; compare times with < <= > >=",
                value.position,
                text,
            )
        if operator is Operator.LIKE and not isinstance(value, StringValue):
            raise LikeRequiresTextError(
                "LIKE requires a quoted text pattern (e.g. name LIKE 'Al%')",
                value.position,
                text,
            )
        return Condition(
            column=column.text,
            operator=operator,
            value=value,
            position=column.position,
            operator_position=operator_token.position,
        )

    def _value(self, operator: Token) -> Value:
        text = self._text
        token = self._next()
        if token.kind is TokenKind.END:
            raise MissingValueError(f"missing value after {operator.text!r}", operator.end, text)
        if token.kind is TokenKind.STRING:
            assert token.string is not None
            return token.string
        if token.kind is TokenKind.NUMBER:
            return NumberValue(token.text, token.position)
        if token.kind is TokenKind.TIME:
            assert token.time is not None
            return token.time
        keyword = token.keyword
        if keyword in ("TRUE", "FALSE"):
            return BooleanValue(keyword == "TRUE", token.position)
        if keyword == "NULL":
            return NullValue(token.position)
        if token.kind is TokenKind.WORD and keyword is None:
            raise UnquotedValueError(
                f"unquoted value {token.text!r}: quote text values ('{token.text}'); "
                "columns cannot be compared with columns",
                token.position,
                text,
            )
        raise ExpectedValueError(
            f"expected a value after {operator.text!r} (a quoted string, a number, TRUE, FALSE, "
            f"NULL or now()), got {_describe(token)}",
            token.position,
            text,
        )
