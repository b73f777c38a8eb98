"""JSON a user gives the command (an option's text or a named file), read into Python values.

Whatever the text holds, the outcome is the values or one CliError line naming what was given:
not JSON, an integer too long to read (Python's limit is 4,300 digits), nesting too deep to
read, a file that cannot be read or is not UTF-8. Never a traceback.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from mnemo_cli.errors import CliError

# Python refuses to read an integer of more digits than this (a defence against quadratic parsing).
_MAX_INTEGER_DIGITS = sys.get_int_max_str_digits() or 4300


def parse_json(text: str, what: str) -> object:
    """The value `text` encodes; `what` names it in errors (`--params`, `graph.json`)."""
    try:
        return json.loads(text, parse_int=_integer)
    except json.JSONDecodeError as error:
        raise CliError(
            f"{what} is not valid JSON: {error.msg} at line {error.lineno} column {error.colno}"
        ) from None
    except _TooLongError as error:
        raise CliError(
            f"{what} holds an integer of {error.digits} digits; numbers of more than "
            f"{_MAX_INTEGER_DIGITS} digits are refused"
        ) from None
    except RecursionError:
        raise CliError(
            f"{what} is nested too deeply to read; keep JSON arrays and objects under a few "
            "hundred levels"
        ) from None


def read_json_file(path: Path, what: str | None = None) -> object:
    """The value the file at `path` encodes (see `parse_json`)."""
    name = what or str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise CliError(f"{name} is not UTF-8 text (byte {error.start}); save it as UTF-8") from None
    except OSError as error:
        raise CliError(f"cannot read {name}: {error.strerror or error}") from None
    except ValueError:  # a NUL or an unencodable character in the name: no file can have it
        raise CliError(f"cannot read {name!r}: no file can have that name") from None
    return parse_json(text, name)


class _TooLongError(ValueError):
    def __init__(self, digits: int) -> None:
        super().__init__(f"an integer of {digits} digits")
        self.digits = digits


def _integer(literal: str) -> int:
    digits = len(literal.lstrip("-"))
    if digits > _MAX_INTEGER_DIGITS:
        raise _TooLongError(digits)
    return int(literal)
