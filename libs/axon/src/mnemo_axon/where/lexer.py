"""Tokens of a `where:` filter.

Tokenising happens before any parameter is looked at: a quoted string becomes one STRING token whose
content is split into literal text and `${...}` references, so no parameter value can ever change
where a token starts or ends. `now()` with its optional interval is one TIME token, checked here
against the closed unit list. Only ASCII letters, digits and whitespace (space, tab, CR, LF) appear
outside quotes; anything else is an unexpected character.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from typing import Literal

from mnemo_axon.errors import (
    BadTimeValueError,
    InvalidNumberError,
    UnboundParameterError,
    UnexpectedCharacterError,
    UnterminatedStringError,
)
from mnemo_axon.where.syntax import ParameterRef, StringValue, TextPart, TimeUnit, TimeValue

_LETTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_DIGITS = frozenset("0123456789")
_WORD = _LETTERS | _DIGITS
_NUMBER_RUN = _WORD | frozenset(".")
_WHITESPACE = frozenset(" \t\r\n")
_QUOTES = frozenset("'\"")
_OPERATORS = ("==", "!=", "<>", ">=", "<=", "=", ">", "<")  # longest first
_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")
_REFERENCE_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_INTERVAL = re.compile(r"[ \t]*([0-9]{1,6})[ \t]+([A-Za-z]+)[ \t]*")
_UNITS = {unit.value: unit for unit in TimeUnit} | {unit.value + "s": unit for unit in TimeUnit}
# now() ± the interval must stay inside Postgres's timestamptz range (4713 BC to 294276 AD), or a
# well-formed filter would fail at run time; 6000 years is far beyond any scope a filter needs.
MAX_INTERVAL_YEARS = 6000
_UNIT_DAYS = {
    TimeUnit.SECOND: 1 / 86400,
    TimeUnit.MINUTE: 1 / 1440,
    TimeUnit.HOUR: 1 / 24,
    TimeUnit.DAY: 1,
    TimeUnit.WEEK: 7,
    TimeUnit.MONTH: 31,
    TimeUnit.YEAR: 366,
}


class TokenKind(Enum):
    WORD = "word"  # a column name or a keyword (AND, OR, TRUE, FALSE, NULL), any case
    OPERATOR = "operator"  # = == != <> > >= < <= LIKE
    STRING = "string"
    NUMBER = "number"
    TIME = "time"
    END = "end"


@dataclass(frozen=True, slots=True)
class Token:
    kind: TokenKind
    text: str  # as written (operators: the operator; END: "")
    position: int
    end: int
    string: StringValue | None = None
    time: TimeValue | None = None

    @property
    def keyword(self) -> str | None:
        """AND, OR, TRUE, FALSE or NULL when this word is one (any case)."""
        upper = self.text.upper()
        if self.kind is TokenKind.WORD and upper in ("AND", "OR", "TRUE", "FALSE", "NULL"):
            return upper
        return None


def tokenize_filter(text: str) -> list[Token]:
    """The tokens of `text`, ending with an END token; raises the first lexical FilterError."""
    return _Lexer(text).run()


def _describe(char: str) -> str:
    if char.isprintable() and not char.isspace():
        return f"{char!r} (U+{ord(char):04X})"
    return f"U+{ord(char):04X}"


class _Lexer:
    def __init__(self, text: str) -> None:
        self._text = text
        self._index = 0
        self._tokens: list[Token] = []

    def run(self) -> list[Token]:
        text = self._text
        length = len(text)
        while self._index < length:
            char = text[self._index]
            start = self._index
            if char in _WHITESPACE:
                self._index += 1
            elif char in _LETTERS:
                self._word(start)
            elif char in _DIGITS or char in "-.":
                self._number(start)
            elif char in _QUOTES:
                string, end = _read_string(text, start)
                self._tokens.append(Token(TokenKind.STRING, text[start:end], start, end, string))
                self._index = end
            elif char in "=!<>":
                operator = next((op for op in _OPERATORS if text.startswith(op, start)), None)
                if operator is None:
                    raise UnexpectedCharacterError(
                        f"unexpected character {_describe(char)}: did you mean '!='?", start, text
                    )
                end = start + len(operator)
                self._tokens.append(Token(TokenKind.OPERATOR, operator, start, end))
                self._index = end
            elif char == "$" and text.startswith("${", start):
                raise UnexpectedCharacterError(
                    "unexpected character '$': a parameter reference must be inside quotes "
                    "(write '${name}')",
                    start,
                    text,
                )
            elif not char.isascii() and ("a" + char).isidentifier():
                raise UnexpectedCharacterError(
                    f"unexpected character {_describe(char)}: column names are ASCII letters, "
                    "digits and '_' (as in the store's declaration)",
                    start,
                    text,
                )
            else:
                raise UnexpectedCharacterError(
                    f"unexpected character {_describe(char)} (filters are flat: column, operator, "
                    "value, joined by AND/OR; no parentheses, functions or punctuation)",
                    start,
                    text,
                )
        last_end = self._tokens[-1].end if self._tokens else 0
        self._tokens.append(Token(TokenKind.END, "", last_end, last_end))
        return self._tokens

    def _word(self, start: int) -> None:
        text = self._text
        end = start + 1
        while end < len(text) and text[end] in _WORD:
            end += 1
        word = text[start:end]
        if word.upper() == "LIKE":
            self._tokens.append(Token(TokenKind.OPERATOR, "LIKE", start, end))
            self._index = end
            return
        if word.lower() == "now":
            after = _skip_blanks(text, end)
            if after < len(text) and text[after] == "(":
                self._time(start, after)
                return
        self._tokens.append(Token(TokenKind.WORD, word, start, end))
        self._index = end

    def _number(self, start: int) -> None:
        text = self._text
        end = start + 1
        while end < len(text) and text[end] in _NUMBER_RUN:
            end += 1
        literal = text[start:end]
        if _NUMBER.fullmatch(literal) is None:
            raise InvalidNumberError(
                f"invalid number {literal!r} (expected an optional '-', digits and at most one "
                "'.' followed by digits, e.g. 42, -3, 0.75)",
                start,
                text,
            )
        self._tokens.append(Token(TokenKind.NUMBER, literal, start, end))
        self._index = end

    def _time(self, start: int, open_paren: int) -> None:
        text = self._text
        close = _skip_blanks(text, open_paren + 1)
        if close >= len(text) or text[close] != ")":
            raise BadTimeValueError(
                "bad time value: now takes no arguments (write now())", open_paren, text
            )
        end = close + 1
        offset: Literal["+", "-"] | None = None
        amount, unit = 0, None
        sign_at = _skip_blanks(text, end)
        if sign_at < len(text) and text[sign_at] in "+-":
            offset = "+" if text[sign_at] == "+" else "-"
            keyword_at = _skip_blanks(text, sign_at + 1)
            keyword_end = keyword_at
            while keyword_end < len(text) and text[keyword_end] in _WORD:
                keyword_end += 1
            quote_at = _skip_blanks(text, keyword_end)
            if (
                text[keyword_at:keyword_end].lower() != "interval"
                or quote_at >= len(text)
                or text[quote_at] not in _QUOTES
            ):
                raise BadTimeValueError(
                    f"bad time value: after now() {offset} expected interval '<n> <unit>' "
                    "(e.g. now() - interval '30 minutes')",
                    sign_at,
                    text,
                )
            interval, end = _read_string(text, quote_at)
            if not interval.is_bound:
                raise BadTimeValueError(
                    "bad time value: an interval is written in the filter, not taken from "
                    "parameters (e.g. interval '30 minutes')",
                    quote_at,
                    text,
                )
            amount, unit = _parse_interval(interval.text, quote_at, text)
        self._tokens.append(
            Token(
                TokenKind.TIME,
                text[start:end],
                start,
                end,
                time=TimeValue(offset=offset, amount=amount, unit=unit, position=start),
            )
        )
        self._index = end


def _skip_blanks(text: str, index: int) -> int:
    while index < len(text) and text[index] in _WHITESPACE:
        index += 1
    return index


def _parse_interval(content: str, position: int, text: str) -> tuple[int, TimeUnit]:
    match = _INTERVAL.fullmatch(content)
    unit = None if match is None else _UNITS.get(match.group(2).lower())
    if match is None or unit is None:
        raise BadTimeValueError(
            f"bad time value: interval {content[:40]!r} is not '<n> <unit>' with n of at most "
            "6 digits and unit one of second(s), minute(s), hour(s), day(s), week(s), "
            "month(s), year(s)",
            position,
            text,
        )
    amount = int(match.group(1))
    if amount * _UNIT_DAYS[unit] > MAX_INTERVAL_YEARS * 366:
        raise BadTimeValueError(
            f"bad time value: interval {content.strip()!r} is longer than {MAX_INTERVAL_YEARS} "
            "years",
            position,
            text,
        )
    return amount, unit


def _read_string(text: str, start: int) -> tuple[StringValue, int]:
    """The string opening at `start` and the offset just past its closing quote."""
    quote = text[start]
    parts: list[TextPart | ParameterRef] = []
    literal: list[str] = []
    index = start + 1
    length = len(text)
    while index < length:
        char = text[index]
        if char == "\\":
            if index + 1 >= length:
                break
            literal.append(text[index + 1])
            index += 2
            continue
        if char == quote:
            if literal:
                parts.append(TextPart("".join(literal)))
            return StringValue(tuple(parts), start), index + 1
        if char == "$" and text.startswith("${", index):
            close = text.find("}", index + 2)
            path = text[index + 2 : close] if close != -1 else ""
            if close == -1 or _REFERENCE_PATH.fullmatch(path) is None:
                raise UnboundParameterError(
                    "malformed parameter reference: expected ${name} or ${a.b} "
                    "(write \\${ for a literal '${')",
                    index,
                    text,
                )
            if literal:
                parts.append(TextPart("".join(literal)))
                literal = []
            parts.append(ParameterRef(tuple(path.split(".")), index))
            index = close + 1
            continue
        literal.append(char)
        index += 1
    raise UnterminatedStringError(
        f"unterminated string: no closing {quote} before the end of the filter", start, text
    )
