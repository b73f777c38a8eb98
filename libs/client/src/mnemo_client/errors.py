"""Errors as exceptions: each carries the navigator's HTTP status, its error code and its message
(`{"error": {"code", "message"}}`), one class per status a caller may want to catch alone."""

from __future__ import annotations


class MnemoError(Exception):
    """The navigator refused or failed a request. `status` is the HTTP status (0 when no answer
    came at all), `code` the navigator's error code (e.g. `FORBIDDEN`), `message` its reason."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"HTTP {status} {code}: {message}" if status else f"{code}: {message}")
        self.status = status
        self.code = code
        self.message = message


class NoAnswerError(MnemoError):
    """No HTTP answer: the connection failed or timed out."""


class BadRequestError(MnemoError):
    """400 or 422: the body, filter, parameters or seed are invalid (the message says which)."""


class AuthenticationError(MnemoError):
    """401: no token, or an invalid, expired or wrongly signed one."""


class PermissionDeniedError(MnemoError):
    """403: the token lacks the scope, names no tenant, or is client-confined and the corpus has
    no pinned scope."""


class NotFoundError(MnemoError):
    """404: no such corpus (or path)."""


class ConflictError(MnemoError):
    """409: the corpus is not published (the message names its status) or not a store corpus."""


class PayloadTooLargeError(MnemoError):
    """413: the body is larger than the navigator accepts."""


class UnavailableError(MnemoError):
    """503: the navigator's database is unavailable; the client retried before raising this."""


_BY_STATUS: dict[int, type[MnemoError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    413: PayloadTooLargeError,
    422: BadRequestError,
    503: UnavailableError,
}


def error_for(status: int, code: str, message: str) -> MnemoError:
    """The exception of an error answer: its status's class, `MnemoError` for any other."""
    return _BY_STATUS.get(status, MnemoError)(status, code, message)
