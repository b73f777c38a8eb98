"""`mnemo apply`: make the database hold what the declarations say, additively, as the owner role.

One transaction under an advisory lock (two applies never interleave): read the catalogue and the
registry, plan (`ddl.plan_stores`), refuse the whole apply when a destructive change would be
needed, run the plan, and register every declared corpus. A new corpus is registered `draft`; an
existing one gets its new definition and version but keeps its status. A dry run plans and rolls
back. Applying the same declarations twice changes nothing the second time.

Every lock the apply takes waits at most `lock_timeout` seconds (Postgres's `lock_timeout`, default
5): an ALTER TABLE waiting behind a long transaction would otherwise hold every later reader of that
store in the queue behind it. On a timeout nothing is applied, and the LockTimeoutError names the
sessions holding locks on the stores, the registry or the apply lock (pid, role, application,
state, since when, last statement as far as the owner role may see it).

Route lint runs over the registry as the apply leaves it (for a dry run: as it would leave it) and
is reported, not enforced: routes are not declared in .axon files, and a route naming a corpus that
this apply registers as draft only passes once an operator publishes it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import asyncpg
from mnemo_axon.ir import Deployment

from mnemo_store.catalog import read_catalog
from mnemo_store.ddl import PlanStep, StorePlan, corpora_by_store, plan_stores
from mnemo_store.errors import DestructiveChangeError, LockTimeoutError
from mnemo_store.identifiers import store_table
from mnemo_store.registry import lint_routes, list_corpora, list_routes

_LOCK: Final = "SELECT pg_advisory_xact_lock(hashtext('mnemo.apply'))"
DEFAULT_LOCK_TIMEOUT: Final = 5.0
# Sessions other than this one holding a lock on one of the relations $1 or the apply lock.
_HOLDERS: Final = """
SELECT DISTINCT a.pid, a.usename, a.application_name, a.state, a.xact_start,
       left(regexp_replace(a.query, '\\s+', ' ', 'g'), 120) AS query, l.mode,
       CASE WHEN l.locktype = 'advisory' THEN 'the apply lock' ELSE l.relation::regclass::text END
         AS what
FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.granted AND l.pid <> pg_backend_pid()
  AND (l.relation IN (SELECT to_regclass(name) FROM unnest($1::text[]) AS name)
       OR (l.locktype = 'advisory' AND l.objsubid = 1
           AND ((l.classid::bigint << 32) | l.objid::bigint) = hashtext('mnemo.apply')::bigint))
ORDER BY a.pid
"""
_REGISTER = """
INSERT INTO mnemo.corpora (corpus_id, display_name, url, kind, definition, version)
VALUES ($1, $2, $3, $4, $5::jsonb, $6)
ON CONFLICT (corpus_id) DO UPDATE
SET kind = EXCLUDED.kind, definition = EXCLUDED.definition, version = EXCLUDED.version
WHERE mnemo.corpora.version IS DISTINCT FROM EXCLUDED.version
"""


@dataclass(frozen=True, slots=True)
class Registration:
    """What apply does to one corpus's registry row."""

    corpus_id: str
    action: str  # "register" (new, draft), "update" (new version, status kept), "unchanged"
    version: str
    status: str

    def describe(self) -> str:
        if self.action == "register":
            return f"register corpus {self.corpus_id} (version {self.version}) as draft"
        if self.action == "update":
            return (
                f"update corpus {self.corpus_id} to version {self.version} (status stays "
                f"{self.status})"
            )
        return f"corpus {self.corpus_id} unchanged (version {self.version}, {self.status})"


@dataclass(frozen=True, slots=True)
class ApplyReport:
    plan: StorePlan
    registrations: tuple[Registration, ...]
    applied: bool
    lint: tuple[str, ...] = ()  # route lint findings over the registry after this apply

    @property
    def changes(self) -> tuple[str, ...]:
        """One line per change made (or that would be made, for a dry run)."""
        lines = [step.description for step in self.plan.steps]
        lines += [item.describe() for item in self.registrations if item.action != "unchanged"]
        return tuple(lines)

    def sql(self) -> str:
        """The plan as SQL text (what `--dry-run` prints)."""
        return "\n\n".join(f"-- {step.description}\n{step.sql};" for step in _all_steps(self))


def _all_steps(report: ApplyReport) -> list[PlanStep]:
    steps = list(report.plan.steps)
    for item in report.registrations:
        if item.action != "unchanged":
            steps.append(PlanStep(item.describe(), _REGISTER.strip()))
    return steps


