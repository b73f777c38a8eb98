"""`mnemo token` mints tokens the shared verifier accepts, with the claims asked for."""

from __future__ import annotations

import uuid

import pytest
from mnemo_auth import DEVELOPMENT_SECRET, TokenKeys, TokenVerifier
from mnemo_cli.main import main


def test_a_minted_token_carries_the_tenant_client_and_scopes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    tenant = uuid.uuid4()
    code = main(
        ["token", "--tenant", str(tenant), "--client", "tenant_id=acme", "--scope", "admin"]
    )
    assert code == 0
    token = capsys.readouterr().out.strip()
    principal = TokenVerifier(TokenKeys(secret=DEVELOPMENT_SECRET)).verify(token)
    assert principal.tenant == tenant
    assert principal.client == {"tenant_id": "acme"}
    assert principal.scopes == frozenset({"admin"})


def test_a_tenant_that_is_not_a_uuid_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["token", "--tenant", "acme"]) == 2
    assert "not a uuid" in capsys.readouterr().err
