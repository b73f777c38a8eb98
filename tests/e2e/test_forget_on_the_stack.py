"""Forgetting a memory on the running stack (navigator 8080, ingest, audit 8083): `DELETE
/v1/stores/{store}/rows/{id}` goes through Kafka to ingest; the next navigation is without the
document and its edges; the audit log gets `store:<name>:delete` and its chain still verifies;
another tenant's delete of it is a 404 and a client-confined token on a corpus without a pinned
scope a 403, both removing nothing."""

from __future__ import annotations

import os

import httpx
from mnemo_auth import DEVELOPMENT_SECRET, mint_token

from tests.e2e.test_client import _documents_store, stack_world
from tests.waiting import eventually_sync

AUDIT = os.environ.get("MNEMO_AUDIT_URL", "http://127.0.0.1:8083")


def _hits(url: str, corpus: str, token: str) -> set[str]:
    answer = httpx.post(
        f"{url}/v1/corpora/{corpus}/navigate",
        json={"query": "remember recall", "budget": 20},
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    return {hit["id"] for hit in answer.json()["hits"]}


def test_a_document_forgotten_over_http_is_gone_from_the_next_answer_and_audited() -> None:
    with stack_world() as world:
        store = _documents_store(world.corpus)
        reader = world.token(world.tenant_a)
        writer = mint_token(
            tenant=world.tenant_a, secret=DEVELOPMENT_SECRET, scopes=("read", "write")
        )
        stranger = mint_token(
            tenant=world.tenant_b, secret=DEVELOPMENT_SECRET, scopes=("read", "write")
        )
        confined = mint_token(
            tenant=world.tenant_a,
            secret=DEVELOPMENT_SECRET,
            scopes=("read", "write"),
            client={"tenant_id": "c1"},
        )
        assert "ac1-1" in _hits(world.url, world.corpus, reader)  # cached now
        url = f"{world.url}/v1/stores/{store}/rows/ac1-1"

        refused = httpx.delete(url, headers={"Authorization": f"Bearer {stranger}"}, timeout=30)
        assert (refused.status_code, refused.json()["error"]["code"]) == (404, "NOT_FOUND")
        unpinned = httpx.delete(url, headers={"Authorization": f"Bearer {confined}"}, timeout=30)
        assert unpinned.status_code == 403, unpinned.text
        assert "ac1-1" in _hits(world.url, world.corpus, reader)

        done = httpx.delete(
            url, params={"wait": 30}, headers={"Authorization": f"Bearer {writer}"}, timeout=60
        )
        assert done.status_code == 202, done.text
        assert done.json()["processed"] is True
        after = _hits(world.url, world.corpus, reader)
        assert "ac1-1" not in after
        assert "ac1-0" in after

        # The audit service appends ingest's delete record; the chain verifies with it.
        auditor = mint_token(tenant=world.tenant_a, secret=DEVELOPMENT_SECRET, scopes=("audit",))

        def delete_rows() -> list[dict[str, object]]:
            page = httpx.get(
                f"{AUDIT}/v1/audit",
                params={"type": f"store:{store}:delete"},
                headers={"Authorization": f"Bearer {auditor}"},
                timeout=10,
            )
            assert page.status_code == 200, page.text
            return [row for row in page.json()["items"] if "ac1-1" in str(row)]

        found = eventually_sync(
            delete_rows, within=30, what="no store:<name>:delete audit row", every=0.3
        )
        assert "remember recall" not in str(found[0])
        verified = httpx.get(
            f"{AUDIT}/v1/audit/verify", headers={"Authorization": f"Bearer {auditor}"}, timeout=30
        )
        assert verified.status_code == 200, verified.text
        assert verified.json()["ok"] is True
