"""Errors of the `mnemo` command: printed as one line, never as a traceback."""

from __future__ import annotations


class CliError(Exception):
    """A user-facing failure: the message says what was wrong and what would be right."""

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code
