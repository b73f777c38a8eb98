"""Deterministic prefetch over a route (issue 25, the registry seed's worked example) over real HTTP:
the navigator served by its runtime on an ephemeral port (its own search gateway is asked over
HTTP like any other), and someone else's gateway as a separate process
(`deploy/local/external_gateway.py`) that records every request it receives.

`overdraft_fee_qa` scopes `fee-schedule` (a store corpus Mnemo hosts) and `product-disclosure`
(the external gateway); ids carry a fresh suffix so tests repeat against the shared database.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
from mnemo_auth import DEVELOPMENT_SECRET, mint_token
from mnemo_navigator.settings import Settings
from mnemo_store.registry import Route, apply_routes

from tests.infrastructure import free_port
from tests.integration.navigator.conftest import (
    Declare,
    NewTenant,
    audited_records,
    navigator_dsn,
    serving_navigator,
)

pytestmark = pytest.mark.timeout(120)

GATEWAY_SCRIPT = Path(__file__).resolve().parents[3] / "deploy" / "local" / "external_gateway.py"
TIMEOUT_SECONDS = 1.5
FEES = [
    {
        "id": "fs-overdraft",
        "tenant_id": "c1",
        "title": "Overdraft fee",
        "body": "The overdraft fee is 35 dollars per item, at most three per day.",
    },
    {
        "id": "fs-wire",
        "tenant_id": "c1",
        "title": "Wire transfer fee",
        "body": "An outgoing domestic wire costs 25 dollars.",
    },
]
GOAL = {"utterance": "what is the overdraft fee"}


@dataclass(frozen=True, slots=True)
class External:
    url: str

    def search_url(self, corpus: str) -> str:
        return f"{self.url}/corpora/{corpus}/search"

    def behave(self, corpus: str, behaviour: str) -> None:
        httpx.put(f"{self.url}/control/{corpus}", json={"behaviour": behaviour}).raise_for_status()

    def requests(self) -> list[dict[str, Any]]:
        answer = httpx.get(f"{self.url}/requests")
        answer.raise_for_status()
        return list(answer.json()["requests"])

    def forget(self) -> None:
        httpx.delete(f"{self.url}/requests").raise_for_status()


@pytest.fixture(scope="module")
def external() -> Iterator[External]:
    process = subprocess.Popen(
        [sys.executable, str(GATEWAY_SCRIPT), "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("listening on "), line
        yield External(line.split()[-1])
    finally:
        process.terminate()
        process.wait(10)


@pytest.fixture(scope="module")
async def navigator(app_dsn: str) -> AsyncIterator[str]:
    settings = Settings(
        port=free_port(),
        database_url=navigator_dsn(app_dsn),
        consume_requests=False,
        relay_outbox=False,
        token_secret=DEVELOPMENT_SECRET,
        prefetch_timeout_seconds=TIMEOUT_SECONDS,
    )
    async with serving_navigator(settings) as base:
        yield base


@dataclass
class Example:
    """The worked example, registered for one test."""

    base: str
    external: External
    owner: asyncpg.Connection
    tenant: uuid.UUID
    fees: str
    disclosure: str
    route: str

    def token(self, tenant: uuid.UUID | None = None, scopes: tuple[str, ...] = ("read",)) -> str:
        return mint_token(tenant=tenant or self.tenant, secret=DEVELOPMENT_SECRET, scopes=scopes)

    async def prefetch(
        self,
        route: str | None = None,
        body: dict[str, Any] | None = None,
        token: str | None = None,
    ) -> httpx.Response:
        async with httpx.AsyncClient(timeout=30) as client:
            return await client.post(
                f"{self.base}/v1/routes/{route or self.route}/prefetch",
                json=body if body is not None else {"goal": GOAL},
                headers={"Authorization": f"Bearer {token or self.token()}"},
            )

    async def status(self, corpus: str, status: str) -> None:
        await self.owner.execute(
            "UPDATE mnemo.corpora SET status = $2 WHERE corpus_id = $1", corpus, status
        )

    async def routes(self, *routes: Route) -> None:
        await apply_routes(self.owner, routes)


@pytest.fixture
async def example(
    navigator: str,
    external: External,
    declare: Declare,
    new_tenant: NewTenant,
    owner_connection: asyncpg.Connection,
) -> AsyncIterator[Example]:
    arena = await declare()
    tenant = await new_tenant()
    await arena.write(tenant, FEES)
    await owner_connection.execute(
        "UPDATE mnemo.corpora SET url = $2 WHERE corpus_id = $1",
        arena.name,
        f"{navigator}/v1/corpora/{arena.name}/search",
    )
    suffix = uuid.uuid4().hex[:10]
    disclosure = f"product-disclosure-{suffix}"
    await owner_connection.execute(
        "INSERT INTO mnemo.corpora (corpus_id, display_name, url, collection, auth, owner,"
        " status, kind, definition, version) VALUES ($1, 'Product disclosure', $2,"
        " 'product-disclosure', 'none', 'deposits', 'published', 'external', '{}', 'v1')",
        disclosure,
        external.search_url("product-disclosure"),
    )
    route = f"overdraft_fee_qa-{suffix}"
    made = Example(navigator, external, owner_connection, tenant, arena.name, disclosure, route)
    await made.routes(
        Route(route, "2026.08.1", "deterministic_prefetch", (arena.name, disclosure), True)
    )
    external.behave("product-disclosure", "ok")
    external.forget()
    yield made
    external.behave("product-disclosure", "ok")
    await owner_connection.execute("DELETE FROM mnemo.routes WHERE route_id LIKE $1", f"%-{suffix}")
    await owner_connection.execute("DELETE FROM mnemo.corpora WHERE corpus_id = $1", disclosure)


def error_of(response: httpx.Response) -> tuple[int, str, str]:
    body = response.json()
    return response.status_code, body["error"]["code"], body["error"]["message"]


async def test_the_worked_example_packs_both_corpora_tagged_with_their_ids_in_scope_order(
    example: Example,
) -> None:
    response = await example.prefetch()
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["route_id"] == example.route
    assert answer["route_version"] == "2026.08.1"
    slots = answer["slots"]
    assert set(slots) == {"prefetch", f"prefetch:{example.fees}", f"prefetch:{example.disclosure}"}
    fees = slots[f"prefetch:{example.fees}"]
    disclosure = slots[f"prefetch:{example.disclosure}"]
    assert fees["corpus_id"] == example.fees
    assert disclosure["corpus_id"] == example.disclosure
    assert fees["chunks"][0]["id"] == "fs-overdraft"
    assert {c["id"] for c in disclosure["chunks"]} == {"pd-overdraft-1", "pd-overdraft-2"}
    every = slots["prefetch"]["chunks"]
    assert every == fees["chunks"] + disclosure["chunks"]
    assert all(chunk["corpus_id"] in (example.fees, example.disclosure) for chunk in every)
    assert all(isinstance(chunk["tags"], list) for chunk in every)
    lines = answer["packed"].split("\n")
    assert len(lines) == len(every)
    assert lines[0].startswith(f"[{example.fees}:fs-overdraft] Overdraft fee The overdraft fee")
    assert f"[{example.disclosure}:pd-overdraft-1] Overdraft coverage is optional." in lines[-2]

    received = example.external.requests()
    assert [r["body"] for r in received] == [{"collection": "product-disclosure", "goal": GOAL}]
    assert received[0]["authorization"] is None  # the caller's token never leaves Mnemo

    records = [
        r for r in await audited_records(example.owner, example.tenant) if r["kind"] == "prefetch"
    ]
    assert len(records) == 1
    assert records[0]["action"] == f"route:{example.route}:prefetch"
    assert records[0]["route_version"] == "2026.08.1"
    assert records[0]["corpora"] == [example.fees, example.disclosure]
    assert records[0]["chunk_ids"] == [f"{c['corpus_id']}:{c['id']}" for c in every]
    assert records[0]["error"] is None


@pytest.mark.parametrize("which", ["fees", "disclosure"])
async def test_a_deprecated_corpus_fails_the_call_naming_it_and_no_gateway_is_asked(
    example: Example, which: str
) -> None:
    corpus = getattr(example, which)
    await example.status(corpus, "deprecated")
    response = await example.prefetch()
    status, code, message = error_of(response)
    assert (status, code) == (409, "CORPUS_NOT_PUBLISHED")
    assert f"corpus {corpus} is deprecated" in message
    assert f"{example.route}@2026.08.1" in message
    assert example.external.requests() == []
    audited = [
        r for r in await audited_records(example.owner, example.tenant) if r["kind"] == "prefetch"
    ]
    assert audited[-1]["error"] == message
    assert audited[-1]["chunk_ids"] == []


async def test_no_chunk_from_any_corpus_fails_closed(example: Example) -> None:
    example.external.behave("product-disclosure", "empty")
    response = await example.prefetch(body={"goal": {"utterance": "zzqx unmatched"}})
    status, code, message = error_of(response)
    assert (status, code) == (502, "PREFETCH_EMPTY")
    assert "prefetch returned no chunks" in message
    assert len(example.external.requests()) == 1


async def test_one_empty_corpus_is_fine_when_another_returns_chunks(example: Example) -> None:
    example.external.behave("product-disclosure", "empty")
    response = await example.prefetch()
    assert response.status_code == 200, response.text
    assert response.json()["slots"][f"prefetch:{example.disclosure}"]["chunks"] == []


@pytest.mark.parametrize(
    ("behaviour", "reason"),
    [
        ("error", "answered HTTP 500"),
        ("no-chunks", "answered without a 'chunks' list"),
        ("hang", f"did not answer within {TIMEOUT_SECONDS:g} s"),
    ],
)
async def test_a_failing_external_gateway_fails_the_call_naming_the_corpus(
    example: Example, behaviour: str, reason: str
) -> None:
    example.external.behave("product-disclosure", behaviour)
    started = time.monotonic()
    response = await example.prefetch()
    status, code, message = error_of(response)
    assert (status, code) == (502, "GATEWAY_FAILED")
    assert f"the gateway of corpus {example.disclosure} {reason}" in message
    assert "slots" not in response.json()
    assert time.monotonic() - started < TIMEOUT_SECONDS + 10


async def test_mnemos_own_gateway_failing_fails_the_call_naming_it(example: Example) -> None:
    await example.owner.execute(
        "UPDATE mnemo.corpora SET url = $2 WHERE corpus_id = $1",
        example.fees,
        f"{example.base}/v1/corpora/{example.fees}-missing/search",
    )
    status, code, message = error_of(await example.prefetch())
    assert (status, code) == (502, "GATEWAY_FAILED")
    assert f"the gateway of corpus {example.fees} answered HTTP 404" in message


async def test_a_tool_route_never_prefetches_and_never_calls_a_gateway(example: Example) -> None:
    tool = example.route.replace("overdraft_fee_qa", "fees_tool")
    await example.routes(Route(tool, "1", "tool", (example.fees, example.disclosure), True))
    status, code, message = error_of(await example.prefetch(route=tool))
    assert (status, code) == (409, "ROUTE_NOT_PREFETCH")
    assert "never prefetches" in message
    assert example.external.requests() == []


async def test_versions_coexist_and_a_named_version_runs_its_own_scope(example: Example) -> None:
    await example.routes(
        Route(example.route, "2026.09.1", "deterministic_prefetch", (example.disclosure,), True)
    )
    latest = (await example.prefetch()).json()
    assert latest["route_version"] == "2026.09.1"
    assert set(latest["slots"]) == {"prefetch", f"prefetch:{example.disclosure}"}
    older = await example.prefetch(body={"goal": GOAL, "version": "2026.08.1"})
    assert older.status_code == 200, older.text
    assert older.json()["route_version"] == "2026.08.1"
    assert f"prefetch:{example.fees}" in older.json()["slots"]
    status, code, _ = error_of(await example.prefetch(body={"goal": GOAL, "version": "0.0"}))
    assert (status, code) == (404, "NOT_FOUND")
    status, code, _ = error_of(await example.prefetch(route="no-such-route-" + uuid.uuid4().hex))
    assert (status, code) == (404, "NOT_FOUND")


async def test_mnemos_gateway_answers_under_the_callers_tenant_only(
    example: Example, new_tenant: NewTenant
) -> None:
    other = await new_tenant()
    response = await example.prefetch(token=example.token(other))
    assert response.status_code == 200, response.text
    assert response.json()["slots"][f"prefetch:{example.fees}"]["chunks"] == []
    assert all(
        c["corpus_id"] == example.disclosure for c in response.json()["slots"]["prefetch"]["chunks"]
    )
    # Mnemo's gateway audited its search, then prefetch its call, both in the caller's tenant.
    assert [r["kind"] for r in await audited_records(example.owner, other)] == ["query", "prefetch"]


async def test_a_caller_without_a_token_or_the_read_scope_is_refused_before_any_gateway(
    example: Example,
) -> None:
    async with httpx.AsyncClient(timeout=10) as client:
        anonymous = await client.post(
            f"{example.base}/v1/routes/{example.route}/prefetch", json={"goal": GOAL}
        )
    assert anonymous.status_code == 401
    status, _, _ = error_of(await example.prefetch(token=example.token(scopes=("write",))))
    assert status == 403
    status, _, _ = error_of(await example.prefetch(body={"goal": "not an object"}))
    assert status == 422
    assert example.external.requests() == []


def test_the_external_gateway_is_a_separate_process_speaking_json(external: External) -> None:
    answer = httpx.post(
        external.search_url("product-disclosure"),
        json={"collection": "product-disclosure", "goal": {"query": "savings rate"}},
    )
    assert answer.status_code == 200
    assert [c["id"] for c in answer.json()["chunks"]] == ["pd-savings-1"]
    json.dumps(answer.json())


async def test_a_row_of_another_id_on_mnemos_own_gateway_is_asked_with_the_callers_token(
    example: Example,
) -> None:
    """The seed's `fee-schedule`: a registry id of its own, served by Mnemo's gateway of a store
    corpus; the caller's token goes only to urls of this navigator."""
    hosted = example.route.replace("overdraft_fee_qa", "fee-schedule")
    await example.owner.execute(
        "INSERT INTO mnemo.corpora (corpus_id, display_name, url, collection, status, kind,"
        " definition, version) VALUES ($1, 'Fee schedule', $2, $3, 'published', 'external',"
        " '{}', 'v1')",
        hosted,
        f"{example.base}/v1/corpora/{example.fees}/search",
        example.fees,
    )
    try:
        route = example.route.replace("overdraft_fee_qa", "hosted_qa")
        await example.routes(
            Route(route, "1", "deterministic_prefetch", (hosted, example.disclosure), True)
        )
        response = await example.prefetch(route=route)
        assert response.status_code == 200, response.text
        chunks = response.json()["slots"][f"prefetch:{hosted}"]["chunks"]
        assert chunks[0]["id"] == "fs-overdraft"
        assert chunks[0]["corpus_id"] == hosted
        assert example.external.requests()[0]["authorization"] is None
    finally:
        await example.owner.execute("DELETE FROM mnemo.routes WHERE route_id LIKE 'hosted_qa-%'")
        await example.owner.execute("DELETE FROM mnemo.corpora WHERE corpus_id = $1", hosted)


async def test_a_client_confined_token_is_confined_by_mnemos_gateway_too(example: Example) -> None:
    """The caller's token reaches Mnemo's gateway as it is: a token confined to an end-client, on
    a corpus with no pinned scope, is refused there, and the prefetch fails closed naming it."""
    confined = mint_token(
        tenant=example.tenant,
        secret=DEVELOPMENT_SECRET,
        scopes=("read",),
        client={"tenant_id": "c2"},
    )
    status, code, message = error_of(await example.prefetch(token=confined))
    assert (status, code) == (502, "GATEWAY_FAILED")
    assert f"the gateway of corpus {example.fees} answered HTTP 403" in message
    assert example.external.requests() == []  # the call stopped at the first corpus
