"""`POST /v1/stores/{store}/rows` end to end: the navigator in-process (its HTTP API and its outbox
relay) publishes persist events to a topic of this module's own, read by an ingest process of its
own, over real Postgres and Kafka. The tenant comes from the token only, a client token's pinned
column from its claim only; bad rows are refused before anything is queued, and what ingest
refuses later is dead-lettered with the reason."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import asyncpg
import httpx
import pytest
from mnemo_auth import DEVELOPMENT_SECRET, mint_token
from mnemo_client import AsyncMnemoClient, PermissionDeniedError
from mnemo_events.dead_letters import REASON
from mnemo_events.provisioning import ensure_topics
from mnemo_events.settings import KafkaSettings
from mnemo_navigator.app import create_app
from mnemo_navigator.settings import Settings
from mnemo_store.erasure import erase_tenant

from tests.integration.ingest.conftest import IngestProcess, ingest, suffix, table  # noqa: F401
from tests.integration.navigator.conftest import navigator_dsn
from tests.waiting import eventually

pytestmark = pytest.mark.timeout(180)

PINNED = "tenant_id == '${client.tenant_id}'"


@dataclass
class Writer:
    client: httpx.AsyncClient
    pinned: dict[str, str]
    ingest: IngestProcess
    app: Any

    def mnemo(self, tenant: uuid.UUID, **token: Any) -> AsyncMnemoClient:
        """mnemo-client's async client on this navigator, with a token of `tenant`."""
        bearer = self.headers(tenant, **token)["Authorization"].removeprefix("Bearer ")
        return AsyncMnemoClient(
            "http://navigator", bearer, transport=httpx.ASGITransport(app=self.app)
        )

    def headers(
        self,
        tenant: uuid.UUID,
        *,
        scopes: tuple[str, ...] = ("read", "write"),
        client: dict[str, str] | None = None,
    ) -> dict[str, str]:
        token = mint_token(tenant=tenant, secret=DEVELOPMENT_SECRET, scopes=scopes, client=client)
        return {"Authorization": f"Bearer {token}"}

    async def write(
        self,
        tenant: uuid.UUID,
        store: str,
        rows: list[dict[str, Any]],
        *,
        wait: float | None = 30,
        **token: Any,
    ) -> httpx.Response:
        params = {} if wait is None else {"wait": wait}
        # JSON with ASCII escapes: a lone surrogate (which no UTF-8 body can carry) as `\\ud800`.
        return await self.client.post(
            f"/v1/stores/{store}/rows",
            content=json.dumps({"rows": rows}),
            params=params,
            headers={**self.headers(tenant, **token), "Content-Type": "application/json"},
        )


@pytest.fixture(scope="module")
async def writer(
    ingest: IngestProcess,  # noqa: F811  (the fixture imported above)
    app_dsn: str,
    kafka_bootstrap: str,
) -> AsyncIterator[Writer]:
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
            yield Writer(client, pinned, ingest, runtime.app)
    finally:
        await runtime.stop()


def _doc(scope: str, title: str, **more: Any) -> dict[str, Any]:
    return {"id": str(uuid.uuid4()), "tenant_id": scope, "title": title, **more}


async def test_rows_written_over_http_are_in_the_store_when_wait_says_they_were_processed_and_audited_by_ingest(
    writer: Writer,
) -> None:
    proc = writer.ingest
    tenant = proc.tenants[0]
    scope = str(uuid.uuid4())
    docs = [_doc(scope, f"memory {n}") for n in range(3)]
    edge = {"from_id": docs[0]["id"], "to_id": docs[1]["id"], "etype": "cite", "weight": 0.5}
    answer = await writer.write(tenant, proc.docs, docs)
    assert answer.status_code == 202, answer.text
    body = answer.json()
    assert len(body["event_ids"]) == 3
    assert body["processed"] == body["event_ids"]
    ids = [uuid.UUID(d["id"]) for d in docs]
    stored = await proc.query(
        tenant, f"SELECT id, title FROM {table(proc.docs)} WHERE id = ANY($1::uuid[])", ids
    )
    assert sorted(r["title"] for r in stored) == ["memory 0", "memory 1", "memory 2"]

    answer = await writer.write(tenant, proc.edges, [{**edge, "tenant_id": scope}])
    assert answer.status_code == 202, answer.text
    assert answer.json()["processed"] == answer.json()["event_ids"]
    assert await proc.count(tenant, table(proc.edges), f"from_id = '{docs[0]['id']}'") == 1

    audits = [
        json.loads(r["payload"])["data"]["record"]
        for r in await proc.query(
            tenant,
            "SELECT payload::text AS payload FROM mnemo.outbox WHERE topic = $1",
            proc.audit_topic,
        )
    ]
    persisted = [a for a in audits if a["action"] == f"store:{proc.docs}:persist"]
    assert {str(i) for a in persisted for i in a["source_event_ids"]} >= set(body["event_ids"])
    assert all(a["principal"].startswith("mnemo.navigator/http") for a in persisted)


