"""`mnemo forget` against an ingest process of this module's own (its forget topic stands in for
`mnemo.forget.v1`), over real Kafka and Postgres: the document goes with its edges; a document
of another tenant, an unknown tenant and a store that holds no documents stop the command before
anything is sent."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from mnemo_cli.commands import forget as forget_module
from mnemo_cli.main import main

from tests.integration.ingest.conftest import IngestProcess, envelope, table, until

pytestmark = pytest.mark.timeout(120)


def doc(sub: uuid.UUID, doc_id: uuid.UUID) -> dict[str, Any]:
    return {"id": str(doc_id), "tenant_id": str(sub), "title": "t", "body": None}


async def seed(ingest: IngestProcess, tenant: uuid.UUID, a: uuid.UUID, b: uuid.UUID) -> None:
    sub = uuid.uuid4()
    edge = {"from_id": str(a), "to_id": str(b), "etype": "cite", "weight": 0.5}
    await ingest.produce(
        [
            envelope(tenant, ingest.docs, doc(sub, a)),
            envelope(tenant, ingest.docs, doc(sub, b)),
            envelope(tenant, ingest.edges, {**edge, "tenant_id": str(sub)}),
        ]
    )

    async def landed() -> bool:
        return await ingest.count(tenant, table(ingest.edges), f"from_id = '{a}'") == 1

    await until(landed)


def test_mnemo_forget_removes_the_document_and_its_edges_and_refuses_what_it_cannot_see(
    ingest: IngestProcess,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(forget_module, "FORGET", ingest.forget_topic)
    tenant, other = ingest.tenants[0], ingest.tenants[1]
    a, b = uuid.uuid4(), uuid.uuid4()
    asyncio.run(seed(ingest, tenant, a, b))
    base = ["forget", "--store", ingest.docs]

    assert main([*base, "--tenant", str(other), str(a)]) == 1
    assert "nothing sent" in capsys.readouterr().err
    assert main([*base, "--tenant", str(uuid.uuid4()), str(a)]) == 1
    assert "no tenant" in capsys.readouterr().err
    assert main(["forget", "--store", ingest.edges, "--tenant", str(tenant), str(a)]) == 1
    assert "as its documents" in capsys.readouterr().err
    assert asyncio.run(ingest.count(tenant, table(ingest.docs), f"id = '{a}'")) == 1

    assert main([*base, "--tenant", str(tenant), str(a), "--wait", "30"]) == 0
    assert "ingest forgot it" in capsys.readouterr().out
    assert asyncio.run(ingest.count(tenant, table(ingest.docs), f"id = '{a}'")) == 0
    assert asyncio.run(ingest.count(tenant, table(ingest.edges), f"from_id = '{a}'")) == 0
    assert asyncio.run(ingest.count(tenant, table(ingest.docs), f"id = '{b}'")) == 1
