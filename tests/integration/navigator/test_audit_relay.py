"""The navigator relays its own outbox: a query's audit event reaches Kafka with no ingest relaying
it. The navigator here writes its audit events to a topic of the test's own, which no other relay
(the stack's ingest relays only its topics) would ever publish."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import pytest
from aiokafka import AIOKafkaConsumer
from mnemo_auth import DEVELOPMENT_SECRET, mint_token
from mnemo_events.provisioning import ensure_topics
from mnemo_events.settings import KafkaSettings
from mnemo_navigator.app import create_app
from mnemo_navigator.settings import Settings

from tests.integration.navigator.conftest import Declare, NewTenant, navigator_dsn
from tests.waiting import eventually

pytestmark = pytest.mark.timeout(90)

DOCS = [{"id": "a", "tenant_id": "c1", "title": "alpha notes", "body": None}]


async def test_a_querys_audit_event_reaches_kafka_through_the_navigators_own_relay(
    declare: Declare, new_tenant: NewTenant, app_dsn: str, kafka_bootstrap: str
) -> None:
    arena = await declare()
    tenant = await new_tenant()
    await arena.write(tenant, DOCS)
    topic = f"test.audit.{uuid.uuid4().hex[:10]}.v1"
    settings = Settings(
        database_url=navigator_dsn(app_dsn),
        consume_requests=False,
        token_secret=DEVELOPMENT_SECRET,
        audit_topic=topic,
        pool_size=3,
        kafka=KafkaSettings(bootstrap=kafka_bootstrap, partitions=1),
    )
    await ensure_topics(settings.kafka, [topic])  # read below whether anything publishes or not
    runtime = create_app(settings, pinned_scopes={})
    assert runtime.app is not None
    await runtime.start()
    try:
        token = mint_token(tenant=tenant, secret=DEVELOPMENT_SECRET, scopes=("read",))
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=runtime.app), base_url="http://navigator"
        ) as client:
            answer = await client.post(
                f"/v1/corpora/{arena.name}/retrieve",
                json={"query": "alpha"},
                headers={"Authorization": f"Bearer {token}"},
            )
        assert answer.status_code == 200, answer.text
        consumer = AIOKafkaConsumer(
            topic, bootstrap_servers=kafka_bootstrap, auto_offset_reset="earliest", group_id=None
        )
        await consumer.start()
        seen: list[dict[str, Any]] = []
        try:

            async def audited() -> list[dict[str, Any]]:
                for records in (await consumer.getmany(timeout_ms=500)).values():
                    seen.extend(json.loads(record.value) for record in records)
                return [e for e in seen if e["tenant"] == str(tenant)]

            [event] = await eventually(
                audited, within=30, what=f"the query's audit event on {topic}"
            )
        finally:
            await consumer.stop()
    finally:
        await runtime.stop()
    assert event["producer"] == "mnemo.navigator"
    assert event["data"]["record"]["kind"] == "query"
