"""The operator commands (`mnemo apply`, `mnemo tenant`, `mnemo corpus`) as an operator runs them.

Through `mnemo_cli.main.main([...])` with the output captured, and once through the installed
`mnemo` executable in a subprocess. Every store, corpus, route and tenant is named with a fresh
suffix and removed afterwards, so the tests repeat against one shared database in any order.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from mnemo_cli.main import main
from mnemo_cli.owner_connection import OWNER_URL_VARIABLE
from mnemo_store.identifiers import store_table

DECLARATIONS = """
axonstore Notes_{s} {{ backend: postgresql  schema {{ id: Text primary_key  title: Text  {extra} }} }}
axonstore Links_{s} {{ backend: postgresql  schema {{ a: Text  b: Text  kind: Text  w: Double }} }}
corpus Read_{s} from axonstore {{
    documents: Notes_{s}(id, title)
    relations: Links_{s}(a, b, kind, w)
}}
"""


@dataclass(frozen=True, slots=True)
class Outcome:
    code: int
    out: str
    err: str


@dataclass
class Names:
    """One test's uniquely named things, and what to remove when it ends."""

    suffix: str
    folder: Path
    dsn: str
    tenants: list[str] = field(default_factory=list)
    routes: list[str] = field(default_factory=list)

    @property
    def corpus(self) -> str:
        return f"Read_{self.suffix}"

    @property
    def stores(self) -> tuple[str, str]:
        return f"Notes_{self.suffix}", f"Links_{self.suffix}"

    def axon(self, extra: str = "", name: str = "notes.axon") -> str:
        path = self.folder / name
        path.write_text(DECLARATIONS.format(s=self.suffix, extra=extra), encoding="utf-8")
        return str(path)

    def route(self, mode: str, scope: list[str], *, active: bool = True) -> str:
        """A route written with raw SQL (version '1', the column's default); its key, as messages
        name it."""
        route_id = f"route_{mode}_{uuid.uuid4().hex[:10]}"
        self.routes.append(route_id)
        sql(
            self.dsn,
            "INSERT INTO mnemo.routes (route_id, mode, scope, active) VALUES ($1, $2, $3::jsonb, $4)",
            route_id,
            mode,
            json.dumps(scope),
            active,
        )
        return f"{route_id}@1"


def sql(dsn: str, query: str, *args: Any) -> list[asyncpg.Record]:
    """One statement on its own owner connection (the tests themselves are synchronous, like the
    CLI, which runs its own event loop)."""

    async def work() -> list[asyncpg.Record]:
        connection = await asyncpg.connect(dsn)
        try:
            return list(await connection.fetch(query, *args))
        finally:
            await connection.close()

    return asyncio.run(work())


def status_of(names: Names) -> str | None:
    rows = sql(names.dsn, "SELECT status FROM mnemo.corpora WHERE corpus_id = $1", names.corpus)
    return rows[0]["status"] if rows else None


def table_exists(names: Names, store: str) -> bool:
    rows = sql(names.dsn, "SELECT to_regclass($1) IS NOT NULL AS found", store_table(store))
    return bool(rows[0]["found"])


@pytest.fixture
def mnemo(capsys: pytest.CaptureFixture[str]) -> Any:
    def run(*argv: str) -> Outcome:
        capsys.readouterr()  # drop anything printed before this command
        code = main(list(argv))
        captured = capsys.readouterr()
        return Outcome(code, captured.out, captured.err)

    return run


@pytest.fixture
def names(owner_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Names]:
    monkeypatch.setenv(OWNER_URL_VARIABLE, owner_dsn)
    made = Names(uuid.uuid4().hex[:10], tmp_path, owner_dsn)
    yield made
    if made.routes:
        sql(owner_dsn, "DELETE FROM mnemo.routes WHERE route_id = ANY($1::text[])", made.routes)
    for store in made.stores:
        sql(owner_dsn, f"DROP TABLE IF EXISTS {store_table(store)}")
    sql(owner_dsn, "DELETE FROM mnemo.corpora WHERE corpus_id = $1", made.corpus)
    if made.tenants:
        sql(owner_dsn, "DELETE FROM mnemo.tenants WHERE name = ANY($1::text[])", made.tenants)


