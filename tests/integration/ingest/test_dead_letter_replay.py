"""`mnemo dlt list|show|replay` against an ingest process of this module's own, over real Kafka and
Postgres: dead letters are found by topic, tenant, reason and time; a replay republishes the
original bytes and headers once, so a row refused for a tenant that did not exist yet lands once
the tenant does (and once only, however often it is replayed); a record the consumer refuses
again is counted as failed again, with its new dead letter naming the one it replays."""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import pytest
from mnemo_cli.main import main
from mnemo_events.dead_letter_replay import REPLAY_OF, DeadLetterFilter, read_dead_letters
from mnemo_events.settings import KafkaSettings

from tests.integration.ingest.conftest import IngestProcess, envelope, table, until

pytestmark = pytest.mark.timeout(180)


def listed(capsys: pytest.CaptureFixture[str], *args: str) -> list[dict[str, Any]]:
    assert main(["dlt", "list", *args, "--json"]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line]


async def create_tenant(owner_dsn: str, tenant: uuid.UUID) -> None:
    owner = await asyncpg.connect(owner_dsn)
    try:
        await owner.execute(
            "INSERT INTO mnemo.tenants (tenant_id, name) VALUES ($1, $2)",
            tenant,
            f"test-replay-{tenant.hex[:20]}",
        )
    finally:
        await owner.close()


def test_dead_letters_are_listed_shown_and_replayed_once_and_a_refusal_again_is_counted(
    ingest: IngestProcess, capsys: pytest.CaptureFixture[str]
) -> None:
    late = uuid.uuid4()  # a tenant that does not exist yet
    doc_id = uuid.uuid4()
    row = {"id": str(doc_id), "tenant_id": str(uuid.uuid4()), "title": "late", "body": None}
    early = envelope(late, ingest.docs, row)
    malformed = (str(late).encode(), b'{"event_id": "not an envelope"')
    asyncio.run(ingest.produce([early, malformed]))
    settings = KafkaSettings()

    async def both_dead() -> bool:
        found = await read_dead_letters(settings, [ingest.topic], DeadLetterFilter(tenant=late))
        return len(found) == 2

    asyncio.run(until(both_dead))

    mine = listed(capsys, "--topic", ingest.topic, "--tenant", str(late))
    assert len(mine) == 2
    by_reason = {("unknown tenant" in m["reason"]): m for m in mine}
    refused, broken = by_reason[True], by_reason[False]
    assert broken["reason"].startswith("invalid envelope")
    assert refused["event_id"] == json.loads(early[1])["event_id"]
    assert listed(
        capsys, "--topic", ingest.topic, "--tenant", str(late), "--reason", "INVALID"
    ) == [broken]
    future = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    assert listed(capsys, "--topic", ingest.topic, "--tenant", str(late), "--since", future) == []
    past = (datetime.now(UTC) - timedelta(hours=1)).isoformat()
    assert len(listed(capsys, "--topic", ingest.topic, "--tenant", str(late), "--since", past)) == 2

    assert main(["dlt", "show", refused["name"]]) == 0
    shown = capsys.readouterr().out
    assert "header mnemo-dlt-reason: unknown tenant" in shown
    assert f'"id":"{doc_id}"' in shown.replace(" ", "")

    # The tenant now exists: the refused row is replayed and lands; the malformed record fails
    # again, and its new dead letter names the one it replays.
    asyncio.run(create_tenant(ingest.owner_dsn, late))
    ingest.tenants.append(late)  # removed with the module's tenants
    code = main(["dlt", "replay", refused["name"], broken["name"], "--wait", "30"])
    out = capsys.readouterr().out
    assert code == 1, out
    assert "replay: 2 replayed, 1 failed again" in out
    assert f"failed again {broken['name']}: invalid envelope" in out

    async def landed() -> bool:
        return await ingest.count(late, table(ingest.docs), f"id = '{doc_id}'") == 1

    asyncio.run(until(landed))
    again = [
        m
        for m in listed(capsys, "--topic", ingest.topic, "--tenant", str(late))
        if m["replay_of"] == broken["name"]
    ]
    assert len(again) == 1

    # Replayed before: skipped; forced again, the inbox keeps the row written once.
    assert main(["dlt", "replay", refused["name"], "--wait", "0"]) == 0
    assert "0 replayed, 0 failed again within 0 s, 1 skipped" in capsys.readouterr().out
    assert main(["dlt", "replay", refused["name"], "--again", "--wait", "3"]) == 0
    assert "1 replayed, 0 failed again" in capsys.readouterr().out

    async def processed_twice_written_once() -> bool:
        replays = await ingest.count(
            late, "mnemo.inbox", f"event_id = '{refused['event_id']}' AND consumer = 'mnemo.ingest'"
        )
        return replays == 1 and await ingest.count(late, table(ingest.docs)) == 1

    asyncio.run(until(processed_twice_written_once))
    assert REPLAY_OF == "mnemo-replay-of"


