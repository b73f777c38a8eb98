"""The read-only catalogue API (issue 25) through the navigator's app, in process, over the real
registry: published corpora by default, every status with counts for an admin, one corpus with its
definition and uses, the routes, 405 for every write verb, all of it in the OpenAPI document.

Registry rows are written here as the owner role with a fresh suffix and removed afterwards; the
registry is deployment-wide, so assertions look at this test's rows only.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass

import asyncpg
import pytest
from mnemo_auth import DEVELOPMENT_SECRET, mint_token
from mnemo_store.registry import Route, apply_routes

from tests.integration.navigator.conftest import NewTenant, Service


@dataclass(frozen=True, slots=True)
class Rows:
    suffix: str
    published: str
    draft: str
    deprecated: str
    route: str

    def headers(self, tenant: uuid.UUID, *scopes: str) -> dict[str, str]:
        token = mint_token(tenant=tenant, secret=DEVELOPMENT_SECRET, scopes=scopes or ("read",))
        return {"Authorization": f"Bearer {token}"}


@pytest.fixture
async def rows(owner_connection: asyncpg.Connection) -> AsyncIterator[Rows]:
    suffix = uuid.uuid4().hex[:10]
    made = Rows(suffix, f"fees-{suffix}", f"drafty-{suffix}", f"old-{suffix}", f"qa-{suffix}")
    for corpus_id, status in (
        (made.published, "published"),
        (made.draft, "draft"),
        (made.deprecated, "deprecated"),
    ):
        await owner_connection.execute(
            "INSERT INTO mnemo.corpora (corpus_id, display_name, url, status, kind, definition,"
            " version) VALUES ($1, $1, 'http://127.0.0.1:9/search', $2, 'external',"
            " '{\"note\": \"the definition\"}', 'v1')",
            corpus_id,
            status,
        )
    await apply_routes(
        owner_connection,
        [
            Route(made.route, "2026.08.1", "deterministic_prefetch", (made.published,), False),
            Route(made.route, "2026.09.1", "tool", (made.published,), True),
        ],
    )
    yield made
    await owner_connection.execute("DELETE FROM mnemo.routes WHERE route_id = $1", made.route)
    await owner_connection.execute(
        "DELETE FROM mnemo.corpora WHERE corpus_id = ANY($1::text[])",
        [made.published, made.draft, made.deprecated],
    )


async def test_the_list_shows_published_corpora_and_an_admin_sees_every_status_with_counts(
    service: Service, new_tenant: NewTenant, rows: Rows
) -> None:
    tenant = await new_tenant()
    listed = await service.client.get("/v1/catalog/corpora", headers=rows.headers(tenant))
    assert listed.status_code == 200, listed.text
    ids = {c["corpus_id"] for c in listed.json()["corpora"]}
    assert rows.published in ids
    assert rows.draft not in ids
    assert rows.deprecated not in ids
    assert listed.json()["counts"] is None

    everything = await service.client.get(
        "/v1/catalog/corpora?include=all", headers=rows.headers(tenant, "admin")
    )
    assert everything.status_code == 200, everything.text
    statuses = {c["corpus_id"]: c["status"] for c in everything.json()["corpora"]}
    assert statuses[rows.draft] == "draft"
    assert statuses[rows.deprecated] == "deprecated"
    counts = everything.json()["counts"]
    assert set(counts) == {"draft", "published", "deprecated"}
    assert counts == {status: sum(1 for s in statuses.values() if s == status) for status in counts}


async def test_every_status_and_unpublished_rows_need_the_admin_scope(
    service: Service, new_tenant: NewTenant, rows: Rows
) -> None:
    tenant = await new_tenant()
    reader = rows.headers(tenant)
    refused = await service.client.get("/v1/catalog/corpora?include=all", headers=reader)
    assert refused.status_code == 403
    assert (
        await service.client.get(f"/v1/catalog/corpora/{rows.draft}", headers=reader)
    ).status_code == 403
    admin = rows.headers(tenant, "admin")
    draft = await service.client.get(f"/v1/catalog/corpora/{rows.draft}", headers=admin)
    assert draft.json()["status"] == "draft"
    anonymous = await service.client.get("/v1/catalog/corpora")
    assert anonymous.status_code == 401


async def test_one_corpus_has_its_definition_and_every_route_version_naming_it(
    service: Service, new_tenant: NewTenant, rows: Rows
) -> None:
    tenant = await new_tenant()
    detail = await service.client.get(
        f"/v1/catalog/corpora/{rows.published}", headers=rows.headers(tenant)
    )
    assert detail.status_code == 200, detail.text
    body = detail.json()
    assert body["definition"] == {"note": "the definition"}
    assert [(u["route_id"], u["route_version"], u["active"]) for u in body["uses"]] == [
        (rows.route, "2026.08.1", False),
        (rows.route, "2026.09.1", True),
    ]
    uses = await service.client.get(
        f"/v1/catalog/corpora/{rows.published}/uses", headers=rows.headers(tenant)
    )
    assert uses.json()["routes"] == body["uses"]
    missing = await service.client.get(
        f"/v1/catalog/corpora/none-{rows.suffix}", headers=rows.headers(tenant)
    )
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "NOT_FOUND"


async def test_routes_list_every_version_and_one_route_its_versions(
    service: Service, new_tenant: NewTenant, rows: Rows
) -> None:
    tenant = await new_tenant()
    listed = await service.client.get("/v1/catalog/routes", headers=rows.headers(tenant))
    mine = [r for r in listed.json()["routes"] if r["route_id"] == rows.route]
    assert [(r["route_version"], r["mode"]) for r in mine] == [
        ("2026.08.1", "deterministic_prefetch"),
        ("2026.09.1", "tool"),
    ]
    one = await service.client.get(f"/v1/catalog/routes/{rows.route}", headers=rows.headers(tenant))
    assert one.json() == {"route_id": rows.route, "versions": mine}
    missing = await service.client.get(
        f"/v1/catalog/routes/none-{rows.suffix}", headers=rows.headers(tenant)
    )
    assert missing.status_code == 404


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
@pytest.mark.parametrize(
    "path",
    [
        "/v1/catalog/corpora",
        "/v1/catalog/corpora/{c}",
        "/v1/catalog/corpora/{c}/uses",
        "/v1/catalog/routes",
        "/v1/catalog/routes/{r}",
    ],
)
async def test_every_write_verb_answers_405_and_changes_nothing(
    service: Service,
    new_tenant: NewTenant,
    rows: Rows,
    owner_connection: asyncpg.Connection,
    method: str,
    path: str,
) -> None:
    tenant = await new_tenant()
    url = path.replace("{c}", rows.published).replace("{r}", rows.route)
    answer = await service.client.request(
        method, url, headers=rows.headers(tenant, "admin"), json={"status": "deprecated"}
    )
    assert answer.status_code == 405
    assert answer.json()["error"]["code"] == "METHOD_NOT_ALLOWED"
    assert answer.headers["allow"] == "GET"
    status = await owner_connection.fetchval(
        "SELECT status FROM mnemo.corpora WHERE corpus_id = $1", rows.published
    )
    assert status == "published"


def test_the_catalogue_and_prefetch_are_declared_in_the_openapi_document(service: Service) -> None:
    assert service.runtime.app is not None
    paths = service.runtime.app.openapi()["paths"]
    assert set(paths["/v1/catalog/corpora"]) >= {"get", "post", "put", "patch", "delete"}
    assert "405" in paths["/v1/catalog/corpora"]["post"]["responses"]
    for path in (
        "/v1/catalog/corpora/{corpus_id}",
        "/v1/catalog/corpora/{corpus_id}/uses",
        "/v1/catalog/routes",
        "/v1/catalog/routes/{route_id}",
    ):
        assert "get" in paths[path]
    prefetch = paths["/v1/routes/{route_id}/prefetch"]["post"]
    assert {"404", "409", "502"} <= set(prefetch["responses"])
