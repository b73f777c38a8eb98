"""The tenant-name rule, stated once in mnemo_store.registry: what it accepts, what it refuses, how a
refused or legacy name is shown, and that the database migration enforces the same pattern."""

from __future__ import annotations

import importlib.util
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from mnemo_cli.main import main
from mnemo_store import InvalidTenantNameError
from mnemo_store.registry import (
    TENANT_NAME_PATTERN,
    Tenant,
    check_tenant_name,
    is_tenant_name,
    shown_name,
)

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("name", ["acme", "acme-corp", "a", "0", "team_7", "a" * 63, "9-x_y"])
def test_lower_case_letters_digits_dashes_and_underscores_make_a_tenant_name(name: str) -> None:
    assert check_tenant_name(name) == name


@pytest.mark.parametrize(
    "name",
    [
        "",
        "Acme",
        "ACME",
        "acme corp",
        " acme",
        "acme\n",
        "-acme",
        "_acme",
        "a" * 64,
        "acme\n4b1c0b8e-35d5-4a5f-9c69-0d3f7fd0a5b8  2026-01-01 00:00:00  admin",
        "\x1b[31macme\x1b[0m",
        "аcme",  # Cyrillic а: a homoglyph of "acme"
        "acme\x00",
        "ａｃｍｅ",
        "acme.corp",
    ],
)
def test_anything_else_is_refused_with_the_rule_in_the_message(name: str) -> None:
    with pytest.raises(InvalidTenantNameError, match="lower-case letters a-z") as refused:
        check_tenant_name(name)
    message = str(refused.value)
    assert "\n" not in message
    assert "\x1b" not in message
    assert "\x00" not in message


def test_a_refused_name_is_shown_escaped_and_cut_so_it_cannot_forge_output() -> None:
    assert shown_name("acme") == "'acme'"
    assert shown_name("a\nb") == "'a\\nb'"
    assert shown_name("\x1b[2J") == "'\\x1b[2J'"
    assert shown_name("аcme") == "'\\u0430cme'"
    long = shown_name("X" * 1000)
    assert long.endswith("...")
    assert len(long) < 100


def test_the_migration_enforces_the_pattern_the_registry_states() -> None:
    path = ROOT / "migrations" / "versions" / "0005_tenant_names.py"
    spec = importlib.util.spec_from_file_location("tenant_names_migration", path)
    assert spec is not None
    assert spec.loader is not None
    migration = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(migration)
    assert migration.TENANT_NAME_PATTERN == TENANT_NAME_PATTERN
    assert f"'^{TENANT_NAME_PATTERN}$'" in migration.UPGRADE


def test_tenant_create_refuses_a_bad_name_before_connecting(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MNEMO_OWNER_DATABASE_URL", raising=False)
    for name in ("Acme", "acme\nforged", "\x1b[31mred", ""):
        assert main(["tenant", "create", name]) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        assert captured.err.count("\n") == 1
        assert "is not allowed: a tenant name has 1 to 63 characters" in captured.err
        assert "\x1b" not in captured.err


def test_tenant_list_shows_a_name_that_predates_the_rule_escaped(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    created = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    tenants = [
        Tenant(uuid.UUID(int=1), "acme", created),
        Tenant(uuid.UUID(int=2), "evil\n00000000-0000-0000-0000-000000000009  x  admin", created),
    ]

    def listing(work: Any) -> list[Tenant]:
        return tenants

    monkeypatch.setattr("mnemo_cli.commands.tenant.with_owner", listing)
    assert main(["tenant", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3
    assert lines[1].endswith("  acme")
    assert lines[2].endswith("'evil\\n00000000-0000-0000-0000-000000000009  x  admin'")
    assert is_tenant_name("acme")
    assert not is_tenant_name(tenants[1].name)