# ------------------------------------------------------------------------------------- apply


def test_apply_creates_the_stores_registers_a_draft_and_a_second_apply_has_nothing_to_do(
    mnemo: Any, names: Names
) -> None:
    path = names.axon()
    first = mnemo("apply", path)
    assert first.code == 0, first.err
    assert f"apply: create store {names.stores[0]}" in first.out
    assert f"apply: register corpus {names.corpus}" in first.out
    assert all(table_exists(names, store) for store in names.stores)
    assert status_of(names) == "draft"

    second = mnemo("apply", path)
    assert second.code == 0, second.err
    assert second.out.strip() == (
        "apply: nothing to do, the database already matches the declarations"
    )


def test_apply_adds_a_new_column_and_keeps_a_published_status(mnemo: Any, names: Names) -> None:
    assert mnemo("apply", names.axon()).code == 0
    assert mnemo("corpus", "publish", names.corpus).code == 0
    extended = mnemo("apply", names.axon("created: Timestamptz default(now())"))
    assert extended.code == 0, extended.err
    assert f"apply: add column created to {names.stores[0]}" in extended.out
    assert "status stays published" in extended.out
    assert status_of(names) == "published"


def test_a_dry_run_prints_the_sql_plan_and_changes_nothing(mnemo: Any, names: Names) -> None:
    dry = mnemo("apply", "--dry-run", names.axon())
    assert dry.code == 0, dry.err
    assert f"CREATE TABLE {store_table(names.stores[0])} (" in dry.out
    assert "INSERT INTO mnemo.corpora" in dry.out
    assert not any(table_exists(names, store) for store in names.stores)
    assert status_of(names) is None

    assert mnemo("apply", names.axon()).code == 0
    again = mnemo("apply", "--dry-run", names.axon("extra: Text"))
    assert again.code == 0, again.err
    assert 'ADD COLUMN "extra" text' in again.out
    columns = sql(
        names.dsn,
        "SELECT column_name FROM information_schema.columns WHERE table_schema = 'axon_stores'"
        " AND table_name = $1",
        names.stores[0],
    )
    assert "extra" not in {row["column_name"] for row in columns}


def test_dropping_a_column_is_refused_naming_the_change_with_a_non_zero_exit(
    mnemo: Any, names: Names
) -> None:
    assert mnemo("apply", names.axon("note: Text")).code == 0
    refused = mnemo("apply", names.axon())
    assert refused.code != 0
    assert refused.out == ""
    assert "refusing a destructive change" in refused.err
    assert f'ALTER TABLE {store_table(names.stores[0])} DROP COLUMN "note";' in refused.err
    assert "Traceback" not in refused.err
    columns = sql(
        names.dsn,
        "SELECT column_name FROM information_schema.columns WHERE table_schema = 'axon_stores'"
        " AND table_name = $1",
        names.stores[0],
    )
    assert "note" in {row["column_name"] for row in columns}


def test_retyping_a_column_is_refused_naming_the_change_even_in_a_dry_run(
    mnemo: Any, names: Names
) -> None:
    assert mnemo("apply", names.axon("note: Text")).code == 0
    for argv in (("apply",), ("apply", "--dry-run")):
        refused = mnemo(*argv, names.axon("note: Date"))
        assert refused.code != 0
        assert 'ALTER COLUMN "note" TYPE date;  -- was text' in refused.err


