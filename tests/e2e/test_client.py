"""mnemo-client against the running stack's navigator (127.0.0.1:8080): its pydantic models equal
the served OpenAPI document for every endpoint it calls, the README's example runs as written,
and the token alone decides what a caller reads (tenant, end-client)."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from mnemo_auth import DEVELOPMENT_SECRET, mint_token
from mnemo_client import (
    AsyncMnemoClient,
    MnemoClient,
    MnemoCorpus,
    NotFoundError,
    PermissionDeniedError,
    models,
)
from mnemo_corpus import CorpusProtocol
from pydantic import BaseModel

from tests.e2e.navigator.conftest import _declare, _drop

ROOT = Path(__file__).resolve().parents[2]
NAVIGATOR = os.environ.get("MNEMO_NAVIGATOR_URL", "http://127.0.0.1:8080")


@dataclass(frozen=True, slots=True)
class World:
    """A published corpus on the stack's navigator (no pinned scope there), holding documents of
    two new tenants: a's end-clients c1 and c2 (ids `ac1-0`…), b's end-client c1 (`bc1-0`…)."""

    url: str
    corpus: str
    tenant_a: uuid.UUID
    tenant_b: uuid.UUID

    def token(self, tenant: uuid.UUID, client: dict[str, str] | None = None) -> str:
        return mint_token(tenant=tenant, secret=DEVELOPMENT_SECRET, client=client)


@contextmanager
def stack_world() -> Iterator[World]:
    owner_dsn = os.environ.get("MNEMO_OWNER_DATABASE_URL")
    if not owner_dsn:
        pytest.fail("e2e tests need the local stack: run them through `make test` (or `make up`)")
    try:
        ready = httpx.get(f"{NAVIGATOR}/readyz", timeout=5).status_code == 200
    except httpx.TransportError:
        ready = False
    if not ready:
        pytest.fail(f"the stack's navigator does not answer at {NAVIGATOR}: run `make up`")
    first, second, tenant_a, tenant_b = asyncio.run(_declare(owner_dsn))
    try:
        yield World(NAVIGATOR, second.name, tenant_a, tenant_b)
    finally:
        asyncio.run(_drop(owner_dsn, [first, second], [tenant_a, tenant_b]))


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    with stack_world() as made:
        yield made


# The client's model of each served schema, and the mode it is read in (bodies are validated,
# answers serialised).
SCHEMAS: dict[str, tuple[type[BaseModel], str]] = {
    "NavigateBody": (models.NavigateRequest, "validation"),
    "NavigateOut": (models.NavigateResponse, "serialization"),
    "HitOut": (models.Hit, "serialization"),
    "ViaOut": (models.Via, "serialization"),
    "RetrieveBody": (models.RetrieveRequest, "validation"),
    "RetrieveOut": (models.RetrieveResponse, "serialization"),
    "RetrievedOut": (models.RetrievedItem, "serialization"),
    "SearchBody": (models.SearchRequest, "validation"),
    "SearchOut": (models.SearchResponse, "serialization"),
    "ChunkOut": (models.Chunk, "serialization"),
    "DocumentsOut": (models.DocumentsPage, "serialization"),
    "DocumentOut": (models.Document, "serialization"),
    "ErrorBody": (models.ErrorBody, "serialization"),
    "ErrorDetail": (models.ErrorDetail, "serialization"),
    "RowsBody": (models.WriteRequest, "validation"),
    "RowsAccepted": (models.WriteAccepted, "serialization"),
    "ForgetAccepted": (models.ForgetAccepted, "serialization"),
}
# Each call the client makes: its request body's schema (None: no body) and its answer's.
ENDPOINTS = {
    ("post", "/v1/corpora/{corpus}/navigate"): ("NavigateBody", "NavigateOut"),
    ("post", "/v1/corpora/{corpus}/retrieve"): ("RetrieveBody", "RetrieveOut"),
    ("post", "/v1/corpora/{corpus}/search"): ("SearchBody", "SearchOut"),
    ("get", "/v1/corpora/{corpus}/documents"): (None, "DocumentsOut"),
    ("post", "/v1/stores/{store}/rows"): ("RowsBody", "RowsAccepted"),
    ("delete", "/v1/stores/{store}/rows/{id}"): (None, "ForgetAccepted"),
}


def _inline(node: Any, defs: dict[str, Any], prefix: str) -> Any:
    if isinstance(node, dict):
        if "$ref" in node:
            return _inline(defs[node["$ref"].removeprefix(prefix)], defs, prefix)
        return {k: _inline(v, defs, prefix) for k, v in node.items()}
    if isinstance(node, list):
        return [_inline(v, defs, prefix) for v in node]
    return node


def _meaning(node: Any, naming: bool = False) -> Any:
    """A schema without what does not change what it accepts: titles, descriptions, and a `null`
    default (an optional field left out is null either way). `naming` is true inside a
    `properties` map, whose keys are field names (a field may be called `title`)."""
    if isinstance(node, dict):
        return {
            k: _meaning(v, naming=k == "properties" and not naming)
            for k, v in node.items()
            if naming or (k not in ("title", "description") and not (k == "default" and v is None))
        }
    if isinstance(node, list):
        return [_meaning(v) for v in node]
    return node


@pytest.fixture(scope="module")
def openapi() -> dict[str, Any]:
    response = httpx.get(f"{NAVIGATOR}/openapi.json", timeout=10)
    assert response.status_code == 200, response.text
    document: dict[str, Any] = response.json()
    return document


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_each_client_model_accepts_exactly_what_the_served_schema_declares(
    openapi: dict[str, Any], name: str
) -> None:
    served = openapi["components"]["schemas"]
    model, mode = SCHEMAS[name]
    ours = model.model_json_schema(mode=mode, by_alias=True)  # type: ignore[arg-type]
    defs = ours.pop("$defs", {})
    assert _meaning(_inline(ours, defs, "#/$defs/")) == _meaning(
        _inline(served[name], served, "#/components/schemas/")
    )


def test_every_call_of_the_client_is_served_with_the_body_and_answer_it_models(
    openapi: dict[str, Any],
) -> None:
    for (method, path), (body, answer) in ENDPOINTS.items():
        operation = openapi["paths"][path][method]
        if body is None:
            assert "requestBody" not in operation
        else:
            schema = operation["requestBody"]["content"]["application/json"]["schema"]
            assert schema == {"$ref": f"#/components/schemas/{body}"}
        accepted = "202" if "202" in operation["responses"] else "200"  # a write answers 202
        ok = operation["responses"][accepted]["content"]["application/json"]["schema"]
        assert ok == {"$ref": f"#/components/schemas/{answer}"}
        for status in ("401", "403", "404", "409", "422", "503"):
            error = operation["responses"][status]["content"]["application/json"]["schema"]
            assert error == {"$ref": "#/components/schemas/ErrorBody"}
    limit = next(
        p
        for p in openapi["paths"]["/v1/corpora/{corpus}/documents"]["get"]["parameters"]
        if p["name"] == "limit"
    )
    assert (limit["schema"]["minimum"], limit["schema"]["maximum"]) == (1, 1000)


def test_the_readme_example_runs_against_the_stack(world: World) -> None:
    readme = (ROOT / "libs" / "client" / "README.md").read_text()
    (example,) = re.findall(r"```python\n(.*?)```", readme, flags=re.DOTALL)
    env = {
        **os.environ,
        "MNEMO_URL": world.url,
        "MNEMO_TOKEN": world.token(world.tenant_a),
        "MNEMO_CORPUS": world.corpus,
    }
    result = subprocess.run(
        [sys.executable, "-c", example], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert "remember recall" in out
    assert "NOT_FOUND" in out
    assert re.search(rf"mnemo:{world.corpus} at revision \d+ holds 6 entries", out), out


def test_the_token_alone_decides_the_tenant_and_a_confined_token_is_refused(world: World) -> None:
    with MnemoClient(world.url, world.token(world.tenant_a)) as a:
        seen_by_a = {d.id for d in a.iter_documents(world.corpus, page_size=2)}
        walked = {hit.id for hit in a.navigate(world.corpus, "remember recall", budget=20).hits}
    with MnemoClient(world.url, world.token(world.tenant_b)) as b:
        seen_by_b = {item.id for item in b.retrieve(world.corpus, "remember recall", k=20).items}
    assert seen_by_a == {f"a{c}-{k}" for c in ("c1", "c2") for k in range(3)}
    assert walked
    assert walked <= seen_by_a
    assert seen_by_b
    assert all(i.startswith("bc1-") for i in seen_by_b)

    confined = MnemoClient(world.url, world.token(world.tenant_a, {"tenant_id": "c1"}))
    with confined, pytest.raises(PermissionDeniedError) as refused:
        confined.navigate(world.corpus, "remember recall")
    assert refused.value.code == "SCOPE_FORBIDDEN"
    assert "pinned scope" in refused.value.message
    with MnemoClient(world.url, world.token(world.tenant_a)) as a, pytest.raises(NotFoundError):
        a.corpus(f"missing-{uuid.uuid4().hex}")


async def test_the_async_client_and_mnemo_corpus_read_the_same_corpus(world: World) -> None:
    async with AsyncMnemoClient(world.url, world.token(world.tenant_a)) as client:
        ids = [d.id async for d in client.iter_documents(world.corpus, page_size=4)]
        info = await client.corpus(world.corpus)
        search = await client.search(world.corpus, {"query": "remember recall"})
    corpus = MnemoCorpus(world.url, world.corpus, world.token(world.tenant_a))
    assert isinstance(corpus, CorpusProtocol)
    assert [entry.path for entry in corpus.entries()] == ids
    assert corpus.version == str(info.revision)
    assert {chunk.corpus_id for chunk in search.chunks} == {world.corpus}
    corpus.close()


def test_the_sync_client_writes_rows_that_ingest_stores_for_the_tokens_tenant_only() -> None:
    with stack_world() as fresh:
        store = _documents_store(fresh.corpus)
        row = {"id": "aw-0", "tenant_id": "c1", "title": "written over http", "body": None}
        writer = mint_token(
            tenant=fresh.tenant_a, secret=DEVELOPMENT_SECRET, scopes=("read", "write")
        )
        with MnemoClient(fresh.url, writer) as a:
            accepted = a.write(store, [row], wait=30)
            assert accepted.processed == accepted.event_ids
            seen = {d.id for d in a.iter_documents(fresh.corpus)}
        with MnemoClient(fresh.url, fresh.token(fresh.tenant_b)) as b:
            seen_by_b = {d.id for d in b.iter_documents(fresh.corpus)}
            with pytest.raises(PermissionDeniedError):
                b.write(store, [row])
    assert "aw-0" in seen
    assert "aw-0" not in seen_by_b


def _documents_store(corpus: str) -> str:
    """The documents store of a corpus declared by `_declare` (`Nav_<s>` reads `NavDocs_<s>`)."""
    return "NavDocs_" + corpus.removeprefix("Nav_")
