"""Routes as data (issue 25): `mnemo route apply FILE` lints before it writes and blocks, versions
of one route coexist with at most one active, and the registry's reverse lookup names every route
version that scopes a corpus.

Corpora are registry rows written here with raw SQL (an external gateway's row needs no store);
every id carries a fresh suffix and is removed afterwards.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from mnemo_cli.main import main
from mnemo_cli.owner_connection import OWNER_URL_VARIABLE
from mnemo_store.registry import routes_naming


@dataclass(frozen=True, slots=True)
class Outcome:
    code: int
    out: str
    err: str


def sql(dsn: str, query: str, *args: Any) -> list[asyncpg.Record]:
    async def work() -> list[asyncpg.Record]:
        connection = await asyncpg.connect(dsn)
        try:
            return list(await connection.fetch(query, *args))
        finally:
            await connection.close()

    return asyncio.run(work())


@dataclass
class Registry:
    dsn: str
    folder: Path
    suffix: str = field(default_factory=lambda: uuid.uuid4().hex[:10])
    corpora: list[str] = field(default_factory=list)

    def name(self, stem: str) -> str:
        return f"{stem}-{self.suffix}"

    def corpus(self, stem: str, status: str = "published") -> str:
        corpus_id = self.name(stem)
        sql(
            self.dsn,
            "INSERT INTO mnemo.corpora (corpus_id, display_name, url, status, kind, definition,"
            " version) VALUES ($1, $1, 'http://127.0.0.1:9/search', $2, 'external', '{}', 'v1')",
            corpus_id,
            status,
        )
        self.corpora.append(corpus_id)
        return corpus_id

    def file(self, text: str, name: str = "routes.yaml") -> str:
        path = self.folder / name
        path.write_text(text, encoding="utf-8")
        return str(path)

    def rows(self, route_id: str) -> list[tuple[str, bool, str, list[str]]]:
        return [
            (row["route_version"], row["active"], row["mode"], json.loads(row["scope"]))
            for row in sql(
                self.dsn,
                "SELECT route_version, active, mode, scope::text AS scope FROM mnemo.routes"
                " WHERE route_id = $1 ORDER BY route_version",
                route_id,
            )
        ]


@pytest.fixture
def mnemo(capsys: pytest.CaptureFixture[str]) -> Any:
    def run(*argv: str) -> Outcome:
        capsys.readouterr()
        code = main(list(argv))
        captured = capsys.readouterr()
        return Outcome(code, captured.out, captured.err)

    return run


@pytest.fixture
def registry(owner_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Registry]:
    monkeypatch.setenv(OWNER_URL_VARIABLE, owner_dsn)
    made = Registry(owner_dsn, tmp_path)
    yield made
    sql(owner_dsn, "DELETE FROM mnemo.routes WHERE route_id LIKE $1", f"%-{made.suffix}")
    sql(owner_dsn, "DELETE FROM mnemo.corpora WHERE corpus_id = ANY($1::text[])", made.corpora)


def route_yaml(route_id: str, version: str, scope: list[str], **extra: object) -> str:
    lines = [
        f"- route_id: {route_id}",
        f"  route_version: '{version}'",
        f"  mode: {extra.pop('mode', 'deterministic_prefetch')}",
        f"  scope: {json.dumps(scope)}",
    ]
    lines += [f"  {key}: {json.dumps(value)}" for key, value in extra.items()]
    return "\n".join(lines) + "\n"


def test_a_yaml_route_with_a_dotted_text_version_is_written_and_listed(
    mnemo: Any, registry: Registry
) -> None:
    fees, disclosure = registry.corpus("fee-schedule"), registry.corpus("product-disclosure")
    route = registry.name("overdraft_fee_qa")
    applied = mnemo(
        "route", "apply", registry.file(route_yaml(route, "2026.08.1", [fees, disclosure]))
    )
    assert applied.code == 0, applied.err
    assert f"route {route}@2026.08.1: created" in applied.out
    assert registry.rows(route) == [
        ("2026.08.1", True, "deterministic_prefetch", [fees, disclosure])
    ]
    listed = mnemo("route", "list", "--json")
    mine = [r for r in json.loads(listed.out) if r["route_id"] == route]
    assert [(r["route_version"], r["scope"], r["active"]) for r in mine] == [
        ("2026.08.1", [fees, disclosure], True)
    ]


def test_a_json_route_file_is_read_as_json(mnemo: Any, registry: Registry) -> None:
    fees = registry.corpus("fees")
    route = registry.name("qa")
    document = {
        "routes": [{"route_id": route, "route_version": "1.0", "mode": "tool", "scope": [fees]}]
    }
    applied = mnemo("route", "apply", registry.file(json.dumps(document), "routes.json"))
    assert applied.code == 0, applied.err
    assert registry.rows(route) == [("1.0", True, "tool", [fees])]


def test_versions_of_a_route_coexist_and_applying_an_active_one_makes_the_others_inactive(
    mnemo: Any, registry: Registry
) -> None:
    fees, disclosure = registry.corpus("fees"), registry.corpus("disclosure")
    route = registry.name("qa")
    assert mnemo("route", "apply", registry.file(route_yaml(route, "2026.08.1", [fees]))).code == 0
    second = mnemo(
        "route", "apply", registry.file(route_yaml(route, "2026.09.1", [fees, disclosure]))
    )
    assert second.code == 0, second.err
    assert f"route {route}@2026.08.1: made inactive" in second.out
    assert registry.rows(route) == [
        ("2026.08.1", False, "deterministic_prefetch", [fees]),
        ("2026.09.1", True, "deterministic_prefetch", [fees, disclosure]),
    ]
    again = mnemo("route", "apply", registry.file(route_yaml(route, "2026.09.1", [disclosure])))
    assert f"route {route}@2026.09.1: updated" in again.out
    assert registry.rows(route)[1] == ("2026.09.1", True, "deterministic_prefetch", [disclosure])


@pytest.mark.parametrize(
    ("status", "finding"),
    [
        (None, "unknown corpus"),
        ("draft", "corpus not published"),
        ("deprecated", "corpus not published"),
    ],
)
def test_the_lint_blocks_an_unknown_or_unpublished_corpus_naming_route_version_and_corpus(
    mnemo: Any, registry: Registry, status: str | None, finding: str
) -> None:
    good = registry.corpus("good")
    bad = registry.name("missing") if status is None else registry.corpus("bad", status)
    fine, broken = registry.name("fine"), registry.name("broken")
    text = route_yaml(fine, "1", [good]) + route_yaml(broken, "2026.08.1", [good, bad])
    refused = mnemo("route", "apply", registry.file(text))
    assert refused.code == 1
    assert refused.out == ""
    assert f"{broken}@2026.08.1: {finding} {bad}" in refused.err
    assert "nothing was written" in refused.err
    assert registry.rows(fine) == []
    assert registry.rows(broken) == []


def test_tool_routes_and_inactive_routes_are_linted_when_applied(
    mnemo: Any, registry: Registry
) -> None:
    draft = registry.corpus("drafty", "draft")
    tool, idle = registry.name("tool"), registry.name("idle")
    refused = mnemo("route", "apply", registry.file(route_yaml(tool, "1", [draft], mode="tool")))
    assert f"{tool}@1: corpus not published {draft}" in refused.err
    refused = mnemo("route", "apply", registry.file(route_yaml(idle, "1", [draft], active=False)))
    assert f"{idle}@1: corpus not published {draft}" in refused.err
    assert registry.rows(tool) == []
    assert registry.rows(idle) == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("- route_id: r\n  route_version: 1\n  mode: tool\n  scope: []\n", "quote a number"),
        ("- route_id: r\n  route_version: '1'\n  mode: walk\n  scope: []\n", "mode must be one of"),
        (
            "- route_id: r\n  route_version: '1'\n  mode: tool\n  scope: fees\n",
            "scope must be a list",
        ),
        (
            "- route_id: r\n  route_version: '1'\n  mode: tool\n  scope: []\n  owner: x\n",
            "unknown field owner",
        ),
        (
            "- route_id: r\n  route_version: '1'\n  mode: tool\n  scope: []\n  active: maybe\n",
            "active must be",
        ),
        ("[1, 2", "is not valid YAML"),
        ("[]", "holds no route"),
        (
            "- route_id: 'a:b'\n  route_version: '1'\n  mode: tool\n  scope: []\n",
            "route_id must be",
        ),
    ],
)
def test_a_malformed_route_file_is_refused_saying_what_is_wrong(
    mnemo: Any, registry: Registry, text: str, message: str
) -> None:
    refused = mnemo("route", "apply", registry.file(text))
    assert refused.code == 2
    assert message in refused.err
    assert refused.err.count("\n") == 1


def test_two_active_versions_of_one_route_in_one_file_are_refused(
    mnemo: Any, registry: Registry
) -> None:
    fees = registry.corpus("fees")
    route = registry.name("qa")
    text = route_yaml(route, "1", [fees]) + route_yaml(route, "2", [fees])
    refused = mnemo("route", "apply", registry.file(text))
    assert refused.code == 2
    assert "second active version" in refused.err


def test_deprecating_a_corpus_an_applied_route_scopes_is_refused_naming_route_and_version(
    mnemo: Any, registry: Registry
) -> None:
    fees = registry.corpus("fees")
    route = registry.name("qa")
    assert mnemo("route", "apply", registry.file(route_yaml(route, "2026.08.1", [fees]))).code == 0
    refused = mnemo("corpus", "deprecate", fees)
    assert refused.code == 1
    assert f"{route}@2026.08.1" in refused.err
    assert "--force" in refused.err
    forced = mnemo("corpus", "deprecate", "--force", fees)
    assert forced.code == 0, forced.err
    assert f"{route}@2026.08.1: corpus not published {fees}" in forced.err


def test_uses_names_every_route_version_whose_scope_names_the_corpus(
    mnemo: Any, registry: Registry
) -> None:
    fees, other = registry.corpus("fees"), registry.corpus("other")
    qa, tool, unrelated = registry.name("qa"), registry.name("tool"), registry.name("unrelated")
    text = (
        route_yaml(qa, "1", [fees])
        + route_yaml(tool, "1", [other, fees], mode="tool")
        + route_yaml(unrelated, "1", [other])
    )
    assert mnemo("route", "apply", registry.file(text)).code == 0
    assert mnemo("route", "apply", registry.file(route_yaml(qa, "2", [other]))).code == 0

    async def uses() -> list[str]:
        connection = await asyncpg.connect(registry.dsn)
        try:
            return [route.key for route in await routes_naming(connection, fees)]
        finally:
            await connection.close()

    assert asyncio.run(uses()) == [f"{qa}@1", f"{tool}@1"]


def test_an_external_corpus_is_registered_as_draft_updated_keeping_its_status_and_routable(
    mnemo: Any, registry: Registry
) -> None:
    corpus = registry.name("product-disclosure")
    registry.corpora.append(corpus)
    url = "http://127.0.0.1:9/corpora/product-disclosure/search"
    added = mnemo("corpus", "add-external", corpus, "--url", url, "--owner", "deposits")
    assert added.code == 0, added.err
    assert "registered as draft" in added.out
    route = registry.name("qa")
    refused = mnemo("route", "apply", registry.file(route_yaml(route, "1", [corpus])))
    assert f"{route}@1: corpus not published {corpus}" in refused.err
    assert mnemo("corpus", "publish", corpus).code == 0
    again = mnemo("corpus", "add-external", corpus, "--url", url + "?v=2")
    assert "status kept" in again.out
    rows = sql(
        registry.dsn,
        "SELECT status, kind, url, owner FROM mnemo.corpora WHERE corpus_id = $1",
        corpus,
    )
    assert [tuple(r) for r in rows] == [("published", "external", url + "?v=2", "")]
    assert mnemo("route", "apply", registry.file(route_yaml(route, "1", [corpus]))).code == 0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["bad id", "--url", "http://127.0.0.1:9/s"], "is not allowed"),
        (["ok-id", "--url", "file:///etc/passwd"], "is not a gateway url"),
        (["ok-id", "--url", "http:///nohost"], "is not a gateway url"),
    ],
)
def test_an_external_corpus_with_a_bad_id_or_url_is_refused(
    mnemo: Any, registry: Registry, argv: list[str], message: str
) -> None:
    refused = mnemo("corpus", "add-external", *argv)
    assert refused.code == 1
    assert message in refused.err


def test_the_table_keys_routes_by_id_and_text_version_and_holds_one_active_version(
    registry: Registry,
) -> None:
    """Migration 0015: what rows written before it look like (version '1', from the integer 1),
    and what the database itself refuses."""
    route = registry.name("raw")
    sql(registry.dsn, "INSERT INTO mnemo.routes (route_id, mode) VALUES ($1, 'tool')", route)
    sql(
        registry.dsn,
        "INSERT INTO mnemo.routes (route_id, route_version, mode, active)"
        " VALUES ($1, '2026.08.1', 'tool', false)",
        route,
    )
    assert [(v, a) for v, a, _, _ in registry.rows(route)] == [("1", True), ("2026.08.1", False)]
    with pytest.raises(asyncpg.UniqueViolationError, match="routes_one_active"):
        sql(
            registry.dsn,
            "UPDATE mnemo.routes SET active = true WHERE route_id = $1 AND route_version <> '1'",
            route,
        )
    with pytest.raises(asyncpg.UniqueViolationError):
        sql(registry.dsn, "INSERT INTO mnemo.routes (route_id, mode) VALUES ($1, 'tool')", route)
    with pytest.raises(asyncpg.CheckViolationError):
        sql(
            registry.dsn,
            "INSERT INTO mnemo.routes (route_id, route_version, mode) VALUES ($1, '', 'tool')",
            route,
        )
    columns = sql(
        registry.dsn,
        "SELECT data_type FROM information_schema.columns WHERE table_schema = 'mnemo'"
        " AND table_name = 'routes' AND column_name = 'route_version'",
    )
    assert columns[0]["data_type"] == "text"
