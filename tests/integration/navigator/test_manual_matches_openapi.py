"""The bundled manual's HTTP reference names only endpoints the services serve: every `METHOD /path`
of `api/http.md` is an operation of the navigator's or the audit service's OpenAPI document, except
in a section marked *Not served yet.*, and such a section names at least one endpoint still missing."""

from __future__ import annotations

import re
from collections.abc import Iterable
from importlib import resources
from typing import Any

import pytest
from fastapi import FastAPI
from mnemo_audit.routes import audit_router
from mnemo_auth import TokenKeys, TokenVerifier

from tests.integration.navigator.conftest import Service

ENDPOINT = re.compile(r"`(GET|POST|PUT|PATCH|DELETE) (/[^\s`?]*)")
NOT_SERVED = "*Not served yet.*"

Operation = tuple[str, str]


def _shape(path: str) -> str:
    """A path with every `{parameter}` made anonymous: `/v1/corpora/{id}` matches `{corpus}`."""
    return re.sub(r"\{[^}]*\}", "{}", path.rstrip("/") or "/")


def documented(manual: str) -> dict[str, set[Operation]]:
    """Each `## ` section's title mapped to the operations it names."""
    sections: dict[str, set[Operation]] = {}
    title = ""
    for line in manual.splitlines():
        if line.startswith("## "):
            title = line[3:].strip()
        for method, path in ENDPOINT.findall(line):
            sections.setdefault(title, set()).add((method, _shape(path)))
    return sections


def not_served_sections(manual: str) -> set[str]:
    titles: set[str] = set()
    title = ""
    for line in manual.splitlines():
        if line.startswith("## "):
            title = line[3:].strip()
        elif line.strip() == NOT_SERVED:
            titles.add(title)
    return titles


def served(documents: Iterable[dict[str, Any]]) -> set[Operation]:
    return {
        (method.upper(), _shape(path))
        for document in documents
        for path, operations in document["paths"].items()
        for method in operations
    }


def drift(manual: str, operations: set[Operation]) -> list[str]:
    """What the manual names that is not served, and markers that no longer say anything true."""
    waiting = not_served_sections(manual)
    problems: list[str] = []
    for title, named in sorted(documented(manual).items()):
        if title in waiting:
            if named <= operations:
                problems.append(f"section {title!r} is marked not served but every endpoint is")
            continue
        problems += [
            f"section {title!r} documents {method} {path}, which no service serves"
            for method, path in sorted(named - operations)
        ]
    return problems


@pytest.fixture(scope="module")
def openapi_operations(service: Service) -> set[Operation]:
    """The running navigator's document (its routers are mounted when it starts) and the audit
    service's API router's (it reads nothing until a request comes)."""
    assert service.runtime.app is not None
    audit = FastAPI()
    audit.include_router(
        audit_router(TokenVerifier(TokenKeys(secret="unused")), _no_audit_log, 100)
    )
    return served([service.runtime.app.openapi(), audit.openapi()])


def _no_audit_log() -> Any:
    raise AssertionError("the OpenAPI document reads no audit log")


def manual() -> str:
    return (resources.files("mnemo_corpus") / "docs" / "api" / "http.md").read_text("utf-8")


def test_every_endpoint_the_http_reference_documents_is_in_an_openapi_document(
    openapi_operations: set[Operation],
) -> None:
    assert drift(manual(), openapi_operations) == []
    assert ("POST", "/v1/corpora/{}/navigate") in openapi_operations


def test_a_documented_endpoint_missing_from_openapi_is_reported_by_name() -> None:
    page = "## Things\n\n`GET /v1/things/{id}` lists things.\n"
    assert drift(page, {("GET", "/v1/other")}) == [
        "section 'Things' documents GET /v1/things/{}, which no service serves"
    ]


def test_a_not_served_marker_on_a_section_whose_endpoints_are_all_served_is_reported() -> None:
    page = "## Things\n\n*Not served yet.*\n\n`GET /v1/things` lists things.\n"
    assert drift(page, set()) == []
    assert drift(page, {("GET", "/v1/things")}) == [
        "section 'Things' is marked not served but every endpoint is"
    ]
