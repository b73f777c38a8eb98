"""A token-verifying service started outside development mode without a token key refuses to
start: the process exits with status 2 and one line naming the settings to set, before it opens
a port or a connection (issue 26: it used to fall back to the public development key)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

KEY_NAMES = ("TOKEN_SECRET", "TOKEN_PUBLIC_KEY", "JWKS_URL", "DEVELOPMENT")


def environment_without_keys(service_prefix: str) -> dict[str, str]:
    env = dict(os.environ)
    for name in KEY_NAMES:
        env.pop(f"MNEMO_{name}", None)
        env.pop(f"{service_prefix}{name}", None)
    # A port nobody listens on: if the service did start, the test would see it keep running.
    env[f"{service_prefix}PORT"] = "1"
    return env


@pytest.mark.parametrize(
    ("module", "prefix"),
    [("mnemo_navigator", "MNEMO_NAVIGATOR_"), ("mnemo_audit", "MNEMO_AUDIT_")],
)
def test_a_service_without_a_token_key_outside_development_mode_refuses_with_one_line(
    module: str, prefix: str
) -> None:
    env = environment_without_keys(prefix)
    env[f"{prefix}TOKEN_SECRET"] = ""  # empty counts as missing, never as a key
    done = subprocess.run(
        [sys.executable, "-m", module], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "refusing to start" in lines[0]
    assert f"no token key: set {prefix}TOKEN_SECRET" in lines[0]
    assert "MNEMO_DEVELOPMENT=1" in lines[0]


def test_a_service_given_a_secret_and_a_jwks_url_refuses_rather_than_picking_one() -> None:
    env = environment_without_keys("MNEMO_AUDIT_")
    env["MNEMO_TOKEN_SECRET"] = "a-shared-secret"
    env["MNEMO_AUDIT_JWKS_URL"] = "https://issuer.example/jwks"
    done = subprocess.run(
        [sys.executable, "-m", "mnemo_audit"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2, done.stderr
    assert "set one token key" in done.stderr
    assert "a-shared-secret" not in done.stderr
