"""The navigator as a real process (`python -m mnemo_navigator`) on a free loopback port, with
real Postgres and real Kafka, serving two published corpora declared for this module: one with a
pinned scope (`${client.tenant_id}`), one without."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import httpx
import pytest
from mnemo_auth import DEVELOPMENT_SECRET, mint_token
from mnemo_axon.compiler import load_deployment
from mnemo_store import Store, StoreCorpus
from mnemo_store.applier import apply_deployment
from mnemo_store.identifiers import store_table

from tests.infrastructure import free_port
from tests.integration.navigator.conftest import DECLARATIONS, PINNED, navigator_dsn
from tests.waiting import eventually_sync

ROOT = Path(__file__).resolve().parents[3]


@dataclass(frozen=True, slots=True)
class Running:
    url: str
    pinned: StoreCorpus
    open: StoreCorpus
    tenant_a: uuid.UUID  # two end-clients: c1, c2
    tenant_b: uuid.UUID
    log: Path
    requests_topic: str
    """This process's own navigate-request topic and group: the stack's navigator (which pins no
    scope of this module's corpora) never takes its requests."""

    def headers(self, tenant: uuid.UUID, client: dict[str, str] | None = None) -> dict[str, str]:
        token = mint_token(tenant=tenant, secret=DEVELOPMENT_SECRET, client=client)
        return {"Authorization": f"Bearer {token}"}


async def _declare(owner_dsn: str) -> tuple[StoreCorpus, StoreCorpus, uuid.UUID, uuid.UUID]:
    owner = await asyncpg.connect(owner_dsn)
    corpora = []
    try:
        for _ in range(2):
            suffix = uuid.uuid4().hex[:10]
            deployment = load_deployment(DECLARATIONS.format(s=suffix, adaptive="true"), "e2e.axon")
            await apply_deployment(owner, deployment, gateway_base_url="http://127.0.0.1:8080")
            await owner.execute(
                "UPDATE mnemo.corpora SET status = 'published' WHERE corpus_id = $1",
                f"Nav_{suffix}",
            )
            corpora.append(StoreCorpus.from_deployment(deployment, f"Nav_{suffix}"))
        tenants = [
            await owner.fetchval(
                "INSERT INTO mnemo.tenants (name) VALUES ($1) RETURNING tenant_id",
                f"test-nav-e2e-{uuid.uuid4().hex[:16]}",
            )
            for _ in range(2)
        ]
    finally:
        await owner.close()
    async with await Store.connect(owner_dsn, max_size=2) as store:
        for corpus in corpora:
            for tenant, subs in ((tenants[0], ("c1", "c2")), (tenants[1], ("c1",))):
                prefix = "a" if tenant == tenants[0] else "b"
                async with store.tenant(tenant) as tx:
                    await tx.insert_rows(
                        corpus.documents,
                        [
                            {
                                "id": f"{prefix}{sub}-{k}",
                                "tenant_id": sub,
                                "title": f"remember recall {k}",
                                "body": f"note {sub}",
                            }
                            for sub in subs
                            for k in range(3)
                        ],
                    )
                    await tx.insert_rows(
                        corpus.relations,
                        [
                            {
                                "from_id": f"{prefix}{sub}-0",
                                "to_id": f"{prefix}{sub}-{k}",
                                "etype": "cite",
                                "weight": 0.5,
                                "tenant_id": sub,
                            }
                            for sub in subs
                            for k in (1, 2)
                        ],
                    )
    return corpora[0], corpora[1], tenants[0], tenants[1]


async def _drop(owner_dsn: str, corpora: list[StoreCorpus], tenants: list[uuid.UUID]) -> None:
    owner = await asyncpg.connect(owner_dsn)
    try:
        for corpus in corpora:
            for store in (corpus.documents, corpus.relations):
                await owner.execute(f"DROP TABLE IF EXISTS {store_table(store.name)}")
            await owner.execute("DELETE FROM mnemo.corpora WHERE corpus_id = $1", corpus.name)
        for tenant in tenants:
            async with owner.transaction():
                await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
                for table in ("outbox", "inbox", "nav_outcomes", "graph_revisions"):
                    await owner.execute(f"DELETE FROM mnemo.{table}")
            await owner.execute("DELETE FROM mnemo.tenants WHERE tenant_id = $1", tenant)
    finally:
        await owner.close()


@pytest.fixture(scope="package")
def navigator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    app_dsn = os.environ.get("MNEMO_DATABASE_URL")
    owner_dsn = os.environ.get("MNEMO_OWNER_DATABASE_URL")
    if not app_dsn or not owner_dsn:
        pytest.fail("e2e tests need the local stack: run them through `make test` (or `make up`)")
    pinned, open_, tenant_a, tenant_b = asyncio.run(_declare(owner_dsn))
    port = free_port()
    suffix = uuid.uuid4().hex[:12]
    requests_topic = f"test.navigate.requested.{suffix}.v1"
    log = tmp_path_factory.mktemp("navigator") / "navigator.log"
    env = {
        **os.environ,
        "MNEMO_NAVIGATOR_PORT": str(port),
        "MNEMO_NAVIGATOR_DATABASE_URL": navigator_dsn(app_dsn),
        "MNEMO_NAVIGATOR_TOKEN_SECRET": DEVELOPMENT_SECRET,
        "MNEMO_NAVIGATOR_PINNED_SCOPES": json.dumps({pinned.name: PINNED}),
        "MNEMO_NAVIGATOR_REQUESTS_TOPIC": requests_topic,
        "MNEMO_NAVIGATOR_GROUP": f"test.navigator.{suffix}",
    }
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "mnemo_navigator"], cwd=ROOT, env=env, stdout=sink, stderr=sink
        )
    url = f"http://127.0.0.1:{port}"
    try:

        def answers_ready() -> bool:
            if process.poll() is not None:
                pytest.fail(f"navigator exited:\n{log.read_text()[-3000:]}")
            try:
                return httpx.get(f"{url}/readyz", timeout=2).status_code == 200
            except httpx.TransportError:
                return False

        eventually_sync(
            answers_ready,
            within=60,
            every=0.2,
            what=lambda: f"navigator did not become ready:\n{log.read_text()[-3000:]}",
        )
        yield Running(url, pinned, open_, tenant_a, tenant_b, log, requests_topic)
    finally:
        process.terminate()
        try:
            code = process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            code = -9
        asyncio.run(_drop(owner_dsn, [pinned, open_], [tenant_a, tenant_b]))
    assert code == 0, f"navigator exited {code} on SIGTERM:\n{log.read_text()[-3000:]}"
