"""What the sync and the async client share: how a call is built, when it is retried and how an
answer is decoded. Each client only sends and sleeps its own way."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel, ValidationError

from mnemo_client.errors import MnemoError, NoAnswerError, error_for
from mnemo_client.models import (
    NavigateRequest,
    RetrieveRequest,
    SearchRequest,
    WriteRequest,
)

Answer = TypeVar("Answer", bound=BaseModel)

RETRIED_STATUSES = frozenset({503})

# Errors raised before the request reached the navigator: asking again cannot do anything twice.
UNSENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


@dataclass(frozen=True, slots=True)
class Call:
    method: str
    path: str
    params: Mapping[str, str] | None = None
    body: BaseModel | None = None

    def json(self) -> Any:
        if self.body is None:
            return None
        return self.body.model_dump(mode="json", by_alias=True, exclude_defaults=True)


def corpus_path(corpus: str, action: str) -> str:
    if not corpus:
        raise ValueError("corpus id must not be empty")
    return f"/v1/corpora/{quote(corpus, safe='')}/{action}"


def navigate_call(corpus: str, request: NavigateRequest) -> Call:
    return Call("POST", corpus_path(corpus, "navigate"), body=request)


def retrieve_call(corpus: str, request: RetrieveRequest) -> Call:
    return Call("POST", corpus_path(corpus, "retrieve"), body=request)


def search_call(corpus: str, request: SearchRequest) -> Call:
    return Call("POST", corpus_path(corpus, "search"), body=request)


def documents_call(corpus: str, after: str | None, limit: int) -> Call:
    if not 1 <= limit <= 1000:
        raise ValueError(f"limit must be between 1 and 1000, got {limit}")
    params = {"limit": str(limit)} if after is None else {"limit": str(limit), "after": after}
    return Call("GET", corpus_path(corpus, "documents"), params=params)


def write_call(store: str, request: WriteRequest, wait: float | None) -> Call:
    if not store:
        raise ValueError("store name must not be empty")
    params = None if wait is None else {"wait": f"{wait:g}"}
    return Call("POST", f"/v1/stores/{quote(store, safe='')}/rows", params=params, body=request)


def forget_call(store: str, document_id: str, event_id: str, wait: float | None) -> Call:
    if not store or not document_id:
        raise ValueError("store name and document id must not be empty")
    params = {"event_id": event_id}
    if wait is not None:
        params["wait"] = f"{wait:g}"
    path = f"/v1/stores/{quote(store, safe='')}/rows/{quote(document_id, safe='')}"
    return Call("DELETE", path, params=params)


def headers(token: str, user_agent: str) -> dict[str, str]:
    if not token or any(c in token for c in "\r\n"):
        raise ValueError("token must be a non-empty bearer token on one line")
    return {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json",
        "User-Agent": user_agent,
    }


def no_answer(url: str, error: httpx.HTTPError) -> NoAnswerError:
    return NoAnswerError(0, "NO_ANSWER", f"no answer from {url}: {error or type(error).__name__}")


def decode(response: httpx.Response, answer: type[Answer]) -> Answer:
    """The typed answer of a 200 (or a 202), or the error the navigator answered, raised."""
    if response.status_code not in (200, 202):
        raise error_of(response)
    try:
        return answer.model_validate_json(response.content)
    except ValidationError as error:
        raise MnemoError(
            response.status_code,
            "UNEXPECTED_ANSWER",
            f"the answer is not a {answer.__name__}: {error.errors()[:3]}",
        ) from error


def error_of(response: httpx.Response) -> MnemoError:
    """The navigator's `{"error": {"code", "message"}}`, or the status and a piece of the body
    when the answer is not one (a proxy's page, say)."""
    try:
        body = response.json()
    except ValueError:
        body = None
    detail = body.get("error") if isinstance(body, dict) else None
    if isinstance(detail, dict) and isinstance(detail.get("message"), str):
        return error_for(
            response.status_code, str(detail.get("code", "HTTP_ERROR")), detail["message"]
        )
    text = response.text[:200] or response.reason_phrase
    return error_for(response.status_code, "HTTP_ERROR", text)


def retry_after(response: httpx.Response | None) -> str | None:
    return None if response is None else response.headers.get("Retry-After")
