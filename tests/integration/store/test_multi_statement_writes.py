"""Transactions that write more than once never deadlock on the graph revision (INFRA: with the
revision bumped after each statement, 8 workers deadlocked 37 of 120 two-statement transactions)."""

from __future__ import annotations

import asyncio
import itertools
import random
import uuid
from typing import Any

import asyncpg
import pytest
from mnemo_store import EdgeDelta, Store

from tests.integration.store.test_store_reinforcement import seed_chain

pytestmark = pytest.mark.timeout(180)

WORKERS = 8
TRANSACTIONS_PER_WORKER = 15


async def test_eight_workers_writing_twice_per_transaction_never_deadlock(
    store: Store, declare: Any, new_tenant: Any
) -> None:
    corpus = (await declare()).corpus
    tenant = await new_tenant()
    sub = uuid.uuid4()
    ids = await seed_chain(store, corpus, tenant, sub, 24)
    edges = list(itertools.pairwise(ids))
    async with store.tenant(tenant) as tx:
        before = await tx.graph_revision(corpus.name)
    deadlocks = 0
    committed = 0

    async def worker(seed: int) -> None:
        nonlocal deadlocks, committed
        rng = random.Random(seed)
        for _ in range(TRANSACTIONS_PER_WORKER):
            first, second = rng.sample(edges, 2)
            try:
                async with store.tenant(tenant) as tx:
                    # Reinforcement's shape: two updates whose rows other workers take in the
                    # opposite order.
                    await tx.reinforce(corpus, [EdgeDelta(*first, "cite", 2.0**-14)])
                    await asyncio.sleep(0.001)  # injected: let other workers interleave here
                    await tx.reinforce(corpus, [EdgeDelta(*second, "cite", 2.0**-14)])
                    # Ingest's shape: one more write in the same transaction.
                    await tx.insert_rows(
                        corpus.documents,
                        [{"id": str(uuid.uuid4()), "tenant_id": sub, "title": "n", "body": None}],
                    )
                committed += 1
            except asyncpg.exceptions.DeadlockDetectedError:
                deadlocks += 1

    await asyncio.gather(*(worker(seed) for seed in range(WORKERS)))
    async with store.tenant(tenant) as tx:
        after = await tx.graph_revision(corpus.name)
    assert deadlocks == 0, f"{deadlocks} of {WORKERS * TRANSACTIONS_PER_WORKER} deadlocked"
    assert committed == WORKERS * TRANSACTIONS_PER_WORKER
    assert after > before
