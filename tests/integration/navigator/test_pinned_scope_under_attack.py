"""A client-confined token against hostile `where:` filters and parameters: whatever the request
sends, navigate and retrieve return only the documents of the token's end-client, and a
reinforcement moves no edge of another end-client."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import asyncpg
import httpx
import jwt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mnemo_auth import DEFAULT_AUDIENCE, DEFAULT_ISSUER, DEVELOPMENT_SECRET, mint_token
from mnemo_axon.compiler import load_deployment
from mnemo_navigator.app import create_app
from mnemo_navigator.settings import Settings
from mnemo_store import Store, StoreCorpus
from mnemo_store.applier import apply_deployment
from mnemo_store.identifiers import store_table

from tests.integration.navigator.conftest import DECLARATIONS, PINNED, navigator_dsn

PAYLOADS = (
    "%",
    "_",
    "c2",
    "c1' OR '1'='1",
    "' OR tenant_id IS NOT NULL --",
    "\\",
    "${client.tenant_id}",
    "c%",
)
WHERES = (
    "tenant_id LIKE '${x}'",
    "tenant_id == '${x}'",
    "tenant_id != '${x}'",
    "title LIKE '%' OR tenant_id LIKE '${x}'",
    "tenant_id == 'c2' OR tenant_id == 'c1'",
    "tenant_id LIKE '%'",
    "title != '${x}'",
)


@dataclass(frozen=True, slots=True)
class Arena:
    corpus: StoreCorpus
    tenant: uuid.UUID
    app_dsn: str


async def _build(app_dsn: str, owner_dsn: str) -> Arena:
    suffix = uuid.uuid4().hex[:10]
    deployment = load_deployment(DECLARATIONS.format(s=suffix, adaptive="true"), "attack.axon")
    owner = await asyncpg.connect(owner_dsn)
    try:
        await apply_deployment(owner, deployment, gateway_base_url="http://127.0.0.1:8080")
        await owner.execute(
            "UPDATE mnemo.corpora SET status = 'published' WHERE corpus_id = $1", f"Nav_{suffix}"
        )
        tenant = await owner.fetchval(
            "INSERT INTO mnemo.tenants (name) VALUES ($1) RETURNING tenant_id",
            f"test-nav-attack-{suffix}",
        )
    finally:
        await owner.close()
    corpus = StoreCorpus.from_deployment(deployment, f"Nav_{suffix}")
    async with await Store.connect(owner_dsn, max_size=2) as store, store.tenant(tenant) as tx:
        rows = [
            {"id": f"{sub}-{k}", "tenant_id": sub, "title": f"shared words {k}", "body": "%"}
            for sub in ("c1", "c2", "%", "c")
            for k in range(3)
        ]
        await tx.insert_rows(corpus.documents, rows)
        await tx.insert_rows(
            corpus.relations,
            [
                {
                    "from_id": f"{sub}-0",
                    "to_id": f"{sub}-{k}",
                    "etype": "cite",
                    "weight": 0.5,
                    "tenant_id": sub,
                }
                for sub in ("c1", "c2", "%", "c")
                for k in (1, 2)
            ],
        )
    return Arena(corpus, tenant, app_dsn)


async def _drop(arena: Arena, owner_dsn: str) -> None:
    owner = await asyncpg.connect(owner_dsn)
    try:
        for store in (arena.corpus.documents, arena.corpus.relations):
            await owner.execute(f"DROP TABLE IF EXISTS {store_table(store.name)}")
        await owner.execute("DELETE FROM mnemo.corpora WHERE corpus_id = $1", arena.corpus.name)
        async with owner.transaction():
            await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(arena.tenant))
            for table in ("outbox", "nav_outcomes", "graph_revisions"):
                await owner.execute(f"DELETE FROM mnemo.{table}")
        await owner.execute("DELETE FROM mnemo.tenants WHERE tenant_id = $1", arena.tenant)
    finally:
        await owner.close()


@pytest.fixture(scope="module")
def arena(app_dsn: str, owner_dsn: str) -> Iterator[Arena]:
    built = asyncio.run(_build(app_dsn, owner_dsn))
    yield built
    asyncio.run(_drop(built, owner_dsn))


async def _attack(arena: Arena, where: str, value: str, owner_dsn: str) -> None:
    settings_ = Settings(
        database_url=navigator_dsn(arena.app_dsn), consume_requests=False, pool_size=3
    )
    runtime = create_app(settings_, pinned_scopes={arena.corpus.name: PINNED})
    assert runtime.app is not None
    await runtime.start()
    token = mint_token(tenant=arena.tenant, secret=DEVELOPMENT_SECRET, client={"tenant_id": "c1"})
    headers = {"Authorization": f"Bearer {token}"}
    body = {"where": where, "params": {"x": value, "client": {"tenant_id": "c2"}}}
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=runtime.app), base_url="http://n"
        ) as client:
            base = f"/v1/corpora/{arena.corpus.name}"
            nav = await client.post(
                f"{base}/navigate",
                json={**body, "query": "shared words 0 1 2", "budget": 20},
                headers=headers,
            )
            got = await client.post(
                f"{base}/retrieve", json={**body, "query": "shared words", "k": 50}, headers=headers
            )
    finally:
        await runtime.stop()
    for response, key in ((nav, "hits"), (got, "items")):
        # A filter the compiler refuses is a 422; everything answered is inside the pin.
        assert response.status_code in (200, 422), response.text
        if response.status_code == 200:
            ids = [item["id"] for item in response.json()[key]]
            assert all(i.startswith("c1-") for i in ids), (where, value, ids)
    owner = await asyncpg.connect(owner_dsn)
    try:
        async with owner.transaction():
            await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(arena.tenant))
            moved = await owner.fetch(
                f"SELECT tenant_id FROM {store_table(arena.corpus.relations.name)} WHERE weight <> 0.5"
            )
    finally:
        await owner.close()
    assert {row["tenant_id"] for row in moved} <= {"c1"}


@settings(max_examples=40)
@given(
    st.sampled_from(WHERES),
    st.one_of(st.sampled_from(PAYLOADS), st.text(alphabet="%_\\c12' ", max_size=6)),
)
def test_no_request_widens_a_pinned_scope(
    arena: Arena, owner_dsn: str, where: str, value: str
) -> None:
    asyncio.run(_attack(arena, where, value, owner_dsn))


EMPTY_CLIENT_CLAIMS: tuple[object, ...] = ({}, [], "", 0, False, None, {"tenant_id": ""})


async def _with_empty_claim(arena: Arena, claim: object) -> list[int]:
    settings_ = Settings(
        database_url=navigator_dsn(arena.app_dsn), consume_requests=False, pool_size=3
    )
    runtime = create_app(settings_, pinned_scopes={arena.corpus.name: PINNED})
    assert runtime.app is not None
    await runtime.start()
    now = datetime.now(UTC)
    token = jwt.encode(
        {
            "tenant": str(arena.tenant),
            "sub": "probe",
            "scope": "read",
            "iss": DEFAULT_ISSUER,
            "aud": DEFAULT_AUDIENCE,
            "exp": now + timedelta(minutes=5),
            "client": claim,
        },
        DEVELOPMENT_SECRET,
        algorithm="HS256",
    )
    headers = {"Authorization": f"Bearer {token}"}
    base = f"/v1/corpora/{arena.corpus.name}"
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=runtime.app), base_url="http://n"
        ) as client:
            answers = [
                await client.post(
                    f"{base}/navigate",
                    json={"query": "shared words", "budget": 20},
                    headers=headers,
                ),
                await client.post(
                    f"{base}/retrieve", json={"query": "shared words", "k": 50}, headers=headers
                ),
                await client.get(f"{base}/documents", headers=headers),
            ]
    finally:
        await runtime.stop()
    return [answer.status_code for answer in answers]


@pytest.mark.parametrize("claim", EMPTY_CLIENT_CLAIMS, ids=repr)
def test_an_empty_client_claim_is_refused_not_read_as_tenant_wide(
    arena: Arena, claim: object
) -> None:
    """`client` set to {}, [], "", 0, false or null used to return every end-client's rows."""
    assert asyncio.run(_with_empty_claim(arena, claim)) == [401, 401, 401]
