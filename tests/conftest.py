"""Test tiers (a test's folder gives its marker: unit, integration, e2e, chaos, compose), the hypothesis
profile, and development mode (services built or started by tests may verify tokens with the public
development key; a test of the fail-closed start removes it)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Shared 2-core machines make wall-clock deadlines flaky: properties are judged on their results,
# never on how long one example took. The example database stays out of the checkout's tree.
settings.register_profile(
    "mnemo",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    database=None,
)
settings.load_profile("mnemo")
os.environ.setdefault("MNEMO_DEVELOPMENT", "1")

_TIERS = ("unit", "integration", "e2e", "chaos", "compose")

# tests/compose needs the Compose stack's ports, which only `make compose-test` sets: elsewhere the
# folder is not collected at all (its module-level skip counted as a skipped test in every tier).
if not os.environ.get("MNEMO_COMPOSE_NAVIGATOR_PORT"):
    collect_ignore = ["compose"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    root = Path(__file__).parent
    for item in items:
        relative = Path(str(item.fspath)).relative_to(root)
        tier = relative.parts[0]
        if tier in _TIERS:
            item.add_marker(getattr(pytest.mark, tier))
