"""`make run`'s demo plays from start to end against the running stack."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_the_demo_plays_every_step_and_shows_the_reference_epr() -> None:
    result = subprocess.run(
        ["bash", "deploy/local/demo.sh"], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for step in ("mnemo dev status", "mnemo check", "mnemo apply", "mnemo tenant list"):
        assert f"$ {step}" in out
    assert "Memory" in out  # the demo corpus is registered
    assert '"tenant_id" = $1::uuid' in out  # the where: value is a bind parameter
    assert "0.2341524312" in out  # EPR of sess_a, MDN.md example B
    assert "concepts/tenants-and-scopes.md" in out  # the manual answers the scoping question
