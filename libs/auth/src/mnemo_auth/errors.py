"""Why a bearer token was not accepted."""

from __future__ import annotations


class AuthError(Exception):
    """Base of every error of this package."""


class InvalidTokenError(AuthError):
    """The token is missing, malformed, expired, wrongly signed or lacks a required claim (401)."""


class InsufficientScopeError(AuthError):
    """The token is valid but does not carry the scope the operation needs (403)."""

    def __init__(self, needed: str, granted: frozenset[str]) -> None:
        have = ", ".join(sorted(granted)) or "none"
        super().__init__(f"this operation needs scope {needed!r}; the token grants {have}")
        self.needed = needed


class KeyConfigurationError(AuthError):
    """No usable verification key: give a shared secret, a public key or a JWKS URL."""
