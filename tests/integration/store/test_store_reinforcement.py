"""Reinforcement: exact under concurrency, deadlock-free, clamped, and inside the sub-tenant scope."""

from __future__ import annotations

import asyncio
import random
import uuid
from fractions import Fraction
from typing import Any

from mnemo_store import EdgeDelta, Scope, Store

STEP = 2.0**-14  # a binary fraction: every partial sum is exact, so "exact" can be asserted


async def seed_chain(
    store: Store, corpus: Any, tenant: uuid.UUID, sub: uuid.UUID, n: int, weight: float = 0.25
) -> list[str]:
    ids = sorted(str(uuid.uuid4()) for _ in range(n))
    async with store.tenant(tenant) as tx:
        await tx.insert_rows(
            corpus.documents,
            [
                {"id": doc, "tenant_id": sub, "title": f"d{k}", "body": None}
                for k, doc in enumerate(ids)
            ],
        )
        await tx.insert_rows(
            corpus.relations,
            [
                {
                    "from_id": ids[k],
                    "to_id": ids[k + 1],
                    "etype": "cite",
                    "weight": weight,
                    "tenant_id": sub,
                }
                for k in range(n - 1)
            ],
        )
    return ids


async def weights(
    store: Store, corpus: Any, tenant: uuid.UUID, scope: Scope | None = None
) -> dict[tuple[str, str], float]:
    async with store.tenant(tenant) as tx:
        graph = await tx.load_graph(corpus, scope)
    return {
        (graph.ids[int(s)], graph.ids[int(t)]): float(w)
        for s, t, w in zip(graph.edge_source, graph.edge_target, graph.edge_weight, strict=True)
    }


async def test_sixteen_tasks_of_five_hundred_reinforcements_lose_no_update(
    store: Store, declare: Any, new_tenant: Any
) -> None:
    corpus = (await declare()).corpus
    tenant = await new_tenant()
    ids = await seed_chain(store, corpus, tenant, uuid.uuid4(), 11)
    edges = [(ids[k], ids[k + 1]) for k in range(10)]
    expected = {edge: Fraction(1, 4) for edge in edges}

    def plan(task: int, step: int) -> list[EdgeDelta]:
        first, second = edges[step % 10], edges[(step + task) % 10]
        # The first edge twice: duplicates in one batch must be summed, not applied once.
        return [
            EdgeDelta(*first, "cite", STEP),
            EdgeDelta(*second, "cite", STEP),
            EdgeDelta(*first, "cite", STEP),
        ]

    for task in range(16):
        for step in range(500):
            for delta in plan(task, step):
                expected[(delta.source, delta.target)] += Fraction(STEP)

    async def worker(task: int) -> None:
        for step in range(500):
            async with store.tenant(tenant) as tx:
                await tx.reinforce(corpus, plan(task, step))

    await asyncio.gather(*(worker(task) for task in range(16)))
    assert await weights(store, corpus, tenant) == {edge: float(w) for edge, w in expected.items()}


async def test_overlapping_concurrent_batches_never_deadlock(
    store: Store, declare: Any, new_tenant: Any
) -> None:
    corpus = (await declare()).corpus
    tenant = await new_tenant()
    ids = await seed_chain(store, corpus, tenant, uuid.uuid4(), 61, weight=0.5)
    edges = [(ids[k], ids[k + 1]) for k in range(60)]

    async def worker(seed: int) -> None:
        chooser = random.Random(seed)
        for _ in range(40):
            batch = chooser.sample(edges, 40)  # a different order every time
            async with store.tenant(tenant) as tx:
                await tx.reinforce(
                    corpus,
                    [EdgeDelta(s, t, "cite", chooser.choice((STEP, -STEP))) for s, t in batch],
                )
                await asyncio.sleep(0)  # hold the locks a moment so the batches really overlap

    await asyncio.gather(*(worker(seed) for seed in range(16)))  # a deadlock would raise here


async def test_weights_stay_between_one_thousandth_and_one(
    store: Store, declare: Any, new_tenant: Any
) -> None:
    corpus = (await declare()).corpus
    tenant = await new_tenant()
    ids = await seed_chain(store, corpus, tenant, uuid.uuid4(), 3, weight=0.5)
    async with store.tenant(tenant) as tx:
        updated = await tx.reinforce(
            corpus,
            [
                EdgeDelta(ids[0], ids[1], "cite", 0.9),
                EdgeDelta(ids[1], ids[2], "cite", -0.9),
                EdgeDelta(ids[1], ids[2], "contradict", 0.3),
            ],  # no such edge: nothing to update
        )
    assert updated == 2
    assert await weights(store, corpus, tenant) == {(ids[0], ids[1]): 1.0, (ids[1], ids[2]): 0.001}


async def test_the_scope_restricts_reinforcement_to_its_sub_tenant(
    store: Store, declare: Any, new_tenant: Any
) -> None:
    corpus = (await declare()).corpus
    tenant = await new_tenant()
    alice, bob = uuid.uuid4(), uuid.uuid4()
    ids = await seed_chain(store, corpus, tenant, alice, 2, weight=0.5)
    # The same endpoints and type, under another sub-tenant.
    async with store.tenant(tenant) as tx:
        await tx.insert_rows(
            corpus.relations,
            [
                {
                    "from_id": ids[0],
                    "to_id": ids[1],
                    "etype": "cite",
                    "weight": 0.5,
                    "tenant_id": bob,
                }
            ],
        )
        updated = await tx.reinforce(
            corpus,
            [EdgeDelta(ids[0], ids[1], "cite", 0.25)],
            Scope("tenant_id == '${tenant_id}'", {"tenant_id": str(alice)}),
        )
    assert updated == 1
    alice_scope = Scope("tenant_id == '${t}'", {"t": str(alice)})
    bob_scope = Scope("tenant_id == '${t}'", {"t": str(bob)})
    assert await weights(store, corpus, tenant, alice_scope) == {(ids[0], ids[1]): 0.75}
    async with store.tenant(tenant) as tx:
        bob_graph = await tx.load_graph(corpus, bob_scope)
    assert bob_graph.n_documents == 0  # bob has no documents; his edge stays where it was
    assert bob_graph.edge_weight.tolist() == [0.5]
