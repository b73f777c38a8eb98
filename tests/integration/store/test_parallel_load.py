"""A graph load's two COPYs on two connections read one snapshot: exactly what one connection
reads, even when a writer commits before the second connection's transaction begins and again
between the two COPYs; and a refresh from that load's snapshot brings the writes in (the
watermark holds)."""

from __future__ import annotations

import asyncio
import itertools
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
import pytest
from mnemo_store import EdgeDelta, Scope, Store, StoreCorpus, unit_of_work
from mnemo_store.loading import CopyFormat, CopyOutput, CopyQuery, GraphArrays
from mnemo_store.refresh import GraphRows

Writer = Callable[[], Awaitable[None]]


def content(graph: GraphArrays) -> tuple[object, ...]:
    """Everything a load returns, edges as a sorted list (a COPY without ORDER BY sets no order)."""
    edges = sorted(
        (
            -1 if graph.edge_key is None else int(k),
            graph.ids[int(s)] if s >= 0 else "",
            graph.ids[int(t)] if t >= 0 else "",
            int(e),
            float(w),
        )
        for k, s, t, e, w in zip(
            graph.edge_key if graph.edge_key is not None else [-1] * graph.n_edges,
            graph.edge_source,
            graph.edge_target,
            graph.edge_type,
            graph.edge_weight,
            strict=True,
        )
    )
    return (graph.revision, graph.ids, graph.titles, graph.bodies, edges, graph.truncated)


def rows_content(rows: GraphRows) -> tuple[object, ...]:
    edges = [
        (int(k), rows.ids[int(s)] if s >= 0 else "", int(t), int(e), float(w))
        for k, s, t, e, w in zip(
            rows.edge_key,
            rows.edge_source,
            rows.edge_target,
            rows.edge_type,
            rows.edge_weight,
            strict=True,
        )
    ]
    return (rows.revision, rows.reset_revision, rows.ids, rows.titles, rows.bodies, edges)


def injecting(
    monkeypatch: pytest.MonkeyPatch, writer: Writer, connections: set[int]
) -> asyncio.Event:
    """Make every load run `writer` (committed elsewhere) once it has taken its snapshot and its
    second connection, then its documents' COPY, `writer` again, then its edges' COPY; record
    which connections the COPYs ran on."""
    original = unit_of_work._copier
    written = asyncio.Event()

    def copier(connection: asyncpg.Connection) -> CopyQuery:
        copy = original(connection)

        async def wrapped(
            query: str,
            params: tuple[object, ...],
            form: CopyFormat,
            output: CopyOutput | None = None,
        ) -> bytes:
            connections.add(id(connection))
            if form == "binary":  # the edges: only once the write has committed
                await written.wait()
                return bytes(await copy(query, params, form, output))
            data = bytes(await copy(query, params, form, output))
            await writer()  # between the two COPYs
            written.set()
            return data

        return wrapped

    helper = unit_of_work.TenantTransaction._helper

    async def helper_after_a_write(
        self: unit_of_work.TenantTransaction,
    ) -> tuple[asyncpg.Pool, asyncpg.Connection] | None:
        found = await helper(self)
        await writer()  # after the load's snapshot, before the second connection's begins
        return found

    monkeypatch.setattr(unit_of_work, "_copier", copier)
    monkeypatch.setattr(unit_of_work.TenantTransaction, "_helper", helper_after_a_write)
    return written