async def test_without_wait_the_answer_comes_once_the_events_are_published(
    writer: Writer,
) -> None:
    proc = writer.ingest
    tenant = proc.tenants[0]
    answer = await writer.write(tenant, proc.docs, [_doc(str(uuid.uuid4()), "x")], wait=None)
    assert answer.status_code == 202, answer.text
    event_id = answer.json()["event_ids"][0]
    assert answer.json()["processed"] is None
    phases = [part.split(";")[0] for part in answer.headers["Server-Timing"].split(", ")]
    assert phases == ["check", "queue", "publish"]
    [row] = await proc.query(
        tenant, "SELECT published_at FROM mnemo.outbox WHERE event_id = $1", uuid.UUID(event_id)
    )
    assert row["published_at"] is not None


async def test_a_resent_request_with_its_event_ids_writes_each_row_once(writer: Writer) -> None:
    proc = writer.ingest
    tenant = proc.tenants[1]
    scope = str(uuid.uuid4())
    docs = [_doc(scope, "once"), _doc(scope, "once too")]
    ids = [str(uuid.uuid4()), str(uuid.uuid4())]
    body = {"rows": docs, "event_ids": ids}
    url = f"/v1/stores/{proc.docs}/rows"
    for _ in range(2):
        answer = await writer.client.post(
            url, json=body, params={"wait": 30}, headers=writer.headers(tenant)
        )
        assert answer.status_code == 202, answer.text
        assert answer.json()["event_ids"] == ids
        assert answer.json()["processed"] == ids
    assert await proc.count(tenant, "mnemo.outbox", f"event_id = '{ids[0]}'") == 1
    assert await proc.count(tenant, table(proc.docs), f"tenant_id = '{scope}'") == 2
    changed = {"rows": [{**docs[0], "title": "changed"}], "event_ids": ids[:1]}
    reused = await writer.client.post(url, json=changed, headers=writer.headers(tenant))
    assert (reused.status_code, reused.json()["error"]["code"]) == (409, "EVENT_ID_REUSED")
    short = await writer.client.post(
        url, json={"rows": docs, "event_ids": ids[:1]}, headers=writer.headers(tenant)
    )
    assert short.status_code == 422, short.text


async def test_a_tenant_cannot_write_into_another_tenants_rows(writer: Writer) -> None:
    proc = writer.ingest
    mine, theirs = proc.tenants[0], proc.tenants[1]
    scope = str(uuid.uuid4())
    doc = _doc(scope, "mine")
    assert (await writer.write(mine, proc.docs, [doc])).status_code == 202
    # The other tenant writes a row with the same id, and an edge naming my document.
    other = {**doc, "title": "theirs"}
    edge = {
        "from_id": doc["id"],
        "to_id": doc["id"],
        "etype": "cite",
        "weight": 0.5,
        "tenant_id": scope,
    }
    answer = await writer.write(theirs, proc.docs, [other])
    assert answer.status_code == 202, answer.text
    assert answer.json()["processed"] == answer.json()["event_ids"]
    assert (await writer.write(theirs, proc.edges, [edge], wait=5)).status_code == 202
    where = f"id = '{doc['id']}'"
    [my_row] = await proc.query(mine, f"SELECT title FROM {table(proc.docs)} WHERE {where}")
    [their_row] = await proc.query(theirs, f"SELECT title FROM {table(proc.docs)} WHERE {where}")
    assert (my_row["title"], their_row["title"]) == ("mine", "theirs")
    assert await proc.count(mine, table(proc.edges), f"from_id = '{doc['id']}'") == 0


