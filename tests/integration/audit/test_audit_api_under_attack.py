"""The audit HTTP API against hostile callers, over the real audit log in Postgres: a token confined
to one end-client reads only that client's rows, a token for a tenant that does not exist is
refused, and no query parameter (NUL, lone surrogates, times out of range) makes it answer 500."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Mapping
from typing import Any
from urllib.parse import quote

import asyncpg
import httpx
import pytest
from fastapi import FastAPI
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mnemo_audit.routes import audit_router
from mnemo_audit.use_cases import audit_event
from mnemo_auth import DEVELOPMENT_SECRET, TokenKeys, TokenVerifier, mint_token
from mnemo_events import AUDIT, AuditRecorded, PersistAudited, QueryAudited, new_envelope
from mnemo_store.audit_log import AuditLog, NewAuditEvent

pytestmark = pytest.mark.timeout(300)

ALICE = {"tenant_id": "alice-co"}
BOB = {"tenant_id": "bob-co"}


def query_row(
    tenant: uuid.UUID,
    text: str,
    *,
    client: Mapping[str, str] | None,
    principal: str = "agent",
    corpus: str = "Docs",
) -> NewAuditEvent:
    record = QueryAudited(
        action=f"corpus:{corpus}:query",
        corpus=corpus,
        operation="navigate",
        query=text,
        query_digest="sha256:" + "0" * 64,
        k_returned=1,
        latency_ms=1.0,
        top_similarity=None,
        returned_ids=(f"doc-of-{text}",),
        scope_digest="sha256:scope",
        principal=principal,
        trace_id=None,
        client=None if client is None else dict(client),
    )
    return audit_event(
        new_envelope(
            AuditRecorded(record=record), tenant=tenant, producer="navigator", event_type=AUDIT
        )
    )


def persist_row(tenant: uuid.UUID) -> NewAuditEvent:
    record = PersistAudited(
        action="store:Docs:persist",
        store="Docs",
        row_ids=("doc-1",),
        source_event_ids=(uuid.uuid4(),),
        principal="ingest",
        trace_id=None,
    )
    return audit_event(
        new_envelope(
            AuditRecorded(record=record), tenant=tenant, producer="ingest", event_type=AUDIT
        )
    )


@pytest.fixture(scope="module")
async def tenant(owner: asyncpg.Connection, audit_log: AuditLog) -> uuid.UUID:
    """One tenant, two end-clients: each client's queries, a tenant-wide query, a persist, and
    rows that only look like a client's (a subject naming it, a superset of its claim)."""
    created: uuid.UUID = await owner.fetchval(
        "INSERT INTO mnemo.tenants (name) VALUES ($1) RETURNING tenant_id",
        f"test-audit-clients-{uuid.uuid4().hex[:12]}",
    )
    await audit_log.append(
        created,
        [
            query_row(
                created, "alice one", client=ALICE, principal="a (client tenant_id=alice-co)"
            ),
            query_row(created, "bob one", client=BOB, principal="b (client tenant_id=bob-co)"),
            query_row(created, "alice two", client=ALICE, corpus="Notes"),
            query_row(created, "bob two", client=BOB, corpus="Notes"),
            query_row(created, "tenant wide", client=None),
            persist_row(created),
            query_row(
                created, "forged by subject", client=None, principal="x (client tenant_id=alice-co)"
            ),
            query_row(created, "wider claim", client={**ALICE, "region": "eu"}),
            query_row(created, "alice three", client=ALICE),
        ],
    )
    return created


@pytest.fixture(scope="module")
async def http(audit_log: AuditLog) -> AsyncIterator[httpx.AsyncClient]:
    """The service's audit router over the real audit log, as the audit role reads it."""
    app = FastAPI()
    verifier = TokenVerifier(TokenKeys(secret=DEVELOPMENT_SECRET))
    app.include_router(audit_router(verifier, lambda: audit_log, page_limit=1000))
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://audit"
    ) as client:
        yield client


def bearer(
    tenant: uuid.UUID, client: Mapping[str, str] | None = None, scopes: tuple[str, ...] = ("audit",)
) -> dict[str, str]:
    token = mint_token(tenant=tenant, secret=DEVELOPMENT_SECRET, scopes=scopes, client=client)
    return {"Authorization": f"Bearer {token}"}


async def queries(
    http: httpx.AsyncClient, headers: dict[str, str], **params: Any
) -> list[str | None]:
    answer = await http.get("/v1/audit", headers=headers, params=params)
    assert answer.status_code == 200, answer.text
    return [item["payload"].get("query") for item in answer.json()["items"]]


