"""Bearer tokens: what verifies, and why everything else is refused."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import jwt
import pytest
from mnemo_auth import (
    InsufficientScopeError,
    InvalidTokenError,
    KeyConfigurationError,
    TokenKeys,
    TokenVerifier,
    bearer_token,
    mint_token,
)

SECRET = "a-test-secret-of-at-least-32-bytes!!"


def test_a_minted_token_verifies_to_its_tenant_scopes_and_client() -> None:
    tenant = uuid.uuid4()
    token = mint_token(tenant=tenant, secret=SECRET, scopes=("read",), client={"tenant_id": "c1"})
    principal = TokenVerifier(TokenKeys(secret=SECRET)).verify(token)
    assert principal.tenant == tenant
    assert principal.scopes == frozenset({"read"})
    assert dict(principal.client) == {"tenant_id": "c1"}
    principal.require("read")
    with pytest.raises(InsufficientScopeError, match="admin"):
        principal.require("admin")


@pytest.mark.parametrize(
    "token",
    [
        mint_token(tenant=uuid.uuid4(), secret="another-secret-also-32-bytes-long!!"),
        mint_token(tenant=uuid.uuid4(), secret=SECRET, now=datetime.now(UTC) - timedelta(hours=2)),
        mint_token(tenant=uuid.uuid4(), secret=SECRET, audience="someone-else"),
        jwt.encode(
            {"exp": datetime.now(UTC) + timedelta(hours=1), "iss": "mnemo", "aud": "mnemo"}, SECRET
        ),
        jwt.encode(
            {
                "tenant": "not-a-uuid",
                "exp": datetime.now(UTC) + timedelta(hours=1),
                "iss": "mnemo",
                "aud": "mnemo",
            },
            SECRET,
        ),
        "not.a.token",
    ],
    ids=["wrong-key", "expired", "wrong-audience", "no-tenant", "bad-tenant", "garbage"],
)
def test_a_bad_token_is_refused_with_a_reason(token: str) -> None:
    with pytest.raises(InvalidTokenError, match="invalid token"):
        TokenVerifier(TokenKeys(secret=SECRET)).verify(token)


def test_an_unsigned_token_is_refused() -> None:
    token = jwt.encode(
        {
            "tenant": str(uuid.uuid4()),
            "exp": datetime.now(UTC) + timedelta(hours=1),
            "iss": "mnemo",
            "aud": "mnemo",
        },
        None,  # type: ignore[arg-type]  # PyJWT's hints omit the None that alg "none" needs
        algorithm="none",
    )
    with pytest.raises(InvalidTokenError):
        TokenVerifier(TokenKeys(secret=SECRET)).verify(token)


def test_the_authorization_header_must_say_bearer() -> None:
    assert bearer_token("Bearer abc") == "abc"
    for value in (None, "", "Basic abc", "Bearer "):
        with pytest.raises(InvalidTokenError):
            bearer_token(value)


def test_keys_need_exactly_one_source() -> None:
    with pytest.raises(KeyConfigurationError):
        TokenKeys()
    with pytest.raises(KeyConfigurationError):
        TokenKeys(secret=SECRET, jwks_url="http://127.0.0.1:1/jwks")


def _token_with_claims(**extra: object) -> str:
    claims: dict[str, object] = {
        "tenant": str(uuid.uuid4()),
        "sub": "probe",
        "scope": "read",
        "iss": "mnemo",
        "aud": "mnemo",
        "exp": datetime.now(UTC) + timedelta(hours=1),
    }
    claims.update(extra)
    return jwt.encode(claims, SECRET, algorithm="HS256")


@pytest.mark.parametrize(
    "client",
    [{}, [], "", 0, False, None, {"tenant_id": ""}, {"": "northwind"}, ["northwind"], "northwind"],
    ids=[
        "empty-object",
        "empty-list",
        "empty-string",
        "zero",
        "false",
        "null",
        "empty-value",
        "empty-key",
        "list",
        "string",
    ],
)
def test_a_client_claim_that_names_no_end_client_is_refused(client: object) -> None:
    """A present `client` claim must name its end-client: an empty or null one used to read as
    "no claim" and gave a client-confined token the whole tenant."""
    with pytest.raises(InvalidTokenError, match="'client'"):
        TokenVerifier(TokenKeys(secret=SECRET)).verify(_token_with_claims(client=client))


def test_a_token_without_a_client_claim_is_tenant_wide() -> None:
    principal = TokenVerifier(TokenKeys(secret=SECRET)).verify(_token_with_claims())
    assert dict(principal.client) == {}
