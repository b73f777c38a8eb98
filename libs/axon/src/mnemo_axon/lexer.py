"""Tokens of a `.axon` file.

The lexer never fails: a character that no declaration token starts with becomes an OTHER token
(flows, which are skipped, are full of them: `->`, `<`, `.`), and an unterminated string becomes a
BAD token carrying its message. The parser decides what is an error where: an OTHER token inside a
declaration is one, the same token inside a skipped flow block is not.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

_NAME_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_NAME_PART = _NAME_START | frozenset("0123456789")
_DIGITS = frozenset("0123456789")
_PUNCTUATION = frozenset("{}()[]:,")
_WHITESPACE = frozenset(" \t\r\n\f\v")


class TokenKind(Enum):
    """What a token is; keywords are NAMEs and are recognised by the parser in context."""

    NAME = "name"
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
        if char in _NAME_START:
            end = index + 1
            while end < length and text[end] in _NAME_PART:
                end += 1
            emit(TokenKind.NAME, text[index:end], line, column)
            index = end
            continue
        if char in _DIGITS or (char == "-" and index + 1 < length and text[index + 1] in _DIGITS):
            end = index + 1
            while end < length and text[end] in _DIGITS:
                end += 1
            if end + 1 < length and text[end] == "." and text[end + 1] in _DIGITS:
                end += 2
                while end < length and text[end] in _DIGITS:
                    end += 1
            emit(TokenKind.NUMBER, text[index:end], line, column)
            index = end
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
