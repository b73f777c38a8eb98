"""Tokens of a `.axon` file.

The lexer never fails: a character that no declaration token starts with becomes an OTHER token
(flows, which are skipped, are full of them: `->`, `<`, `.`), and an unterminated string becomes a
BAD token carrying its message. The parser decides what is an error where: an OTHER token inside a
declaration is one, the same token inside a skipped flow block is not.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from enum import Enum

_NAME_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_NAME_PART = _NAME_START | frozenset("0123456789")
_DIGITS = frozenset("0123456789")
_PUNCTUATION = frozenset("{}()[]:,")
# A number: `1`, `-2.5`, `.5`, `1e-3`, `2.5E+2` (what float() reads, without inf and nan).
_NUMBER = re.compile(r"-?(?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_WHITESPACE = frozenset(" \t\r\n\f\v")


class TokenKind(Enum):
    """What a token is; keywords are NAMEs and are recognised by the parser in context."""

    NAME = "name"
    FOREIGN_NAME = "name with non-ASCII letters"
    STRING = "string"
    NUMBER = "number"
    PUNCT = "punctuation"
    OTHER = "other"
    BAD = "bad"
    EOF = "end of file"


@dataclass(frozen=True, slots=True)
class Token:
    """One token: `text` is the string content for STRING, the message for BAD, else as written."""

    kind: TokenKind
    text: str
    line: int
    column: int
    first_on_line: bool

    def is_punct(self, char: str) -> bool:
        return self.kind is TokenKind.PUNCT and self.text == char

    def is_name(self, word: str) -> bool:
        return self.kind is TokenKind.NAME and self.text == word

    def describe(self) -> str:
        """How an error message names this token."""
        if self.kind is TokenKind.EOF:
            return "end of file"
        if self.kind is TokenKind.STRING:
            return "a string"
        if self.kind is TokenKind.NUMBER:
            return f"number {self.text}"
        if self.kind is TokenKind.NAME:
            return f"'{self.text}'"
        if self.kind is TokenKind.OTHER:
            return f"unexpected character {self.text!r} (U+{ord(self.text):04X})"
        return f"'{self.text}'"


def foreign_name_message(word: str) -> str:
    """Why a name with non-ASCII letters is refused, and an ASCII spelling that would do."""
    first = next(char for char in word if not char.isascii())
    ascii_form = unicodedata.normalize("NFKD", word).encode("ascii", "ignore").decode("ascii")
    hint = f" (e.g. '{ascii_form}')" if ascii_form and ascii_form[0] not in "0123456789" else ""
    return (
        f"name '{word}' contains {first!r} (U+{ord(first):04X}): names are ASCII letters, digits "
        f"and '_', because they become Postgres identifiers and corpus ids{hint}"
    )


def _is_foreign_letter(char: str) -> bool:
    return not char.isascii() and ("a" + char).isidentifier()


def _number_at(text: str, index: int) -> str:
    """The number literal starting at `index`, or "" when none does."""
    char = text[index]
    if not (char in _DIGITS or char in "-."):
        return ""
    match = _NUMBER.match(text, index)
    return "" if match is None else match.group()


def tokenize(text: str) -> list[Token]:
    """Every token of `text`, ending with one EOF token."""
    tokens: list[Token] = []
    index = 0
    line = 1
    line_start = 0
    last_token_line = 0
    length = len(text)

    def emit(kind: TokenKind, value: str, start_line: int, start_column: int) -> None:
        nonlocal last_token_line
        tokens.append(Token(kind, value, start_line, start_column, start_line != last_token_line))
        last_token_line = start_line

    while index < length:
        char = text[index]
        column = index - line_start + 1
        if char == "\n":
            line += 1
            index += 1
            line_start = index
            continue
        if char in _WHITESPACE:
            index += 1
            continue
        if char == "#":
            while index < length and text[index] != "\n":
                index += 1
            continue
        if char in _NAME_START or _is_foreign_letter(char):
            end = index + 1
            while end < length and (text[end] in _NAME_PART or _is_foreign_letter(text[end])):
                end += 1
            word = text[index:end]
            kind = TokenKind.NAME if word.isascii() else TokenKind.FOREIGN_NAME
            emit(kind, word, line, column)
            index = end
            continue
        number = _number_at(text, index)
        if number:
            emit(TokenKind.NUMBER, number, line, column)
            index += len(number)
            continue
        if char == '"':
            start_line, start_column = line, column
            content: list[str] = []
            end = index + 1
            closed = False
            while end < length:
                current = text[end]
                if current == "\\" and end + 1 < length:
                    content.append(text[end + 1])
                    if text[end + 1] == "\n":
                        line += 1
                        line_start = end + 2
                    end += 2
                    continue
                if current == '"':
                    closed = True
                    end += 1
                    break
                if current == "\n":
                    line += 1
                    line_start = end + 1
                content.append(current)
                end += 1
            if closed:
                emit(TokenKind.STRING, "".join(content), start_line, start_column)
            else:
                emit(
                    TokenKind.BAD,
                    "unterminated string: no closing '\"' before the end of the file",
                    start_line,
                    start_column,
                )
            index = end
            continue
        kind = TokenKind.PUNCT if char in _PUNCTUATION else TokenKind.OTHER
        emit(kind, char, line, column)
        index += 1
    tokens.append(Token(TokenKind.EOF, "", line, length - line_start + 1, True))
    return tokens