def test_apply_of_an_invalid_file_reports_the_diagnostics_and_applies_nothing(
    mnemo: Any, names: Names
) -> None:
    path = names.folder / "broken.axon"
    path.write_text(f"axonstore Broken_{names.suffix} {{ schema {{ id: Nope }} }}\n")
    broken = mnemo("apply", str(path))
    assert broken.code != 0
    assert "nothing applied" in broken.err
    missing = mnemo("apply", str(names.folder / "absent.axon"))
    assert missing.code != 0
    assert len(missing.err.strip().splitlines()) == 1
    assert "cannot read" in missing.err


# ------------------------------------------------------------------------------------ tenants


def test_tenant_create_prints_a_new_uuid_that_tenant_list_shows(mnemo: Any, names: Names) -> None:
    name = f"operator-test-{names.suffix}"
    names.tenants.append(name)
    created = mnemo("tenant", "create", name)
    assert created.code == 0, created.err
    tenant_id = uuid.UUID(created.out.strip())
    listing = mnemo("tenant", "list")
    assert listing.code == 0, listing.err
    assert listing.out.splitlines()[0].startswith("TENANT ID")
    line = next(line for line in listing.out.splitlines() if line.endswith(f"  {name}"))
    assert line.startswith(str(tenant_id))


def test_a_second_tenant_with_the_same_name_is_a_one_line_error(mnemo: Any, names: Names) -> None:
    name = f"operator-test-{names.suffix}"
    names.tenants.append(name)
    assert mnemo("tenant", "create", name).code == 0
    again = mnemo("tenant", "create", name)
    assert again.code != 0
    assert again.out == ""
    assert len(again.err.strip().splitlines()) == 1
    assert "already exists" in again.err


def test_tenant_list_json_is_an_array_holding_the_new_tenant(mnemo: Any, names: Names) -> None:
    name = f"operator-test-{names.suffix}"
    names.tenants.append(name)
    tenant_id = mnemo("tenant", "create", name).out.strip()
    listing = mnemo("tenant", "list", "--json")
    assert listing.code == 0, listing.err
    rows = json.loads(listing.out)
    mine = [row for row in rows if row["name"] == name]
    assert mine == [{"tenant_id": tenant_id, "name": name, "created_at": mine[0]["created_at"]}]
    assert mine[0]["created_at"].endswith("+00:00")


def test_a_name_that_breaks_the_rule_is_a_usage_error_and_creates_nothing(
    mnemo: Any, names: Names
) -> None:
    name = f"Operator-Test-{names.suffix}"
    refused = mnemo("tenant", "create", name)
    assert refused.code == 2
    assert refused.out == ""
    assert refused.err.count("\n") == 1
    assert "lower-case letters a-z" in refused.err
    assert sql(names.dsn, "SELECT 1 FROM mnemo.tenants WHERE lower(name) = lower($1)", name) == []


# ------------------------------------------------------------------------------------ corpora


def test_corpus_list_json_holds_the_registered_corpus_as_a_draft(mnemo: Any, names: Names) -> None:
    assert mnemo("apply", names.axon()).code == 0
    listing = mnemo("corpus", "list", "--json")
    assert listing.code == 0, listing.err
    rows = {row["corpus_id"]: row for row in json.loads(listing.out)}
    mine = rows[names.corpus]
    assert mine["status"] == "draft"
    assert mine["kind"] == "store_graph"
    assert isinstance(mine["definition"], dict)
    assert "T" in mine["updated_at"]


