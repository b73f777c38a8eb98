"""Incremental graph refresh against real Postgres: a stale cached graph is brought up to date by
reading only the rows changed since its snapshot, and the result is exactly a full reload's,
whatever order concurrent writers commit in; deletes and identity changes force a full reload."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import numpy as np
import pytest
from mnemo_mdn.graph import CorpusGraph, ids_in_order
from mnemo_store import Scope, Store
from mnemo_store.refresh import GraphRows

from tests.integration.navigator.conftest import Arena, Declare, NewTenant, Service, navigator_dsn

DOCS = [
    {
        "id": f"d{k:03d}",
        "tenant_id": "c1" if k % 2 else "c2",
        "title": f"doc {k} alpha",
        "body": None,
    }
    for k in range(40)
]
EDGES = [
    {
        "from_id": f"d{k:03d}",
        "to_id": f"d{(k * 7 + 1) % 40:03d}",
        "etype": "cite",
        "weight": 0.5,
        "tenant_id": "c1" if k % 2 else "c2",
    }
    for k in range(40)
]


@pytest.fixture(scope="module")
async def reader(app_dsn: str) -> AsyncIterator[Store]:
    async with await Store.connect(navigator_dsn(app_dsn), min_size=1, max_size=4) as store:
        yield store


def edges_of(rows: GraphRows) -> list[tuple[int, int, int, int, float]]:
    return sorted(
        zip(
            rows.edge_key.tolist(),
            rows.edge_source.tolist(),
            rows.edge_target.tolist(),
            rows.edge_type.tolist(),
            rows.edge_weight.tolist(),
            strict=True,
        )
    )


async def full(reader: Store, arena: Arena, tenant: uuid.UUID, scope: Scope) -> GraphRows:
    async with reader.tenant(tenant, read_only=True) as tx:
        _, rows = await tx.load_graph_rows(arena.corpus, scope)
    assert rows is not None
    return rows


async def refreshed(
    reader: Store, arena: Arena, tenant: uuid.UUID, rows: GraphRows, scope: Scope
) -> GraphRows | None:
    async with reader.tenant(tenant, read_only=True) as tx:
        return await tx.refresh_graph(arena.corpus, rows, scope)


def assert_same(a: GraphRows, b: GraphRows) -> None:
    assert a.ids == b.ids
    # Merged rows keep their ids in order, so their graph skips the check a load's build makes;
    # it is the graph a build with the check makes.
    assert a.ascending
    assert b.ascending
    assert ids_in_order(a.ids)
    trusted, checked = a.to_graph(), CorpusGraph.from_arrays(a.ids, a.titles, order="id")
    assert trusted.ids == checked.ids
    assert a.titles == b.titles
    assert edges_of(a) == edges_of(b)
    assert a.revision == b.revision


async def test_a_refresh_reads_only_the_changed_rows_and_equals_a_full_reload(
    declare: Declare, new_tenant: NewTenant, reader: Store
) -> None:
    arena = await declare(adaptive=False)
    tenant = await new_tenant()
    await arena.write(tenant, DOCS, EDGES)
    scope = Scope()
    cached = await full(reader, arena, tenant, scope)
    assert cached.documents_read == 40
    assert cached.edges_read == 40
    # An edge to a document that does not exist yet, then the document: the edge must resolve.
    await arena.write(
        tenant,
        [],
        [{"from_id": "d001", "to_id": "zz", "etype": "cite", "weight": 1.0, "tenant_id": "c1"}],
    )
    step = await refreshed(reader, arena, tenant, cached, scope)
    assert step is not None
    assert step.documents_read == 0
    assert step.edges_read == 1
    assert -1 in step.edge_target.tolist()
    await arena.write(tenant, [{"id": "zz", "tenant_id": "c1", "title": "late", "body": None}])
    await arena.write(tenant, [{"id": "a00", "tenant_id": "c1", "title": "first", "body": None}])
    step = await refreshed(reader, arena, tenant, step, scope)
    assert step is not None
    # Two documents, the earlier edge again (not visible to the first snapshot), plus the edges
    # touching the arriving documents: far fewer than the 40 + 41 rows a reload reads.
    assert step.documents_read == 2
    assert step.edges_read <= 3
    assert_same(step, await full(reader, arena, tenant, scope))
    assert int(np.count_nonzero(step.edge_target < 0)) == 0


async def test_a_writer_that_started_earlier_and_commits_later_is_not_missed(
    declare: Declare, new_tenant: NewTenant, reader: Store, owner_store: Store
) -> None:
    arena = await declare(adaptive=False)
    tenant = await new_tenant()
    await arena.write(tenant, DOCS[:5], EDGES[:0])
    scope = Scope()
    cached = await full(reader, arena, tenant, scope)
    slow_wrote = asyncio.Event()
    release = asyncio.Event()

    async def slow_writer() -> None:
        async with owner_store.tenant(tenant) as tx:
            await tx.insert_rows(
                arena.corpus.documents,
                [{"id": "slow", "tenant_id": "c1", "title": "slow", "body": None}],
            )
            slow_wrote.set()
            await release.wait()

    slow = asyncio.create_task(slow_writer())
    await slow_wrote.wait()
    # A snapshot taken while the slow writer is open does not see its row; the next refresh,
    # from that snapshot, must find it although its transaction began before the snapshot.
    middle = await refreshed(reader, arena, tenant, cached, scope)
    assert middle is not None
    assert "slow" not in middle.ids
    release.set()
    await slow
    after = await refreshed(reader, arena, tenant, middle, scope)
    assert after is not None
    assert "slow" in after.ids
    assert_same(after, await full(reader, arena, tenant, scope))


async def test_rows_leaving_and_entering_the_scope_are_removed_and_restored_with_their_edges(
    declare: Declare, new_tenant: NewTenant, reader: Store, owner_store: Store
) -> None:
    arena = await declare(adaptive=False)
    tenant = await new_tenant()
    await arena.write(tenant, DOCS, EDGES)
    scope = Scope(where="tenant_id == 'c1'")
    cached = await full(reader, arena, tenant, scope)
    table = f'axon_stores."{arena.corpus.documents.name}"'
    async with owner_store.tenant(tenant) as tx:
        await tx._open().execute(f"UPDATE {table} SET tenant_id = 'c2' WHERE id = 'd001'")
    left = await refreshed(reader, arena, tenant, cached, scope)
    assert left is not None
    assert "d001" not in left.ids
    assert_same(left, await full(reader, arena, tenant, scope))
    async with owner_store.tenant(tenant) as tx:
        await tx._open().execute(f"UPDATE {table} SET tenant_id = 'c1' WHERE id = 'd001'")
    back = await refreshed(reader, arena, tenant, left, scope)
    assert back is not None
    assert "d001" in back.ids
    assert back.documents_read == 1
    assert_same(back, await full(reader, arena, tenant, scope))


async def test_a_delete_or_an_identity_change_forces_a_full_reload(
    declare: Declare, new_tenant: NewTenant, reader: Store, owner_store: Store
) -> None:
    arena = await declare(adaptive=False)
    tenant = await new_tenant()
    await arena.write(tenant, DOCS, EDGES)
    scope = Scope()
    cached = await full(reader, arena, tenant, scope)
    table = f'axon_stores."{arena.corpus.documents.name}"'
    async with owner_store.tenant(tenant) as tx:
        await tx._open().execute(f"UPDATE {table} SET id = 'renamed' WHERE id = 'd002'")
    assert await refreshed(reader, arena, tenant, cached, scope) is None
    cached = await full(reader, arena, tenant, scope)
    async with owner_store.tenant(tenant) as tx:
        await tx._open().execute(f"DELETE FROM {table} WHERE id = 'd003'")
    assert await refreshed(reader, arena, tenant, cached, scope) is None
    # A title edit is neither: it refreshes.
    cached = await full(reader, arena, tenant, scope)
    async with owner_store.tenant(tenant) as tx:
        await tx._open().execute(f"UPDATE {table} SET title = 'edited' WHERE id = 'd004'")
    edited = await refreshed(reader, arena, tenant, cached, scope)
    assert edited is not None
    assert edited.titles[edited.ids.index("d004")] == "edited"


async def test_concurrent_writers_each_see_their_write_in_the_very_next_navigation(
    declare: Declare, new_tenant: NewTenant, service: Service
) -> None:
    arena = await declare(adaptive=True)
    tenant = await new_tenant()
    await arena.write(tenant, DOCS, EDGES)
    headers = service.token(tenant)
    url = f"/v1/corpora/{arena.name}/navigate"
    first = await service.client.post(url, json={"query": "alpha", "budget": 2}, headers=headers)
    assert first.status_code == 200, first.text
    states: list[str] = []

    async def writer(w: int) -> None:
        for k in range(4):
            new_id = f"w{w}x{k}"
            await arena.write(
                tenant,
                [{"id": new_id, "tenant_id": "c1", "title": f"token{w}q{k} fresh", "body": None}],
                [
                    {
                        "from_id": "d001",
                        "to_id": new_id,
                        "etype": "cite",
                        "weight": 1.0,
                        "tenant_id": "c1",
                    }
                ],
            )
            response = await service.client.post(
                url, json={"query": f"token{w}q{k}", "budget": 2}, headers=headers
            )
            assert response.status_code == 200, response.text
            body = response.json()
            assert new_id in [hit["id"] for hit in body["hits"]]
            states.append(body["diagnostics"]["cache"])

    await asyncio.gather(*(writer(w) for w in range(4)))
    assert "refresh" in states


def phases(header: str) -> dict[str, float]:
    """`Server-Timing: revision;dur=0.4, refresh;dur=12.1` as {phase: milliseconds}."""
    found: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in header.split(","))):
        name, _, duration = part.partition(";dur=")
        found[name] = float(duration)
    return found


async def test_each_navigation_reports_the_phases_it_went_through_in_server_timing(
    declare: Declare, new_tenant: NewTenant, service: Service
) -> None:
    arena = await declare(adaptive=True)
    tenant = await new_tenant()
    await arena.write(tenant, DOCS, EDGES)
    headers = service.token(tenant)
    url = f"/v1/corpora/{arena.name}/navigate"

    async def navigate(query: str) -> tuple[str, dict[str, float]]:
        response = await service.client.post(
            url, json={"query": query, "budget": 2}, headers=headers
        )
        assert response.status_code == 200, response.text
        return response.json()["diagnostics"]["cache"], phases(response.headers["server-timing"])

    state, loaded = await navigate("alpha")
    assert state == "miss"
    assert {"corpus", "revision", "load", "build", "size", "epr", "walk", "remember"} <= set(loaded)
    assert "refresh" not in loaded
    await arena.write(
        tenant, [{"id": "fresh1", "tenant_id": "c1", "title": "brandnew", "body": None}], []
    )
    state, refreshed = await navigate("brandnew")
    assert state == "refresh"
    assert {"refresh", "build", "carry", "size", "epr", "walk", "remember"} <= set(refreshed)
    assert "load" not in refreshed
    state, hit = await navigate("alpha")
    assert state == "hit"
    assert {"revision", "epr", "walk", "remember"} <= set(hit)
    assert not {"load", "refresh", "build", "carry"} & set(hit)
    assert all(ms >= 0 for timing in (loaded, refreshed, hit) for ms in timing.values())
