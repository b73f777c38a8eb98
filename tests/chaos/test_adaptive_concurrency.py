"""Rounds of 16 concurrent adaptive navigations over the same edges, through a navigator process
over HTTP, in two scopes at once (a tenant-wide token and a client-confined one): none deadlocks,
and every edge's final weight is its initial weight plus the sum of every navigation's planned
deltas.

The planned deltas are recomputed from what each navigation recorded (`mnemo.nav_outcomes`: its
scope, sequence, score and the edges it traversed) with the engine's own rule
(`mnemo_mdn.baseline` over the scope's recent scores, then `mnemo_mdn.reinforcement_plan`), and
each response's hits are matched to its recorded row. The check is shown able to fail: leaving
any one navigation's plan out of the sum must disagree with the store.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Iterable, Mapping
from pathlib import Path
from typing import Any

import httpx
import pytest
from mnemo_auth import DEVELOPMENT_SECRET, mint_token
from mnemo_mdn import DEFAULT_PARAMS, Edge, EdgeReinforcement, baseline, reinforcement_plan
from mnemo_store.identifiers import store_table
from mnemo_store.reinforcement import MAX_WEIGHT, MIN_WEIGHT

from tests.chaos.conftest import World, make_world, remove_world, shared_stack
from tests.chaos.summary import Summary
from tests.integration.navigator.conftest import PINNED

pytestmark = pytest.mark.timeout(300)

CONCURRENT = 16
ROUNDS = 3
CLIENT = "c1"
WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda",
    "mu",
    "nu",
    "xi",
    "omicron",
    "pi",
]
INITIAL = 0.5

EdgeKey = tuple[str, str, str]


@pytest.fixture
async def adaptive_world(tmp_path: Path) -> AsyncIterator[World]:
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


def graph() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """16 documents, each citing the next two and elaborated by the third after it: every
    navigation from d0 walks a few of the same edges."""
    docs = [
        {"id": f"d{n}", "tenant_id": CLIENT, "title": f"{word} notes", "body": f"{word} field"}
        for n, word in enumerate(WORDS)
    ]
    edges = [
        {"from_id": f"d{n}", "to_id": f"d{m}", "etype": etype, "weight": INITIAL}
        | {"tenant_id": CLIENT}
        for n in range(len(WORDS))
        for m, etype in ((n + 1, "cite"), (n + 2, "cite"), (n + 3, "elaborate"))
        if m < len(WORDS)
    ]
    return docs, edges


async def test_sixteen_concurrent_adaptive_navigations_sum_every_planned_delta_and_never_deadlock(
    adaptive_world: World, summary: Summary
) -> None:
    world = adaptive_world
    tenant = world.tenants[0]
    docs, edges = graph()
    await world.write(tenant, docs, edges)
    navigator = world.navigator(pinned=PINNED, pool_size=20)
    navigator.start()
    await navigator.ready()
    tokens = {
        "tenant-wide": mint_token(tenant=tenant, secret=DEVELOPMENT_SECRET),
        "client": mint_token(
            tenant=tenant, secret=DEVELOPMENT_SECRET, client={"tenant_id": CLIENT}
        ),
    }
    draw = random.Random(16)
    answers: dict[str, dict[str, Any]] = {}
    started = time.monotonic()
    async with httpx.AsyncClient(
        base_url=f"http://127.0.0.1:{navigator.port}",
        timeout=60,
        limits=httpx.Limits(max_connections=CONCURRENT),
    ) as http:

        async def navigate(n: int) -> None:
            # A query of its own: a few titles' words and one word no document holds, so scores
            # differ and the deltas are not zero; budgets differ, so trails do too.
            words = draw.sample(WORDS, draw.randint(2, 5))
            query = " ".join([*words, f"nonce{n}"])
            token = tokens["client" if n % 2 else "tenant-wide"]
            response = await http.post(
                f"/v1/corpora/{world.corpus}/navigate",
                json={"query": query, "from": "d0", "budget": draw.randint(3, 8)},
                headers={"Authorization": f"Bearer {token}"},
            )
            assert response.status_code == 200, response.text
            answers[query] = response.json()

        for round_ in range(ROUNDS):
            batch = range(round_ * CONCURRENT, (round_ + 1) * CONCURRENT)
            # A deadlock (or a lock wait that never ends) fails here, not at the suite's timeout.
            await asyncio.wait_for(asyncio.gather(*(navigate(n) for n in batch)), 90)
    seconds = time.monotonic() - started

    outcomes = await world.rows(
        tenant,
        "SELECT scope, seq, query, score, traversed::text AS traversed FROM mnemo.nav_outcomes"
        f" WHERE corpus_id = '{world.corpus}' ORDER BY scope, seq",
    )
    assert sorted(r["query"] for r in outcomes) == sorted(answers)  # each remembered once
    by_scope: dict[str, list[Any]] = defaultdict(list)
    for row in outcomes:
        by_scope[row["scope"]].append(row)
    assert len(by_scope) == 2
    for rows in by_scope.values():  # no two navigations of a scope took the same number
        assert [r["seq"] for r in rows] == list(range(1, len(rows) + 1))

    plans: dict[str, list[EdgeReinforcement]] = {}
    for rows in by_scope.values():
        scores: list[float] = []
        for row in rows:
            scores.append(float(row["score"]))
            traversed = [
                Edge(e["from"], e["to"], e["etype"], 0.0) for e in json.loads(row["traversed"])
            ]
            # The navigator's rule: the baseline over the scope's last H - 1 scores and this one.
            mean = baseline(scores[-DEFAULT_PARAMS.horizon :])
            plans[row["query"]] = reinforcement_plan(traversed, float(row["score"]), mean)
            hits = answers[row["query"]]["hits"]
            # A hit's `via` is an edge the navigation traversed (either way: navigation follows
            # edges both ways by default, and remembers each as it is stored).
            walked = {(e.source, e.target, e.etype) for e in traversed}
            walked |= {(target, source, etype) for source, target, etype in walked}
            via = {(h["via"]["from"], h["id"], h["via"]["etype"]) for h in hits if h["via"]}
            assert via <= walked, row["query"]

    initial = {(e["from_id"], e["to_id"], e["etype"]): INITIAL for e in edges}
    stored = await world.rows(
        tenant,
        f"SELECT from_id, to_id, etype, weight FROM {store_table(world.edges)}",
    )
    final = {(r["from_id"], r["to_id"], r["etype"]): float(r["weight"]) for r in stored}
    expected = summed(initial, plans.values())
    assert final == pytest.approx(expected, abs=1e-9)

    # The same check with any one navigation's plan dropped must fail: a lost update is caught.
    planned = [query for query, plan in plans.items() if plan]
    assert len(planned) >= CONCURRENT, "too few navigations planned a change"
    caught = 0
    for query in planned:
        without = summed(initial, [p for q, p in plans.items() if q != query], bounded=False)
        caught += without != pytest.approx(final, abs=1e-9)
    assert caught == len(planned)

    moved = sum(1 for key in initial if abs(final[key] - INITIAL) > 1e-12)
    summary.row(
        fault=f"{ROUNDS} rounds of {CONCURRENT} concurrent adaptive navigations",
        events=len(answers),
        lost=len(set(answers) - {r["query"] for r in outcomes}),
        duplicated=len(outcomes) - len({r["query"] for r in outcomes}),
        leaked=None,
        notes=f"{len(planned)} plans, {moved} edges moved, each equal to the sum of its planned "
        f"deltas; dropping any one plan is caught; no deadlock, {seconds:.1f} s",
    )


def summed(
    initial: Mapping[EdgeKey, float],
    plans: Iterable[Iterable[EdgeReinforcement]],
    *,
    bounded: bool = True,
) -> dict[EdgeKey, float]:
    """Initial weights plus every plan's deltas. The store clamps each update to its bounds; with
    `bounded`, no sum may reach one (asserted), so the order of the updates cannot matter."""
    totals = dict.fromkeys(initial, 0.0)
    for plan in plans:
        for update in plan:
            totals[(update.source, update.target, update.etype)] += update.delta
    result: dict[EdgeKey, float] = {}
    for key, start in initial.items():
        value = start + totals[key]
        assert not bounded or MIN_WEIGHT < value < MAX_WEIGHT, f"{key} reaches a bound"
        result[key] = value
    return result
