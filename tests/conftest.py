"""Test tiers: a test's folder gives its marker (unit, integration, e2e)."""

from __future__ import annotations

from pathlib import Path

import pytest

_TIERS = ("unit", "integration", "e2e")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    root = Path(__file__).parent
    for item in items:
        relative = Path(str(item.fspath)).relative_to(root)
        tier = relative.parts[0]
        if tier in _TIERS:
            item.add_marker(getattr(pytest.mark, tier))
