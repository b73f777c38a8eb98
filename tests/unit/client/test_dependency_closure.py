"""The client package stays light: its installed dependency closure (its requirements, without
extras, followed recursively through the installed distributions' metadata) holds no numpy, scipy,
FastAPI, OpenTelemetry SDK, MCP SDK or Mnemo library."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, distribution

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

FORBIDDEN = {"numpy", "scipy", "fastapi", "opentelemetry-sdk", "mcp", "uvicorn", "starlette"}


def closure(name: str) -> set[str]:
    seen: set[str] = set()
    todo = [canonicalize_name(name)]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        try:
            requires = distribution(current).requires or []
        except PackageNotFoundError:
            continue  # a platform-only requirement not installed here
        for line in requires:
            requirement = Requirement(line)
            if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
                continue
            todo.append(canonicalize_name(requirement.name))
    return seen


def test_the_client_closure_has_no_heavy_or_server_side_package() -> None:
    found = closure("mnemo-client")
    assert {"httpx", "pydantic"} <= found
    assert not found & FORBIDDEN, sorted(found & FORBIDDEN)
    assert not {name for name in found if name.startswith("mnemo-")} - {"mnemo-client"}


def test_the_closure_walk_sees_a_forbidden_package_where_there_is_one() -> None:
    # The same walk over the navigator finds what the client must not pull in.
    assert {"fastapi", "numpy"} <= closure("mnemo-navigator")
