"""Erasing a tenant on the running stack while its rows keep arriving over the HTTP write API:
nothing of it is left in any table, the navigator no longer answers its token (nor from its
cached graph), rows that arrive after the erase are dead-lettered by ingest with the reason (and
a replay of them is refused), and its audit chain verifies with every payload redacted."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import threading
import uuid
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
import httpx
from aiokafka import AIOKafkaProducer
from mnemo_auth import DEVELOPMENT_SECRET, mint_token
from mnemo_events import PERSIST, PersistRow, new_envelope
from mnemo_store.erasure import leftovers

from tests.e2e.test_client import _documents_store, stack_world
from tests.waiting import eventually_sync

ROOT = Path(__file__).resolve().parents[2]
MNEMO = str(ROOT / ".venv" / "bin" / "mnemo")


def mnemo(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MNEMO, *args], capture_output=True, text=True, timeout=120, check=False, env=os.environ
    )


def _hits(url: str, corpus: str, token: str) -> set[str]:
    answer = httpx.post(
        f"{url}/v1/corpora/{corpus}/navigate",
        json={"query": "remember recall", "budget": 20},
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    return {hit["id"] for hit in answer.json()["hits"]}


async def _produce(topic: str, key: bytes, value: bytes) -> None:
    producer = AIOKafkaProducer(
        bootstrap_servers=os.environ.get("MNEMO_KAFKA_BOOTSTRAP", "127.0.0.1:29092"), acks="all"
    )
    await producer.start()
    try:
        await producer.send_and_wait(topic, value=value, key=key)
    finally:
        await producer.stop()


async def _left(tenant: str) -> dict[str, int]:
    owner = await asyncpg.connect(os.environ["MNEMO_OWNER_DATABASE_URL"])
    try:
        return await leftovers(owner, uuid.UUID(tenant))
    finally:
        await owner.close()


def test_a_tenant_erased_while_rows_arrive_leaves_nothing_and_its_chain_verifies() -> None:
    with stack_world() as world:
        store = _documents_store(world.corpus)
        tenant = str(world.tenant_a)
        reader = world.token(world.tenant_a)
        writer = mint_token(
            tenant=world.tenant_a, secret=DEVELOPMENT_SECRET, scopes=("read", "write")
        )
        assert "ac1-1" in _hits(world.url, world.corpus, reader)  # its graph is cached now
        neighbour_before = _hits(world.url, world.corpus, world.token(world.tenant_b))

        stop = threading.Event()
        accepted: list[str] = []
        refused: list[str] = []

        def keep_writing() -> None:
            with httpx.Client(timeout=30) as http:
                n = 0
                while not stop.is_set():
                    n += 1
                    answer = http.post(
                        f"{world.url}/v1/stores/{store}/rows",
                        json={
                            "rows": [
                                {"id": f"late-{n}", "tenant_id": "c1", "title": "remember recall"}
                            ]
                        },
                        headers={"Authorization": f"Bearer {writer}"},
                    )
                    # 403: the navigator knows the tenant is gone; 410: the row was queued in the
                    # outbox and the erase removed it before the relay sent it.
                    if answer.status_code in (403, 410):
                        refused.append(answer.json()["error"]["code"])
                        return
                    assert answer.status_code == 202, answer.text
                    accepted.extend(answer.json()["event_ids"])

        writers = [threading.Thread(target=keep_writing) for _ in range(2)]
        for thread in writers:
            thread.start()
        eventually_sync(
            lambda: len(accepted) >= 20,
            within=30,
            what=lambda: f"the writers got {len(accepted)} rows accepted, not 20",
            every=0.05,
        )
        erased = mnemo("tenant", "erase", tenant, "--yes", "--json")
        assert erased.returncode == 0, erased.stderr
        assert json.loads(erased.stdout)["left"] == {}
        for thread in writers:
            thread.join(30)
        stop.set()
        assert len(refused) == len(writers)
        assert set(refused) <= {"UNKNOWN_TENANT", "TENANT_ERASED"}

        # A last row straight onto the persist topic (the navigator and `mnemo persist` no longer
        # take any): the tenant's rows share a partition, so once ingest has dead-lettered it,
        # everything accepted before it has been processed too.
        since = datetime.now(UTC).isoformat()
        last = new_envelope(
            PersistRow(store=store, values={"id": "last", "tenant_id": "c1", "title": "recall"}),
            tenant=world.tenant_a,
            producer="e2e-test",
            event_type=PERSIST,
        )
        asyncio.run(
            _produce(PERSIST, str(world.tenant_a).encode(), last.model_dump_json().encode())
        )

        def dead_letters() -> list[dict[str, str]]:
            listed = mnemo(
                "dlt",
                "list",
                "--topic",
                "mnemo.persist.v1",
                "--tenant",
                tenant,
                "--since",
                since,
                "--json",
            )
            assert listed.returncode == 0, listed.stderr
            return [json.loads(line) for line in listed.stdout.splitlines()]

        letters = eventually_sync(
            dead_letters, within=90, what="ingest dead-lettered nothing", every=0.5
        )
        assert "has been erased" in letters[0]["reason"] or "unknown tenant" in letters[0]["reason"]
        # Its dead letter is never published again: a replay refuses it, naming it.
        replayed = mnemo("dlt", "replay", letters[0]["name"], "--wait", "0")
        assert replayed.returncode == 1, replayed.stdout
        assert f"not replayed {letters[0]['name']}: tenant {tenant} was erased" in replayed.stderr

        assert asyncio.run(_left(tenant)) == {}
        # The erased tenant's token no longer navigates (its cached graph is never served).
        gone = httpx.post(
            f"{world.url}/v1/corpora/{world.corpus}/navigate",
            json={"query": "remember recall", "budget": 20},
            headers={"Authorization": f"Bearer {reader}"},
            timeout=30,
        )
        assert (gone.status_code, gone.json()["error"]["code"]) == (403, "UNKNOWN_TENANT")
        assert _hits(world.url, world.corpus, world.token(world.tenant_b)) == neighbour_before

        verified = mnemo("audit", "verify", "--tenant", tenant, "--json")
        assert verified.returncode == 0, verified.stderr
        report = json.loads(verified.stdout)
        assert report["ok"] is True
        assert report["rows"] == report["redacted"]
