"""One read token sending hundreds of distinct `where:` filters to the in-process navigator over
real Postgres (issue 20: each filter is a new graph-cache entry; 6,000 of them took a navigator
from 336 MB to 4.7 GB): the cache's accounted bytes stay under its bound, the flood evicts only
the flooding tenant's own graphs, and another tenant's graph stays cached and is served as a hit."""

from __future__ import annotations

import random
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from mnemo_auth import DEVELOPMENT_SECRET, mint_token
from mnemo_navigator.app import create_app
from mnemo_navigator.settings import Settings
from mnemo_navigator.use_cases import Navigator

from tests.integration.navigator.conftest import Declare, NewTenant, navigator_dsn

pytestmark = pytest.mark.timeout(300)

CACHE_BYTES = 4 * 1024**2
FILTERS = 300
DOCUMENTS = 30
BODY_WORDS = 300


def documents(seed: int) -> list[dict[str, Any]]:
    """Documents with long bodies (their term index is as large as the text)."""
    rnd = random.Random(seed)
    words = [f"w{k}" for k in range(20_000)]
    return [
        {
            "id": f"d{k:03d}",
            "tenant_id": "c1",
            "title": f"alpha {rnd.choice(words)} {rnd.choice(words)}",
            "body": " ".join(rnd.choices(words, k=BODY_WORDS)),
        }
        for k in range(DOCUMENTS)
    ]


def edges() -> list[dict[str, Any]]:
    return [
        {"from_id": f"d{k:03d}", "to_id": f"d{k + 1:03d}", "etype": "cite", "weight": 0.5}
        | {"tenant_id": "c1"}
        for k in range(DOCUMENTS - 1)
    ]


@pytest.fixture(scope="module")
async def small_cache(app_dsn: str) -> AsyncIterator[tuple[httpx.AsyncClient, Navigator]]:
    """The navigator app with a 4 MiB graph cache (half of it per tenant, 64 scopes)."""
    settings = Settings(
        database_url=navigator_dsn(app_dsn),
        consume_requests=False,
        token_secret=DEVELOPMENT_SECRET,
        pool_size=4,
        cache_max_bytes=CACHE_BYTES,
    )
    runtime = create_app(settings, pinned_scopes={})
    assert runtime.app is not None
    await runtime.start()
    navigator: Navigator = runtime.app.state.navigator  # built from the pool opened at start
    transport = httpx.ASGITransport(app=runtime.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://navigator") as client:
        yield client, navigator
    await runtime.stop()


def headers(tenant: uuid.UUID) -> dict[str, str]:
    token = mint_token(tenant=tenant, secret=DEVELOPMENT_SECRET, scopes=("read",))
    return {"Authorization": f"Bearer {token}"}


async def test_hundreds_of_distinct_filters_stay_within_the_bound_and_spare_another_tenant(
    declare: Declare,
    new_tenant: NewTenant,
    small_cache: tuple[httpx.AsyncClient, Navigator],
) -> None:
    client, navigator = small_cache
    cache = navigator.cache
    arena = await declare(adaptive=False)
    flooder, victim = await new_tenant(), await new_tenant()
    await arena.write(flooder, documents(1), edges())
    await arena.write(victim, documents(2), edges())
    url = f"/v1/corpora/{arena.name}/navigate"
    body = {"query": "alpha", "from": "d000", "budget": 3}

    first = await client.post(url, json=body, headers=headers(victim))
    assert first.status_code == 200, first.text
    victim_keys = [key for key in cache.keys_by_age() if key[0] == victim]
    assert len(victim_keys) == 1
    held = cache.peek(victim_keys[0])
    assert held is not None
    assert FILTERS * held.nbytes > 10 * CACHE_BYTES  # the flood would need ten caches

    for k in range(FILTERS):
        answer = await client.post(
            url, json={**body, "where": f"title != 'x{k}'"}, headers=headers(flooder)
        )
        assert answer.status_code == 200, answer.text
        assert cache.nbytes <= cache.max_bytes
        assert cache.peek(victim_keys[0]) is held  # the flood evicts its own graphs only

    flooded = [key for key in cache.keys_by_age() if key[0] == flooder]
    assert 1 <= len(flooded) < FILTERS
    assert cache.evictions >= FILTERS - len(flooded)
    assert cache.peek(victim_keys[0]) is held
    again = await client.post(url, json=body, headers=headers(victim))
    assert again.status_code == 200, again.text
    assert again.json()["diagnostics"]["cache"] == "hit"
