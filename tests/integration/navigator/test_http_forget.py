"""`DELETE /v1/stores/{store}/rows/{id}` end to end: the navigator in-process (HTTP API and outbox
relay) sends forget commands to a topic of this module's own, carried out by an ingest process of
its own, over real Postgres and Kafka. The document goes with its edges, and ingest's audit row
names the caller; another tenant's or another end-client's document is a 404 and nothing is
removed or queued."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from mnemo_auth import DEVELOPMENT_SECRET, mint_token
from mnemo_events.provisioning import ensure_topics
from mnemo_events.settings import KafkaSettings
from mnemo_navigator.app import create_app
from mnemo_navigator.settings import Settings

from tests.integration.ingest.conftest import IngestProcess, ingest, suffix, table  # noqa: F401
from tests.integration.navigator.conftest import navigator_dsn

pytestmark = pytest.mark.timeout(180)

PINNED = "tenant_id == '${client.tenant_id}'"


@dataclass
class Api:
    client: httpx.AsyncClient
    pinned: dict[str, str]
    ingest: IngestProcess

    def headers(
        self,
        tenant: uuid.UUID,
        *,
        scopes: tuple[str, ...] = ("read", "write"),
        client: dict[str, str] | None = None,
    ) -> dict[str, str]:
        token = mint_token(tenant=tenant, secret=DEVELOPMENT_SECRET, scopes=scopes, client=client)
        return {"Authorization": f"Bearer {token}"}

    async def write(self, tenant: uuid.UUID, store: str, rows: list[dict[str, Any]]) -> None:
        answer = await self.client.post(
            f"/v1/stores/{store}/rows",
            json={"rows": rows},
            params={"wait": 30},
            headers=self.headers(tenant),
        )
        assert answer.status_code == 202, answer.text
        assert answer.json()["processed"] == answer.json()["event_ids"]

    async def forget(
        self, tenant: uuid.UUID, store: str, doc_id: str, **token: Any
    ) -> httpx.Response:
        return await self.client.delete(
            f"/v1/stores/{store}/rows/{doc_id}",
            params={"wait": 30},
            headers=self.headers(tenant, **token),
        )


@pytest.fixture(scope="module")
async def api(
    ingest: IngestProcess,  # noqa: F811  (the fixture imported above)
    app_dsn: str,
    kafka_bootstrap: str,
) -> AsyncIterator[Api]:
    audit_topic = f"test.nav-audit.{uuid.uuid4().hex[:10]}.v1"
    kafka = KafkaSettings(bootstrap=kafka_bootstrap, partitions=3)
    await ensure_topics(kafka, [audit_topic])
    pinned: dict[str, str] = {}
    settings = Settings(
        database_url=navigator_dsn(app_dsn),
        consume_requests=False,
        token_secret=DEVELOPMENT_SECRET,
        audit_topic=audit_topic,
        persist_topic=ingest.topic,
        forget_topic=ingest.forget_topic,
        pool_size=4,
        kafka=kafka,
    )
    runtime = create_app(settings, pinned_scopes=pinned)
    assert runtime.app is not None
    await runtime.start()
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=runtime.app), base_url="http://navigator"
        ) as client:
            yield Api(client, pinned, ingest)
    finally:
        await runtime.stop()


def doc(scope: str, title: str) -> dict[str, Any]:
    return {"id": str(uuid.uuid4()), "tenant_id": scope, "title": title}


async def forget_commands(proc: IngestProcess, tenant: uuid.UUID) -> int:
    return await proc.count(tenant, "mnemo.outbox", f"topic = '{proc.forget_topic}'")


async def test_a_forgotten_document_goes_with_its_edges_and_ingest_audits_who_asked(
    api: Api,
) -> None:
    proc = api.ingest
    tenant = proc.tenants[0]
    scope = str(uuid.uuid4())
    a, b = doc(scope, "private a"), doc(scope, "kept b")
    await api.write(tenant, proc.docs, [a, b])
    edges = [
        {"from_id": a["id"], "to_id": b["id"], "etype": "cite", "weight": 0.5, "tenant_id": scope},
        {"from_id": b["id"], "to_id": a["id"], "etype": "cite", "weight": 0.5, "tenant_id": scope},
    ]
    await api.write(tenant, proc.edges, edges)
    answer = await api.forget(tenant, proc.docs, a["id"])
    assert answer.status_code == 202, answer.text
    assert answer.json()["processed"] is True
    assert await proc.count(tenant, table(proc.docs), f"tenant_id = '{scope}'") == 1
    assert await proc.count(tenant, table(proc.edges), f"tenant_id = '{scope}'") == 0
    records = [
        json.loads(r["payload"])["data"]["record"]
        for r in await proc.query(
            tenant,
            "SELECT payload::text AS payload FROM mnemo.outbox WHERE topic = $1",
            proc.audit_topic,
        )
    ]
    [deleted] = [r for r in records if r.get("row_ids") == [a["id"]] and r["kind"] == "delete"]
    assert deleted["action"] == f"store:{proc.docs}:delete"
    assert deleted["principal"].startswith("mnemo.navigator/http")
    assert deleted["edges_removed"] == 2
    assert "private a" not in json.dumps(deleted)
    again = await api.forget(tenant, proc.docs, a["id"])
    assert (again.status_code, again.json()["error"]["code"]) == (404, "NOT_FOUND")


async def test_another_tenants_document_is_not_found_and_nothing_is_removed_or_queued(
    api: Api,
) -> None:
    proc = api.ingest
    mine, theirs = proc.tenants[1], proc.tenants[2]
    scope = str(uuid.uuid4())
    a = doc(scope, "mine")
    await api.write(mine, proc.docs, [a])
    before = await forget_commands(proc, theirs)
    answer = await api.forget(theirs, proc.docs, a["id"])
    assert (answer.status_code, answer.json()["error"]["code"]) == (404, "NOT_FOUND")
    assert answer.json()["error"]["message"].startswith("no document")
    assert await forget_commands(proc, theirs) == before
    assert await proc.count(mine, table(proc.docs), f"id = '{a['id']}'") == 1


async def test_an_end_client_forgets_only_within_its_pinned_scope(api: Api) -> None:
    proc = api.ingest
    tenant = proc.tenants[1]
    api.pinned[proc.corpus] = PINNED
    try:
        mine, other = str(uuid.uuid4()), str(uuid.uuid4())
        a, b = doc(mine, "client a"), doc(other, "client b")
        await api.write(tenant, proc.docs, [a, b])
        before = await forget_commands(proc, tenant)
        refused = await api.forget(tenant, proc.docs, b["id"], client={"tenant_id": mine})
        assert (refused.status_code, refused.json()["error"]["code"]) == (404, "NOT_FOUND")
        assert await forget_commands(proc, tenant) == before
        assert await proc.count(tenant, table(proc.docs), f"id = '{b['id']}'") == 1
        done = await api.forget(tenant, proc.docs, a["id"], client={"tenant_id": mine})
        assert done.status_code == 202, done.text
        assert await proc.count(tenant, table(proc.docs), f"id = '{a['id']}'") == 0
        # The command itself carried the scope: ingest could not have removed another client's.
        [command] = await proc.query(
            tenant,
            "SELECT payload::text AS payload FROM mnemo.outbox WHERE event_id = $1",
            uuid.UUID(done.json()["event_id"]),
        )
        assert json.loads(command["payload"])["data"]["match"] == {"tenant_id": mine}
    finally:
        api.pinned.pop(proc.corpus, None)


async def test_no_write_scope_an_edges_store_or_an_unknown_store_is_refused(api: Api) -> None:
    proc = api.ingest
    tenant = proc.tenants[0]
    a = doc(str(uuid.uuid4()), "stays")
    await api.write(tenant, proc.docs, [a])
    reader = await api.forget(tenant, proc.docs, a["id"], scopes=("read",))
    assert reader.status_code == 403, reader.text
    edges = await api.forget(tenant, proc.edges, a["id"])
    assert edges.status_code == 404, edges.text
    unknown = await api.forget(tenant, "NoSuchStore", a["id"])
    assert unknown.status_code == 404, unknown.text
    anonymous = await api.client.delete(f"/v1/stores/{proc.docs}/rows/{a['id']}")
    assert anonymous.status_code == 401
    assert await proc.count(tenant, table(proc.docs), f"id = '{a['id']}'") == 1
