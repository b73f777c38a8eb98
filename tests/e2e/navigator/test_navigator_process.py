"""The running navigator over real HTTP and real Kafka: tenants and end-clients, tokens, the
OpenAPI document fuzzed by schemathesis, and navigate requests over Kafka."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from pathlib import Path

import httpx
from mnemo_events import NAVIGATE_COMPLETED, NAVIGATE_REQUESTED
from mnemo_events.models import Envelope, NavigateCompleted, NavigateRequested, new_envelope
from mnemo_events.settings import KafkaSettings

from tests.e2e.navigator.conftest import Running


def _ids(response: httpx.Response, key: str) -> set[str]:
    assert response.status_code == 200, response.text
    return {item["id"] for item in response.json()[key]}


def test_client_tokens_are_confined_and_tenant_wide_tokens_see_all_of_their_tenant_only(
    navigator: Running,
) -> None:
    url = f"{navigator.url}/v1/corpora/{navigator.pinned.name}"
    body = {"query": "remember recall note", "budget": 20}
    confined = navigator.headers(navigator.tenant_a, {"tenant_id": "c1"})
    for where in (None, "tenant_id LIKE '%'", "tenant_id == 'c2'"):
        ids = _ids(
            httpx.post(f"{url}/navigate", json={**body, "where": where}, headers=confined), "hits"
        )
        assert ids or where == "tenant_id == 'c2'", where  # c1 AND c2: nothing, never c2's rows
        assert all(i.startswith("ac1-") for i in ids), (where, ids)
    wide = _ids(
        httpx.post(
            f"{url}/retrieve",
            json={"query": "remember", "k": 50},
            headers=navigator.headers(navigator.tenant_a),
        ),
        "items",
    )
    assert {i[:3] for i in wide} == {"ac1", "ac2"}
    other = _ids(
        httpx.post(
            f"{url}/retrieve",
            json={"query": "remember", "k": 50},
            headers=navigator.headers(navigator.tenant_b),
        ),
        "items",
    )
    assert {i[:3] for i in other} == {"bc1"}
    unpinned = httpx.post(
        f"{navigator.url}/v1/corpora/{navigator.open.name}/navigate", json=body, headers=confined
    )
    assert unpinned.status_code == 403


def test_missing_expired_and_forged_tokens_get_401(navigator: Running) -> None:
    from datetime import timedelta

    from mnemo_auth import DEVELOPMENT_SECRET, mint_token

    url = f"{navigator.url}/v1/corpora/{navigator.pinned.name}/navigate"
    expired = mint_token(
        tenant=navigator.tenant_a, secret=DEVELOPMENT_SECRET, ttl=timedelta(seconds=-60)
    )
    forged = mint_token(tenant=navigator.tenant_a, secret="x" * 40)
    assert httpx.post(url, json={"query": "x"}).status_code == 401
    for token in (expired, forged, "garbage"):
        response = httpx.post(
            url, json={"query": "x"}, headers={"Authorization": f"Bearer {token}"}
        )
        assert response.status_code == 401
        assert "error" in response.json()


def test_the_openapi_document_fuzzed_by_schemathesis_never_gets_a_server_error(
    navigator: Running, tmp_path: Path
) -> None:
    token = navigator.headers(navigator.tenant_a)["Authorization"]
    config = tmp_path / "schemathesis.toml"
    # Half the runs name a real published corpus, so the fuzzing reaches past the 404.
    # A prefetch's 502 is its declared answer when a route's gateway fails (the registry may hold
    # routes whose gateways are down); status_code_conformance still holds it to the document.
    config.write_text(
        f'[parameters]\n"path.corpus" = "{navigator.pinned.name}"\n\n'
        "[[operations]]\n"
        'include-path = "/v1/routes/{route_id}/prefetch"\n'
        'checks.not_a_server_error.expected-statuses = ["2XX", "3XX", "4XX", 502]\n'
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "schemathesis.cli",
            "--config-file",
            str(config),
            "run",
            f"{navigator.url}/openapi.json",
            "--checks",
            "not_a_server_error,status_code_conformance",
            "--header",
            f"Authorization: {token}",
            "--max-examples",
            "25",
            "--seed",
            "1",
            "--request-timeout",
            "20",
        ],
        capture_output=True,
        text=True,
        timeout=500,
    )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]


def test_a_navigate_request_over_kafka_is_answered_by_request_id(navigator: Running) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    settings = KafkaSettings()
    request_id = uuid.uuid4()

    async def exchange() -> NavigateCompleted:
        consumer = AIOKafkaConsumer(
            NAVIGATE_COMPLETED,
            bootstrap_servers=settings.bootstrap,
            auto_offset_reset="latest",
            group_id=f"test-{request_id}",
        )
        await consumer.start()
        try:
            while not consumer.assignment():
                await consumer.getmany(timeout_ms=200)
            producer = AIOKafkaProducer(bootstrap_servers=settings.bootstrap)
            await producer.start()
            try:
                envelope = new_envelope(
                    NavigateRequested(
                        request_id=request_id,
                        corpus=navigator.pinned.name,
                        query="remember recall",
                        client={"tenant_id": "c2"},
                    ),
                    tenant=navigator.tenant_a,
                    producer="test",
                    event_type=NAVIGATE_REQUESTED,
                )
                token = navigator.headers(navigator.tenant_a, {"tenant_id": "c2"})["Authorization"]
                await producer.send_and_wait(
                    navigator.requests_topic,
                    envelope.model_dump_json().encode(),
                    key=str(navigator.tenant_a).encode(),
                    headers=[("authorization", token.encode())],
                )
            finally:
                await producer.stop()
            deadline = asyncio.get_running_loop().time() + 60
            while asyncio.get_running_loop().time() < deadline:
                batches = await consumer.getmany(timeout_ms=500)
                for records in batches.values():
                    for record in records:
                        answer = Envelope[NavigateCompleted].model_validate_json(record.value)
                        if answer.data.request_id == request_id:
                            return answer.data
            raise AssertionError("no navigate.completed answer within 60 s")
        finally:
            await consumer.stop()

    answer = asyncio.run(exchange())
    assert answer.ok, answer.error
    assert answer.hits
    assert all(hit.id.startswith("ac2-") for hit in answer.hits)
