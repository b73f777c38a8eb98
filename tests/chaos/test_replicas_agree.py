"""Three navigator processes on one database, requests spread across them, writes, deletions and
adaptive navigations interleaved (issue 29): every answer is fresh for its snapshot (a document
written before a request is found by it, a deleted one is never served, each answer's revision is
at least the one the write left), and every reinforcement lands once: each edge's final weight is
its initial weight plus the sum of every navigation's planned deltas, across replicas (the rule of
`test_adaptive_concurrency`, whose `summed` this reuses). Each replica caches its own graph, so
each one's cache is refreshed by changes another replica or a writer made.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections import defaultdict
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mnemo_auth import DEVELOPMENT_SECRET, mint_token
from mnemo_mdn import DEFAULT_PARAMS, Edge, EdgeReinforcement, baseline, reinforcement_plan
from mnemo_store.identifiers import store_table

from tests.chaos.conftest import Service, World, make_world, remove_world, shared_stack
from tests.chaos.summary import Summary
from tests.chaos.test_adaptive_concurrency import INITIAL, WORDS, graph, summed

pytestmark = pytest.mark.timeout(400)

REPLICAS = 3
ROUNDS = 4
PER_ROUND = 9  # navigations per round, spread over the replicas, all at once


@pytest.fixture
async def replicated_world(tmp_path: Path) -> AsyncIterator[World]:
    created = await make_world(
        shared_stack(),
        tmp_path,
        tenants=1,
        published=True,
        adaptive=True,
        id_type="Text",
        client_type="Text",
    )
    try:
        yield created
    finally:
        await remove_world(created)


def replica(world: World, n: int) -> Service:
    service = world.navigator(pool_size=10)
    service.log = world.logs / f"navigator-{n}.log"  # one log per process
    return service


async def test_three_replicas_serve_fresh_answers_and_land_every_reinforcement_once(
    replicated_world: World, summary: Summary
) -> None:
    world = replicated_world
    tenant = world.tenants[0]
    docs, edges = graph()
    await world.write(tenant, docs, edges)
    replicas = [replica(world, n) for n in range(REPLICAS)]
    for service in replicas:
        service.start()
    for service in replicas:
        await service.ready()
    token = mint_token(tenant=tenant, secret=DEVELOPMENT_SECRET)
    headers = {"Authorization": f"Bearer {token}"}
    clients = [
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{s.port}", timeout=60) for s in replicas
    ]
    draw = random.Random(29)
    answers: dict[str, dict[str, Any]] = {}
    served_by: dict[int, int] = defaultdict(int)
    all_edges = list(edges)
    written: list[str] = []
    deleted: list[str] = []

    async def revision() -> int:
        return int(
            await world.scalar(
                tenant,
                f"SELECT revision FROM mnemo.graph_revisions WHERE corpus_id = '{world.corpus}'",
            )
        )

    async def navigate(n: int, query: str, floor: int, seed: str | None) -> dict[str, Any]:
        which = n % REPLICAS
        body: dict[str, Any] = {"query": query, "budget": draw.randint(2, 5)}
        if seed is not None:
            body["from"] = seed
        response = await clients[which].post(
            f"/v1/corpora/{world.corpus}/navigate", json=body, headers=headers
        )
        assert response.status_code == 200, response.text
        answer: dict[str, Any] = response.json()
        assert answer["revision"] >= floor, (which, answer["revision"], floor)
        ids = {hit["id"] for hit in answer["hits"]}
        assert not ids & set(deleted), (which, ids & set(deleted))
        served_by[which] += 1
        answers[query] = answer
        return answer

    try:
        for round_ in range(ROUNDS):
            # A writer (not a replica) adds a document linked from d0 ...
            fresh = f"fresh{round_}"
            document = {"id": fresh, "tenant_id": "c1", "title": f"{fresh} notes"}
            link = {"from_id": "d0", "to_id": fresh, "etype": "cite", "weight": INITIAL}
            link["tenant_id"] = "c1"
            await world.write(tenant, [document | {"body": f"{fresh} field"}], [link])
            written.append(fresh)
            all_edges.append(link)
            # ... and, from the second round on, deletes the one before it.
            if round_ >= 1:
                gone = written[round_ - 1]
                await world.rows(
                    tenant, f"DELETE FROM {store_table(world.docs)} WHERE id = '{gone}'"
                )
                deleted.append(gone)
            floor = await revision()
            batch = []
            for k in range(PER_ROUND):
                n = round_ * PER_ROUND + k
                # Several titles' words for a small budget: coverage below 1 and varied, so
                # plans are not zero.
                words = draw.sample(WORDS, draw.randint(3, 7))
                if k % 3 == 0:  # asks for the new document: every replica must find it
                    batch.append(navigate(n, f"{fresh} nonce{n}", floor, None))
                else:
                    batch.append(navigate(n, " ".join([*words, f"nonce{n}"]), floor, "d0"))
            results = await asyncio.wait_for(asyncio.gather(*batch), 120)
            for k, answer in enumerate(results):
                if k % 3 == 0:
                    assert fresh in {hit["id"] for hit in answer["hits"]}, (round_, k)
    finally:
        for client in clients:
            await client.aclose()
    assert len(served_by) == REPLICAS

    outcomes = await world.rows(
        tenant,
        "SELECT scope, seq, query, score, traversed::text AS traversed FROM mnemo.nav_outcomes"
        f" WHERE corpus_id = '{world.corpus}' ORDER BY scope, seq",
    )
    assert sorted(r["query"] for r in outcomes) == sorted(answers)  # each remembered once
    assert [r["seq"] for r in outcomes] == list(range(1, len(outcomes) + 1))  # one scope
    plans: dict[str, list[EdgeReinforcement]] = {}
    scores: list[float] = []
    for row in outcomes:
        scores.append(float(row["score"]))
        traversed = [
            Edge(e["from"], e["to"], e["etype"], 0.0) for e in json.loads(row["traversed"])
        ]
        mean = baseline(scores[-DEFAULT_PARAMS.horizon :])
        plans[row["query"]] = reinforcement_plan(traversed, float(row["score"]), mean)
    initial = {(e["from_id"], e["to_id"], e["etype"]): INITIAL for e in all_edges}
    stored = await world.rows(
        tenant, f"SELECT from_id, to_id, etype, weight FROM {store_table(world.edges)}"
    )
    final = {(r["from_id"], r["to_id"], r["etype"]): float(r["weight"]) for r in stored}
    assert final == pytest.approx(summed(initial, plans.values()), abs=1e-9)
    planned = [query for query, plan in plans.items() if plan]
    assert planned, "no navigation planned a change"
    caught = sum(
        summed(initial, [p for q, p in plans.items() if q != query], bounded=False)
        != pytest.approx(final, abs=1e-9)
        for query in planned
    )
    assert caught == len(planned)  # leaving any one plan out disagrees with the store
    summary.row(
        fault=f"{REPLICAS} navigator replicas, {ROUNDS} rounds of a write, a delete and "
        f"{PER_ROUND} concurrent adaptive navigations",
        events=len(answers),
        lost=len(set(answers) - {r["query"] for r in outcomes}),
        duplicated=len(outcomes) - len({r["query"] for r in outcomes}),
        leaked=None,
        notes=f"served {dict(served_by)}; every answer at or past the write's revision, new "
        f"documents found, deleted ones never served; {len(planned)} plans summed exactly",
    )