async def test_a_client_token_writes_only_inside_its_pinned_scope(writer: Writer) -> None:
    proc = writer.ingest
    tenant = proc.tenants[2]
    mine, other = str(uuid.uuid4()), str(uuid.uuid4())
    client = {"tenant_id": mine}
    # No pinned scope on the corpus reading the store: a confined token cannot write it.
    refused = await writer.write(tenant, proc.docs, [_doc(other, "x")], client=client)
    assert refused.status_code == 403, refused.text
    assert refused.json()["error"]["code"] == "SCOPE_FORBIDDEN"

    writer.pinned[proc.corpus] = PINNED
    try:
        doc = _doc(other, "claims another client")
        answer = await writer.write(tenant, proc.docs, [doc], client=client)
        assert answer.status_code == 202, answer.text
        [row] = await proc.query(
            tenant, f"SELECT tenant_id FROM {table(proc.docs)} WHERE id = $1", uuid.UUID(doc["id"])
        )
        assert str(row["tenant_id"]) == mine  # the claim's, not the body's
        # A claim that cannot bind the pinned scope is refused.
        odd = await writer.write(tenant, proc.docs, [doc], client={"team": "t1"})
        assert odd.status_code == 403, odd.text
        # A pinned scope that is not made of equalities cannot confine writes.
        writer.pinned[proc.corpus] = "tenant_id != '${client.tenant_id}'"
        loose = await writer.write(tenant, proc.docs, [_doc(mine, "y")], client=client)
        assert loose.status_code == 403, loose.text
    finally:
        writer.pinned.pop(proc.corpus, None)


@pytest.mark.parametrize(
    ("store_of", "rows", "needle"),
    [
        ("docs", [{"id": "not-a-uuid", "tenant_id": str(uuid.uuid4()), "title": "t"}], "rows[1]"),
        ("docs", [{"id": str(uuid.uuid4()), "tenant_id": str(uuid.uuid4())}], "title"),
        ("docs", [{**_doc(str(uuid.uuid4()), "t"), "colour": "red"}], "colour"),
        (
            "edges",
            [
                {
                    "from_id": str(uuid.uuid4()),
                    "to_id": str(uuid.uuid4()),
                    "etype": "cite",
                    "weight": 2,
                    "tenant_id": str(uuid.uuid4()),
                }
            ],
            "(0, 1]",
        ),
        (
            "edges",
            [
                {
                    "from_id": str(uuid.uuid4()),
                    "to_id": str(uuid.uuid4()),
                    "etype": "befriends",
                    "weight": 0.5,
                    "tenant_id": str(uuid.uuid4()),
                }
            ],
            "relation catalog",
        ),
        ("docs", [_doc(str(uuid.uuid4()), "nul \x00 inside")], "rows[1]"),
        ("docs", [{**_doc(str(uuid.uuid4()), "t"), "body": "\ud800"}], "rows[1]"),
        ("docs", [{**_doc(str(uuid.uuid4()), "t"), "score": 10**30}], "rows[1]"),
    ],
)
async def test_a_bad_row_is_refused_with_a_422_naming_it_and_nothing_is_queued(
    writer: Writer, store_of: str, rows: list[dict[str, Any]], needle: str
) -> None:
    proc = writer.ingest
    tenant = proc.tenants[1]
    store = proc.docs if store_of == "docs" else proc.edges
    before = await proc.count(tenant, "mnemo.outbox", f"topic = '{proc.topic}'")
    good = _doc(str(uuid.uuid4()), "fine")
    answer = await writer.write(tenant, store, [good, *rows] if store_of == "docs" else rows)
    assert answer.status_code == 422, answer.text
    assert needle in answer.json()["error"]["message"]
    assert await proc.count(tenant, "mnemo.outbox", f"topic = '{proc.topic}'") == before


async def test_requests_without_the_right_token_store_or_shape_get_a_clear_4xx(
    writer: Writer,
) -> None:
    proc = writer.ingest
    tenant = proc.tenants[0]
    doc = [_doc(str(uuid.uuid4()), "x")]
    read_only = await writer.write(tenant, proc.docs, doc, scopes=("read",))
    assert (read_only.status_code, read_only.json()["error"]["code"]) == (403, "FORBIDDEN")
    unknown = await writer.write(tenant, "NoSuchStore", doc)
    assert unknown.status_code == 404, unknown.text
    ghost = await writer.write(uuid.uuid4(), proc.docs, doc)
    assert (ghost.status_code, ghost.json()["error"]["code"]) == (403, "UNKNOWN_TENANT")
    long_wait = await writer.write(tenant, proc.docs, doc, wait=3600)
    assert long_wait.status_code == 422, long_wait.text
    empty = await writer.write(tenant, proc.docs, [])
    assert empty.status_code == 422, empty.text
    anonymous = await writer.client.post(f"/v1/stores/{proc.docs}/rows", json={"rows": doc})
    assert anonymous.status_code == 401
    nested = await writer.client.post(
        f"/v1/stores/{proc.docs}/rows",
        json={"rows": doc, "tenant": str(proc.tenants[1])},
        headers=writer.headers(tenant),
    )
    assert nested.status_code == 422, nested.text


