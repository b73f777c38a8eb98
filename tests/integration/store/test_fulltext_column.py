"""Full text from the stored tsvector column, under row-level security, as the navigator's role.

The documents store holds `ddl.fulltext_column` (generated from title and body, GIN-indexed after
the tenant). Retrieve reads it: the plan never computes `to_tsvector` per row, tenants never see
each other's rows, and a store created before the column gets it from the next `mnemo apply`.
"""

from __future__ import annotations

import json
import os
import uuid
from typing import Any

import asyncpg
from mnemo_store import Scope, Store
from mnemo_store.applier import apply_deployment
from mnemo_store.ddl import fulltext_column
from mnemo_store.identifiers import object_name, quote, store_table
from mnemo_store.retrieval import retrieve_sql, text_query
from mnemo_store.scope import compile_scope, positional

NAVIGATOR = "postgresql://mnemo_navigator:mnemo_navigator@127.0.0.1:25432/mnemo"


def conditions(plan: Any, key: str) -> list[str]:
    """Every `key` ("Filter", "Index Cond", …) of an EXPLAIN (FORMAT JSON) plan, any depth."""
    found: list[str] = []
    if isinstance(plan, dict):
        if isinstance(plan.get(key), str):
            found.append(plan[key])
        for value in plan.values():
            found += conditions(value, key)
    elif isinstance(plan, list):
        for value in plan:
            found += conditions(value, key)
    return found


async def seed(store: Store, declared: Any, tenant: uuid.UUID, titles: list[str]) -> list[str]:
    ids = [str(uuid.uuid4()) for _ in titles]
    async with store.tenant(tenant) as tx:
        await tx.insert_rows(
            declared.corpus.documents,
            [
                {"id": i, "tenant_id": str(uuid.uuid4()), "title": t, "body": f"body of {t}"}
                for i, t in zip(ids, titles, strict=True)
            ],
        )
    return ids


async def test_retrieve_reads_the_stored_column_and_sees_only_its_tenant(
    declare: Any, new_tenant: Any, store: Store
) -> None:
    declared = await declare()
    one, two = await new_tenant(), await new_tenant()
    mine = await seed(store, declared, one, ["heron marsh", "heron nest", "owl barn"])
    theirs = await seed(store, declared, two, ["heron river", "heron lake"])
    navigator = await Store.connect(
        os.environ.get("MNEMO_NAVIGATOR_DATABASE_URL", NAVIGATOR), min_size=1, max_size=1
    )
    async with navigator:
        async with navigator.tenant(one, read_only=True) as tx:
            found = await tx.retrieve(declared.corpus, "heron", 10)
        async with navigator.tenant(two, read_only=True) as tx:
            other = await tx.retrieve(declared.corpus, "heron marsh", 10)
    assert sorted(d.id for d in found) == sorted(mine[:2])
    assert all(0 < d.similarity < 1 for d in found)
    assert sorted(d.id for d in other) == sorted(theirs)


async def test_the_retrieve_plan_tests_the_stored_vector_never_to_tsvector_per_row(
    declare: Any, new_tenant: Any, store: Store
) -> None:
    declared = await declare()
    tenant = await new_tenant()
    await seed(store, declared, tenant, [f"word{k} common" for k in range(50)])
    column = fulltext_column(declared.corpus.title_column, declared.corpus.body_column)
    whole = compile_scope(Scope(), declared.corpus)
    sql, params = positional(
        retrieve_sql(declared.corpus, whole), whole, query=text_query("word7"), k=5
    )
    reader = await asyncpg.connect(os.environ.get("MNEMO_NAVIGATOR_DATABASE_URL", NAVIGATOR))
    try:
        async with reader.transaction(readonly=True):
            await reader.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
            await reader.execute("SET LOCAL enable_seqscan = off")  # as at 100k rows
            plan = json.loads(await reader.fetchval(f"EXPLAIN (FORMAT JSON) {sql}", *params))
            leakproof = await reader.fetchval(
                "SELECT proleakproof FROM pg_proc"
                " WHERE oid = 'ts_match_vq(tsvector,tsquery)'::regprocedure"
            )
    finally:
        await reader.close()
    tests = conditions(plan, "Filter") + conditions(plan, "Index Cond")
    matches = [text for text in tests if "@@" in text]
    assert matches, json.dumps(plan)
    assert all(column in text and "to_tsvector" not in text for text in matches), matches
    # Leakproof (the superuser's opt-in): the GIN index serves the match; else a per-row filter.
    in_index = any("@@" in text for text in conditions(plan, "Index Cond"))
    assert in_index == bool(leakproof), json.dumps(plan)


async def test_a_store_without_the_column_gets_it_from_the_next_apply(
    declare: Any, new_tenant: Any, store: Store, owner: asyncpg.Connection
) -> None:
    declared = await declare()
    tenant = await new_tenant()
    ids = await seed(store, declared, tenant, ["kestrel cliff", "wren hedge"])
    table = store_table(declared.documents)
    column = fulltext_column(declared.corpus.title_column, declared.corpus.body_column)
    await owner.execute(f"ALTER TABLE {table} DROP COLUMN {quote(column)}")  # as before 0009
    report = await apply_deployment(
        owner, declared.deployment, gateway_base_url="http://127.0.0.1:8080"
    )
    assert any(column in step.sql and "ADD COLUMN" in step.sql for step in report.plan.steps)
    index = object_name(declared.documents, column)
    assert await owner.fetchval("SELECT to_regclass($1)", f"axon_stores.{quote(index)}")
    async with store.tenant(tenant, read_only=True) as tx:
        found = await tx.retrieve(declared.corpus, "kestrel", 5)
    assert [d.id for d in found] == [ids[0]]  # the existing rows were filled in
    again = await apply_deployment(
        owner, declared.deployment, gateway_base_url="http://127.0.0.1:8080"
    )
    assert again.changes == ()