def gateway_url(base_url: str, corpus_id: str) -> str:
    """The search-gateway endpoint of a hosted corpus (CORPUS.md part A)."""
    return f"{base_url.rstrip('/')}/v1/corpora/{corpus_id}/search"


async def apply_deployment(
    connection: asyncpg.Connection,
    deployment: Deployment,
    *,
    gateway_base_url: str,
    dry_run: bool = False,
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
) -> ApplyReport:
    """Plan and (unless `dry_run`) apply `deployment` over an owner connection.

    Raises DestructiveChangeError, listing the statements it would take, before changing anything;
    LockTimeoutError, naming who holds the locks, when one was not granted within `lock_timeout`.
    """
    try:
        return await _apply(connection, deployment, gateway_base_url, dry_run, lock_timeout)
    except asyncpg.LockNotAvailableError:
        relations = [store_table(store.name) for store in deployment.stores] + ["mnemo.corpora"]
        holders = await connection.fetch(_HOLDERS, relations)
        raise LockTimeoutError(lock_timeout, [_describe_holder(row) for row in holders]) from None


def _describe_holder(row: Mapping[str, Any]) -> str:
    parts = [f"pid {row['pid']}", f"role {row['usename']}"]
    if row["application_name"]:
        parts.append(f"application {row['application_name']!r}")
    if row["state"]:
        since = row["xact_start"]
        parts.append(row["state"] + (f" since {since:%Y-%m-%d %H:%M:%S%z}" if since else ""))
    parts.append(f"{row['mode']} on {row['what']}")
    if row["query"]:
        parts.append(f"last statement: {row['query']}")
    return ", ".join(parts)


async def _apply(
    connection: asyncpg.Connection,
    deployment: Deployment,
    gateway_base_url: str,
    dry_run: bool,
    lock_timeout: float,
) -> ApplyReport:
    transaction = connection.transaction()
    await transaction.start()
    committed = False
    try:
        milliseconds = max(1, round(lock_timeout * 1000))
        await connection.execute(f"SET LOCAL lock_timeout = {milliseconds}")
        await connection.execute(_LOCK)
        registered = {row.corpus_id: row for row in await list_corpora(connection)}
        declared = {corpus.name for corpus in deployment.corpora}
        others = {
            corpus_id: row.definition
            for corpus_id, row in registered.items()
            if corpus_id not in declared and row.kind == "store_graph"
        }
        readers = corpora_by_store(deployment, _registered_readers(others))
        plan = plan_stores(deployment, await read_catalog(connection), readers)
        if plan.refused:
            raise DestructiveChangeError(plan.refused)
        registrations = []
        for corpus in deployment.corpora:
            version = deployment.fingerprint(corpus.name)
            row = registered.get(corpus.name)
            if row is None:
                registrations.append(Registration(corpus.name, "register", version, "draft"))
            elif row.version != version:
                registrations.append(Registration(corpus.name, "update", version, row.status))
            else:
                registrations.append(Registration(corpus.name, "unchanged", version, row.status))
        statuses = {corpus_id: row.status for corpus_id, row in registered.items()}
        statuses |= {item.corpus_id: item.status for item in registrations}
        lint = lint_routes(await list_routes(connection), statuses)
        report = ApplyReport(plan, tuple(registrations), applied=not dry_run, lint=tuple(lint))
        if dry_run:
            return report
        for step in plan.steps:
            await connection.execute(step.sql)
        for corpus in deployment.corpora:
            await connection.execute(
                _REGISTER,
                corpus.name,
                corpus.name,
                gateway_url(gateway_base_url, corpus.name),
                corpus.kind.value,
                json.dumps(deployment.corpus_definition(corpus.name), sort_keys=True),
                deployment.fingerprint(corpus.name),
            )
        await transaction.commit()
        committed = True
        return report
    finally:
        if not committed:
            await transaction.rollback()


def _registered_readers(definitions: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """Store → registered store corpora (not redeclared now) that read it."""
    readers: dict[str, set[str]] = {}
    for corpus_id, definition in definitions.items():
        corpus = definition.get("corpus", {}) if isinstance(definition, dict) else {}
        for key in ("documents_store", "relations_store"):
            mapping = corpus.get(key)
            if isinstance(mapping, dict) and isinstance(mapping.get("store"), str):
                readers.setdefault(mapping["store"], set()).add(corpus_id)
    return {store: tuple(sorted(ids)) for store, ids in readers.items()}