async def test_an_edge_across_scopes_is_dead_lettered_by_ingest_with_the_reason(
    writer: Writer,
) -> None:
    proc = writer.ingest
    tenant = proc.tenants[0]
    a, b = _doc(str(uuid.uuid4()), "scope a"), _doc(str(uuid.uuid4()), "scope b")
    assert (await writer.write(tenant, proc.docs, [a, b])).status_code == 202
    edge = {
        "from_id": a["id"],
        "to_id": b["id"],
        "etype": "cite",
        "weight": 0.5,
        "tenant_id": a["tenant_id"],
    }
    answer = await writer.write(tenant, proc.edges, [edge], wait=3)
    assert answer.status_code == 202, answer.text
    assert answer.json()["processed"] == answer.json()["event_ids"]  # processed: refused
    assert await proc.count(tenant, table(proc.edges), f"from_id = '{a['id']}'") == 0
    letters = [
        r
        for r in await proc.dead_letters(500, wait=5)
        if answer.json()["event_ids"][0].encode() in r.value
    ]
    assert letters, "the refused edge was not dead-lettered"
    reasons = {dict(r.headers).get(REASON, b"").decode() for r in letters}
    assert any("scope" in reason for reason in reasons), reasons


async def test_mnemo_clients_write_sends_an_event_id_per_row_and_a_resend_writes_once(
    writer: Writer,
) -> None:
    proc = writer.ingest
    tenant = proc.tenants[2]
    scope = str(uuid.uuid4())
    rows = [_doc(scope, "from the client"), _doc(scope, "from the client too")]
    async with writer.mnemo(tenant) as mnemo:
        accepted = await mnemo.write(proc.docs, rows, wait=30)
        assert accepted.processed == accepted.event_ids
        again = await mnemo.write(proc.docs, rows, event_ids=accepted.event_ids, wait=30)
        assert again.event_ids == accepted.event_ids
    assert await proc.count(tenant, table(proc.docs), f"tenant_id = '{scope}'") == 2
    async with writer.mnemo(tenant, scopes=("read",)) as reader:
        with pytest.raises(PermissionDeniedError):
            await reader.write(proc.docs, rows)


async def test_a_write_waiting_for_the_relay_when_its_tenant_is_erased_answers_410_tenant_erased(
    writer: Writer, app_dsn: str, owner_dsn: str, kafka_bootstrap: str
) -> None:
    """Erase removes the queued outbox rows: the write can never be published, so it is not told
    503 NOT_YET_PUBLISHED (which means "it will still be written") but 410 TENANT_ERASED."""
    proc = writer.ingest
    owner = await asyncpg.connect(owner_dsn)
    tenant = await owner.fetchval(
        "INSERT INTO mnemo.tenants (name) VALUES ($1) RETURNING tenant_id",
        f"test-erased-writer-{uuid.uuid4().hex[:8]}",
    )
    # No relay in this navigator (another process relays: nobody here), so the rows wait.
    settings = Settings(
        database_url=navigator_dsn(app_dsn),
        consume_requests=False,
        relay_outbox=False,
        token_secret=DEVELOPMENT_SECRET,
        persist_topic=f"test.persist.unrelayed.{uuid.uuid4().hex[:8]}.v1",
        write_publish_seconds=20,
        kafka=KafkaSettings(bootstrap=kafka_bootstrap, partitions=3),
    )
    runtime = create_app(settings, pinned_scopes={})
    assert runtime.app is not None
    await runtime.start()
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=runtime.app), base_url="http://navigator"
        ) as client:
            headers = writer.headers(tenant)
            answer = asyncio.ensure_future(
                client.post(
                    f"/v1/stores/{proc.docs}/rows",
                    json={"rows": [_doc(str(uuid.uuid4()), "to be erased")]},
                    params={"wait": 5},
                    headers=headers,
                    timeout=60,
                )
            )

            async def queued() -> bool:
                async with owner.transaction():
                    await owner.execute("SELECT set_config('mnemo.tenant', $1, true)", str(tenant))
                    return bool(await owner.fetchval("SELECT count(*) FROM mnemo.outbox"))

            await eventually(queued, within=15, what="the write's row in the outbox")
            await erase_tenant(owner, tenant)
            response = await asyncio.wait_for(answer, 30)
        assert response.status_code == 410, response.text
        assert response.json()["error"]["code"] == "TENANT_ERASED"
        assert "erased" in response.json()["error"]["message"]
    finally:
        await runtime.stop()
        await owner.close()