def test_publish_and_deprecate_change_the_status_that_corpus_list_shows(
    mnemo: Any, names: Names
) -> None:
    assert mnemo("apply", names.axon()).code == 0

    def listed_status() -> str:
        listing = mnemo("corpus", "list")
        assert listing.code == 0, listing.err
        counts = listing.out.splitlines()[0]
        assert counts.startswith("draft: ")
        assert " published: " in counts
        assert " deprecated: " in counts
        row = next(line for line in listing.out.splitlines() if line.startswith(names.corpus + " "))
        return str(row.split()[1])

    assert listed_status() == "draft"
    published = mnemo("corpus", "publish", names.corpus)
    assert published.code == 0, published.err
    assert published.out.strip() == f"corpus {names.corpus}: draft → published"
    assert listed_status() == "published"
    again = mnemo("corpus", "publish", names.corpus)
    assert again.code == 0
    assert "already published" in again.out
    deprecated = mnemo("corpus", "deprecate", names.corpus)
    assert deprecated.code == 0, deprecated.err
    assert deprecated.out.strip() == f"corpus {names.corpus}: published → deprecated"
    assert listed_status() == "deprecated"
    assert status_of(names) == "deprecated"


def test_an_unknown_corpus_id_is_a_one_line_error_and_a_non_zero_exit(
    mnemo: Any, names: Names
) -> None:
    for action in ("publish", "deprecate"):
        outcome = mnemo("corpus", action, f"Nowhere_{names.suffix}")
        assert outcome.code != 0
        assert outcome.out == ""
        assert outcome.err.count("\n") == 1
        assert outcome.err.startswith(f"mnemo: error: no corpus 'Nowhere_{names.suffix}'")


@pytest.mark.parametrize(
    "argv",
    [("tenant", "list"), ("corpus", "list"), ("corpus", "publish", "x"), ("apply", "FILE")],
)
def test_a_missing_owner_database_url_is_a_one_line_error(
    mnemo: Any, names: Names, monkeypatch: pytest.MonkeyPatch, argv: tuple[str, ...]
) -> None:
    monkeypatch.delenv(OWNER_URL_VARIABLE)
    if argv[-1] == "FILE":
        argv = (*argv[:-1], names.axon())
    outcome = mnemo(*argv)
    assert outcome.code != 0
    assert outcome.out == ""
    assert outcome.err.count("\n") == 1
    assert f"mnemo: error: {OWNER_URL_VARIABLE} is not set" in outcome.err


