"""Bearer tokens: one verification for every Mnemo HTTP service, and minting for development.

A token is a JWT whose claims name the tenant (`tenant`, a uuid: the only source of the tenant for
an HTTP request), the caller (`sub`), its scopes (`scope`, space-separated, e.g. `read admin`) and
optionally the end-client (`client`, an object of strings binding a corpus's pinned scope). It
must carry `exp`, and `iss`/`aud` when the keys say so. Verification is PyJWT's; this module only
decides which keys and claims count and turns every failure into `InvalidTokenError` with a reason.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import jwt

from mnemo_auth.errors import InsufficientScopeError, InvalidTokenError, KeyConfigurationError

DEFAULT_ISSUER = "mnemo"
DEFAULT_AUDIENCE = "mnemo"
DEVELOPMENT_SECRET = "mnemo-local-development-only-secret"  # noqa: S105  (public on purpose, below)
"""The local stack's HS256 key: `mnemo token` signs with it by default, and services verify with it
only in development mode (`MNEMO_DEVELOPMENT=1`) when no key is configured. It is public; never
use it where anyone else can reach the service."""
_SYMMETRIC = ("HS256", "HS384", "HS512")
_ASYMMETRIC = ("RS256", "RS384", "RS512", "ES256", "ES384", "EdDSA")


@dataclass(frozen=True, slots=True)
class TokenKeys:
    """What verifies a token: exactly one of a shared secret, a PEM public key or a JWKS URL."""

    secret: str | None = None
    public_key: str | None = None
    jwks_url: str | None = None
    issuer: str | None = DEFAULT_ISSUER
    audience: str | None = DEFAULT_AUDIENCE
    leeway_seconds: float = 5.0

    def __post_init__(self) -> None:
        given = [v for v in (self.secret, self.public_key, self.jwks_url) if v]
        if len(given) != 1:
            raise KeyConfigurationError(
                "token keys need exactly one of: a shared secret (HS256), a PEM public key, "
                f"a JWKS URL; {len(given)} given"
            )

    @property
    def algorithms(self) -> tuple[str, ...]:
        return _SYMMETRIC if self.secret else _ASYMMETRIC


@dataclass(frozen=True, slots=True)
class Principal:
    """Who a verified token speaks for."""

    tenant: uuid.UUID
    subject: str
    scopes: frozenset[str] = frozenset()
    client: Mapping[str, str] = field(default_factory=dict)

    def require(self, scope: str) -> None:
        """Raise `InsufficientScopeError` unless the token grants `scope` (`admin` grants all)."""
        if scope not in self.scopes and "admin" not in self.scopes:
            raise InsufficientScopeError(scope, self.scopes)


def bearer_token(authorization: str | None) -> str:
    """The token of an `Authorization: Bearer <token>` header value."""
    if not authorization:
        raise InvalidTokenError("missing bearer token: send 'Authorization: Bearer <token>'")
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise InvalidTokenError("the Authorization header must be 'Bearer <token>'")
    return token.strip()


class TokenVerifier:
    """Verifies tokens against one set of keys (a JWKS is fetched lazily and cached by PyJWT)."""

    def __init__(self, keys: TokenKeys) -> None:
        self._keys = keys
        self._jwks = jwt.PyJWKClient(keys.jwks_url) if keys.jwks_url else None

    def verify(self, token: str) -> Principal:
        keys = self._keys
        try:
            key: Any
            if self._jwks is not None:
                key = self._jwks.get_signing_key_from_jwt(token).key
            else:
                key = keys.secret or keys.public_key
            required = ["exp", "tenant"]
            if keys.issuer:
                required.append("iss")
            if keys.audience:
                required.append("aud")
            claims = jwt.decode(
                token,
                key,
                algorithms=list(keys.algorithms),
                issuer=keys.issuer,
                audience=keys.audience,
                leeway=keys.leeway_seconds,
                options={"require": required},
            )
        except jwt.PyJWTError as error:
            raise InvalidTokenError(f"invalid token: {error}") from error
        return _principal(claims)


def _principal(claims: Mapping[str, Any]) -> Principal:
    try:
        tenant = uuid.UUID(str(claims["tenant"]))
    except ValueError as error:
        raise InvalidTokenError("invalid token: the 'tenant' claim is not a uuid") from error
    scope = claims.get("scope", "")
    if not isinstance(scope, str):
        raise InvalidTokenError("invalid token: 'scope' must be a space-separated string")
    client = client_claim(claims.get("client")) if "client" in claims else {}
    return Principal(
        tenant=tenant,
        subject=str(claims.get("sub", "")),
        scopes=frozenset(scope.split()),
        client=client,
    )


def client_claim(value: object) -> dict[str, str]:
    """A present `client` claim, checked: it must name its end-client, an object of non-empty
    strings with at least one key. An empty or null claim is refused rather than read as "no
    claim", which would widen a client-confined caller to the whole tenant."""
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise InvalidTokenError(
            "invalid token: 'client' must be an object of strings naming the end-client, "
            'e.g. {"tenant_id": "northwind"}'
        )
    if not value or not all(k and v for k, v in value.items()):
        raise InvalidTokenError(
            "invalid token: 'client' is present but names no end-client (empty object, key or "
            "value); a client-confined token must name its client, a tenant-wide token omits "
            "the claim"
        )
    return dict(value)


def mint_token(
    *,
    tenant: uuid.UUID,
    secret: str,
    subject: str = "developer",
    scopes: Iterable[str] = ("read",),
    client: Mapping[str, str] | None = None,
    ttl: timedelta = timedelta(hours=1),
    issuer: str = DEFAULT_ISSUER,
    audience: str = DEFAULT_AUDIENCE,
    now: datetime | None = None,
) -> str:
    """A signed HS256 token for development and tests (production tokens come from the IdP)."""
    issued = now or datetime.now(UTC)
    claims: dict[str, Any] = {
        "tenant": str(tenant),
        "sub": subject,
        "scope": " ".join(scopes),
        "iss": issuer,
        "aud": audience,
        "iat": issued,
        "exp": issued + ttl,
    }
    if client:
        claims["client"] = dict(client)
    return jwt.encode(claims, secret, algorithm="HS256")