def test_replay_refuses_to_run_without_a_selection_and_names_a_bad_name(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["dlt", "replay"]) == 2
    assert "--all replays every one" in capsys.readouterr().err
    assert main(["dlt", "show", "not-a-name"]) == 2
    assert "TOPIC.dlt:PARTITION:OFFSET" in capsys.readouterr().err
    assert main(["dlt", "list", "--since", "yesterday"]) == 2
    assert "ISO 8601" in capsys.readouterr().err


def test_an_erased_tenants_dead_letters_are_never_replayed_and_the_refusal_names_them(
    ingest: IngestProcess, capsys: pytest.CaptureFixture[str]
) -> None:
    gone = uuid.uuid4()  # does not exist yet: its row is dead-lettered, then it is erased
    row = {"id": str(uuid.uuid4()), "tenant_id": "c1", "title": "private", "body": None}
    # The same row under another tenant's key: refused (key and envelope disagree), and its
    # dead letter is listed under the key's tenant, but it carries the erased tenant's data.
    decoy = uuid.uuid4()
    disguised = (str(decoy).encode(), envelope(gone, ingest.docs, row)[1])
    asyncio.run(ingest.produce([envelope(gone, ingest.docs, row), disguised]))
    settings = KafkaSettings()

    async def dead() -> bool:
        found = await read_dead_letters(
            settings, [ingest.topic], DeadLetterFilter(tenant=gone)
        ) + await read_dead_letters(settings, [ingest.topic], DeadLetterFilter(tenant=decoy))
        return len(found) == 2

    asyncio.run(until(dead))
    [letter] = listed(capsys, "--topic", ingest.topic, "--tenant", str(gone))
    [hidden] = listed(capsys, "--topic", ingest.topic, "--tenant", str(decoy))
    asyncio.run(create_tenant(ingest.owner_dsn, gone))
    assert main(["tenant", "erase", str(gone), "--yes"]) == 0
    capsys.readouterr()

    for extra in (["--dry-run"], ["--wait", "0"], ["--again", "--wait", "0"]):
        code = main(["dlt", "replay", "--topic", ingest.topic, "--tenant", str(gone), *extra])
        out, err = capsys.readouterr()
        assert code == 1, out
        assert f"not replayed {letter['name']}: tenant {gone} was erased" in err
        assert "1 refused (tenant erased)" in out
        assert "would replay" not in out
        assert "replay: 0 " in out
    code = main(["dlt", "replay", hidden["name"], "--wait", "0"])
    out, err = capsys.readouterr()
    assert code == 1, out
    assert f"not replayed {hidden['name']}: tenant {gone} was erased" in err
    assert "replay: 0 replayed" in out
    # Still listed (only its retention removes it from the topic): by name, never its content.
    assert [m["name"] for m in listed(capsys, "--topic", ingest.topic, "--tenant", str(gone))] == [
        letter["name"]
    ]