async def test_parallel_and_sequential_loads_read_one_snapshot_past_a_concurrent_writer(
    store: Store,
    app_dsn: str,
    declare: Any,
    new_tenant: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    corpus: StoreCorpus = (await declare()).corpus
    tenant, other_tenant = await new_tenant(), await new_tenant()
    mine, theirs = uuid.uuid4(), uuid.uuid4()
    scope = Scope("tenant_id == '${t}'", {"t": str(mine)})
    ids = [str(uuid.uuid4()) for _ in range(60)]
    async with store.tenant(tenant) as tx:
        await tx.insert_rows(
            corpus.documents,
            [
                {
                    "id": doc,
                    "tenant_id": mine if k % 5 else theirs,  # every fifth: out of scope
                    "title": f"title {k}",
                    "body": None if k % 3 else f"body\t{k}\\",
                }
                for k, doc in enumerate(ids)
            ],
        )
        await tx.insert_rows(
            corpus.relations,
            [
                {
                    "from_id": ids[k],
                    "to_id": ids[(7 * k + 3) % len(ids)],
                    "etype": ("cite", "contradict", "likes")[k % 3],
                    "weight": 0.01 * (k + 1),
                    "tenant_id": mine if k % 4 else theirs,
                }
                for k in range(len(ids))
            ],
        )
    async with store.tenant(other_tenant) as tx:  # another tenant's rows in the same tables
        await tx.insert_rows(
            corpus.documents,
            [{"id": str(uuid.uuid4()), "tenant_id": mine, "title": "x", "body": None}],
        )

    writes = 0

    async def writer() -> None:
        """A new document, an edge to it, a moved weight: committed, on another connection."""
        nonlocal writes
        writes += 1
        new = str(uuid.uuid4())
        async with store.tenant(tenant) as tx:
            await tx.insert_rows(
                corpus.documents,
                [{"id": new, "tenant_id": mine, "title": f"written {writes}", "body": "late"}],
            )
            await tx.insert_rows(
                corpus.relations,
                [
                    {
                        "from_id": ids[1],
                        "to_id": new,
                        "etype": "cite",
                        "weight": 0.5,
                        "tenant_id": mine,
                    }
                ],
            )
            moved = await tx.reinforce(corpus, [EdgeDelta(ids[2], ids[17], "likes", 0.05)], scope)
            assert moved == 1

    async with (
        await Store.connect(app_dsn, min_size=1, max_size=1) as one,
        await Store.connect(app_dsn, min_size=2, max_size=2) as two,
    ):
        for loader, expected_connections in ((one, 1), (two, 2)):
            async with loader.tenant(tenant, read_only=True) as tx:
                before = await tx.load_graph(corpus, scope)
            connections: set[int] = set()
            written = injecting(monkeypatch, writer, connections)
            async with loader.tenant(tenant, read_only=True) as tx:
                during = await tx.load_graph(corpus, scope)
            monkeypatch.undo()
            assert written.is_set()
            assert len(connections) == expected_connections  # the path under test ran
            assert content(during) == content(before)  # neither COPY saw the writes
            assert before.n_documents == 48 + writes - 2
            async with loader.tenant(tenant, read_only=True) as tx:
                after = await tx.load_graph(corpus, scope)
            assert after.revision > before.revision
            assert after.n_documents == before.n_documents + 2  # the writes were real
            assert after.n_edges == before.n_edges + 2

        # A load's rows and watermark from two connections: a refresh from them brings the
        # writes in, and equals a full load of the same later snapshot.
        connections = set()
        injecting(monkeypatch, writer, connections)
        async with two.tenant(tenant, read_only=True) as tx:
            _, rows = await tx.load_graph_rows(corpus, scope)
        monkeypatch.undo()
        assert rows is not None
        assert len(connections) == 2
        async with one.tenant(tenant, read_only=True) as tx:
            refreshed = await tx.refresh_graph(corpus, rows, scope)
            _, full = await tx.load_graph_rows(corpus, scope)
        assert refreshed is not None
        assert full is not None
        assert refreshed.edges_read < full.edges_read  # read the changes only
        assert {"written 5", "written 6"} <= set(refreshed.titles)
        assert not {"written 5", "written 6"} & set(rows.titles)
        assert rows_content(refreshed) == rows_content(full)


async def test_repeated_small_loads_always_match_every_edge(
    store: Store, app_dsn: str, declare: Any, new_tenant: Any
) -> None:
    """The documents may be decoded before, while or after the edges stream: however the timing
    falls, every edge is matched exactly once (a callback racing the worker emptied them once)."""
    corpus: StoreCorpus = (await declare()).corpus
    tenant = await new_tenant()
    ids = [str(uuid.uuid4()) for _ in range(30)]
    async with store.tenant(tenant) as tx:
        await tx.insert_rows(
            corpus.documents,
            [{"id": doc, "tenant_id": tenant, "title": "t", "body": None} for doc in ids],
        )
        await tx.insert_rows(
            corpus.relations,
            [
                {"from_id": a, "to_id": b, "etype": "cite", "weight": 0.5, "tenant_id": tenant}
                for a, b in itertools.pairwise(ids)
            ],
        )
    async with (
        await Store.connect(app_dsn, min_size=1, max_size=1) as one,
        await Store.connect(app_dsn, min_size=2, max_size=2) as two,
    ):
        for loader in (one, two, store):
            for read_only in (False, True):
                for _ in range(50):
                    async with loader.tenant(tenant, read_only=read_only) as tx:
                        graph = await tx.load_graph(corpus)
                    assert graph.n_edges == 29
                    assert graph.edge_weight.shape == (29,)
                    assert bool((graph.edge_source >= 0).all())