def test_an_unreachable_database_is_a_one_line_error(
    mnemo: Any, names: Names, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(OWNER_URL_VARIABLE, "postgresql://nobody:nothing@127.0.0.1:1/none")
    outcome = mnemo("tenant", "list")
    assert outcome.code != 0
    assert outcome.err.count("\n") == 1
    assert "cannot connect to the database" in outcome.err


def test_a_malformed_database_url_is_a_one_line_error(
    mnemo: Any, names: Names, monkeypatch: pytest.MonkeyPatch
) -> None:
    for url in ("not a url", "postgresql://owner:secret@127.0.0.1:port/mnemo"):
        monkeypatch.setenv(OWNER_URL_VARIABLE, url)
        outcome = mnemo("corpus", "list")
        assert outcome.code == 2
        assert outcome.err.count("\n") == 1
        assert "is not a usable PostgreSQL URL" in outcome.err
        assert "secret" not in outcome.err


def test_the_application_role_in_place_of_the_owner_is_a_one_line_error(
    mnemo: Any, names: Names, app_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(OWNER_URL_VARIABLE, app_dsn)
    outcome = mnemo("tenant", "create", f"operator-test-{names.suffix}")
    assert outcome.code != 0
    assert outcome.out == ""
    assert outcome.err.count("\n") == 1
    assert "operator commands run as the owner role" in outcome.err


# -------------------------------------------------------------------------------- route lint


def test_deprecating_a_corpus_an_active_route_scopes_is_refused_naming_the_route_unless_forced(
    mnemo: Any, names: Names
) -> None:
    assert mnemo("apply", names.axon()).code == 0
    assert mnemo("corpus", "publish", names.corpus).code == 0
    prefetch = names.route("deterministic_prefetch", [names.corpus])
    tool = names.route("tool", ["elsewhere", names.corpus])
    names.route("tool", [names.corpus], active=False)

    refused = mnemo("corpus", "deprecate", names.corpus)
    assert refused.code != 0
    assert refused.out == ""
    assert refused.err.count("\n") == 1
    assert f"active routes {min(prefetch, tool)}, {max(prefetch, tool)};" in refused.err
    assert "--force" in refused.err
    assert status_of(names) == "published"

    forced = mnemo("corpus", "deprecate", "--force", names.corpus)
    assert forced.code == 0, forced.err
    assert status_of(names) == "deprecated"
    assert f"route lint: {prefetch}: corpus not published {names.corpus}" in forced.err
    assert f"route lint: {tool}: corpus not published {names.corpus}" in forced.err


def test_apply_warns_about_active_routes_scoping_unknown_or_unpublished_corpora(
    mnemo: Any, names: Names
) -> None:
    ghost = f"Ghost_{names.suffix}"
    route = names.route("tool", [names.corpus, ghost])
    applied = mnemo("apply", names.axon())
    assert applied.code == 0, applied.err
    assert f"apply: warning: route lint: {route}: corpus not published {names.corpus}" in (
        applied.err
    )
    assert f"apply: warning: route lint: {route}: unknown corpus {ghost}" in applied.err
    assert mnemo("corpus", "publish", names.corpus).code == 0
    again = mnemo("apply", names.axon())
    assert f"{route}: corpus not published" not in again.err
    assert f"{route}: unknown corpus {ghost}" in again.err


# ------------------------------------------------------------------------------- subprocess


def test_the_installed_mnemo_command_applies_creates_a_tenant_and_publishes_in_a_subprocess(
    names: Names,
) -> None:
    executable = Path(sys.executable).with_name("mnemo")
    assert executable.exists(), f"the workspace should install the mnemo script at {executable}"
    environment = {**os.environ, OWNER_URL_VARIABLE: names.dsn}
    tenant = f"operator-test-{names.suffix}"
    names.tenants.append(tenant)

    def mnemo(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(executable), *argv],
            env=environment,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    path = names.axon()
    applied = mnemo("apply", path)
    assert applied.returncode == 0, applied.stderr
    assert f"register corpus {names.corpus}" in applied.stdout
    assert "nothing to do" in mnemo("apply", path).stdout
    created = mnemo("tenant", "create", tenant)
    assert created.returncode == 0, created.stderr
    uuid.UUID(created.stdout.strip())
    assert mnemo("corpus", "publish", names.corpus).returncode == 0
    assert status_of(names) == "published"
    unknown = mnemo("corpus", "deprecate", f"Nowhere_{names.suffix}")
    assert unknown.returncode != 0
    assert unknown.stderr.count("\n") == 1
    missing = subprocess.run(
        [str(executable), "corpus", "list"],
        env={k: v for k, v in environment.items() if k != OWNER_URL_VARIABLE},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert missing.returncode != 0
    assert missing.stderr.count("\n") == 1
    assert OWNER_URL_VARIABLE in missing.stderr


def test_apply_documents_dir_registers_a_corpus_whose_members_are_files_of_the_folder(
    mnemo: Any, names: Names
) -> None:
    folder = names.folder / "docs"
    folder.mkdir()
    (folder / "PrivacyPolicy.md").write_text("# Privacy\n", encoding="utf-8")
    (folder / "refunds.md").write_text("---\naliases: [RefundPolicy]\n---\n# R\n", encoding="utf-8")
    path = names.folder / "policies.axon"
    path.write_text(f"corpus {names.corpus} {{ documents: [PrivacyPolicy, RefundPolicy] }}\n")

    assert mnemo("apply", str(path)).code == 1
    applied = mnemo("apply", str(path), "--documents", str(folder))
    assert (applied.code, applied.err) == (0, "")
    assert f"apply: register corpus {names.corpus}" in applied.out
    (row,) = sql(
        names.dsn, "SELECT definition::text FROM mnemo.corpora WHERE corpus_id = $1", names.corpus
    )
    assert '"path": "refunds.md"' in row["definition"]
