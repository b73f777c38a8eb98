"""Bearer tokens (JWT) shared by every Mnemo HTTP service and the `mnemo` CLI.

verifier = TokenVerifier(TokenKeys(secret=settings.token_secret))
principal = verifier.verify(bearer_token(request.headers.get("authorization")))
principal.tenant  # the only source of the tenant for an HTTP request
"""

from mnemo_auth.errors import (
    AuthError,
    InsufficientScopeError,
    InvalidTokenError,
    KeyConfigurationError,
)
from mnemo_auth.tokens import (
    DEFAULT_AUDIENCE,
    DEFAULT_ISSUER,
    DEVELOPMENT_SECRET,
    Principal,
    TokenKeys,
    TokenVerifier,
    bearer_token,
    client_claim,
    mint_token,
)

__all__ = [
    "DEFAULT_AUDIENCE",
    "DEFAULT_ISSUER",
    "DEVELOPMENT_SECRET",
    "AuthError",
    "InsufficientScopeError",
    "InvalidTokenError",
    "KeyConfigurationError",
    "Principal",
    "TokenKeys",
    "TokenVerifier",
    "bearer_token",
    "client_claim",
    "mint_token",
]