async def test_a_client_token_reads_only_the_rows_of_its_own_end_client(
    http: httpx.AsyncClient, tenant: uuid.UUID
) -> None:
    assert await queries(http, bearer(tenant, ALICE)) == ["alice one", "alice two", "alice three"]
    assert await queries(http, bearer(tenant, BOB)) == ["bob one", "bob two"]
    assert await queries(http, bearer(tenant, {"tenant_id": "nobody"})) == []


async def test_filters_and_paging_stay_inside_the_client(
    http: httpx.AsyncClient, tenant: uuid.UUID
) -> None:
    alice = bearer(tenant, ALICE)
    assert await queries(http, alice, corpus="Notes") == ["alice two"]
    assert await queries(http, alice, type="persist") == []
    seen: list[str | None] = []
    after = 0
    while True:
        answer = await http.get("/v1/audit", headers=alice, params={"after": after, "limit": 1})
        page = answer.json()
        seen += [item["payload"]["query"] for item in page["items"]]
        if page["next_after"] is None:
            break
        after = page["next_after"]
    assert seen == ["alice one", "alice two", "alice three"]


async def test_a_tenant_wide_token_reads_every_clients_rows(
    http: httpx.AsyncClient, tenant: uuid.UUID
) -> None:
    everything = await queries(http, bearer(tenant))
    assert everything == [
        "alice one",
        "bob one",
        "alice two",
        "bob two",
        "tenant wide",
        None,  # the persist row
        "forged by subject",
        "wider claim",
        "alice three",
    ]
    assert await queries(http, bearer(tenant, scopes=("admin",))) == everything


async def test_a_client_token_may_not_verify_the_whole_tenants_chain(
    http: httpx.AsyncClient, tenant: uuid.UUID
) -> None:
    refused = await http.get("/v1/audit/verify", headers=bearer(tenant, ALICE))
    assert refused.status_code == 403
    assert "tenant-wide token" in refused.json()["detail"]
    verified = await http.get("/v1/audit/verify", headers=bearer(tenant))
    assert verified.status_code == 200
    assert verified.json()["ok"] is True
    assert verified.json()["rows"] == 9


@pytest.mark.parametrize("path", ["/v1/audit", "/v1/audit/verify"])
async def test_a_token_for_a_tenant_that_does_not_exist_is_refused_not_served_empty(
    http: httpx.AsyncClient, path: str
) -> None:
    ghost = uuid.uuid4()
    answer = await http.get(path, headers=bearer(ghost))
    assert answer.status_code == 403
    assert f"tenant {ghost} does not exist" in answer.json()["detail"]


async def test_an_unauthenticated_hostile_request_is_a_401_before_its_parameters_are_read(
    http: httpx.AsyncClient,
) -> None:
    assert (await http.get("/v1/audit?corpus=%00")).status_code == 401


@pytest.mark.parametrize(
    "query",
    [
        "corpus=%00",
        "type=%00",
        "corpus=a%00b",
        "type=corpus:%00:query",
        "unknown=%00",
        "%00=x",
        "since=0001-01-01T00:00:00%2B23:59",
        "until=9999-12-31T23:59:59-23:59",
    ],
)
async def test_text_the_log_cannot_hold_is_a_422_with_the_reason(
    http: httpx.AsyncClient, tenant: uuid.UUID, query: str
) -> None:
    answer = await http.get(f"/v1/audit?{query}", headers=bearer(tenant))
    assert answer.status_code == 422, answer.text
    detail = answer.json()["detail"]
    assert "NUL" in detail or "range" in detail


NAMES = ("corpus", "type", "since", "until", "after", "limit", "unknown")


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    st.sampled_from(NAMES),
    st.one_of(
        st.text(max_size=40),
        st.text(alphabet=st.characters(codec=None, categories=["Cs", "Cc", "Cf"]), max_size=8),
        st.sampled_from(
            [
                "0001-01-01T00:00:00+23:59",
                "9999-12-31T23:59:59-23:59",
                "2026-13-40T25:61:61Z",
                "-1",
                str(2**63),
                "1e309",
                "NaN",
                "x" * 301,
            ]
        ),
    ),
)
async def test_no_query_parameter_makes_the_audit_api_fail(
    http: httpx.AsyncClient, tenant: uuid.UUID, name: str, value: str
) -> None:
    encoded = quote(value.encode("utf-8", "surrogatepass"), safe="")
    answer = await http.get(f"/v1/audit?{name}={encoded}", headers=bearer(tenant, ALICE))
    assert answer.status_code in (200, 422), (name, value, answer.status_code, answer.text)
    if "\x00" in value:
        assert answer.status_code == 422
    if answer.status_code == 200:
        for item in answer.json()["items"]:
            assert item["payload"]["client"] == ALICE
