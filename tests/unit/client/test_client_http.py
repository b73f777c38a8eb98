"""The client over `httpx.MockTransport`: what it sends, the typed answers it returns, the
navigator's errors raised with their code and message, and 503s retried a bounded number of
times."""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx
import pytest
from mnemo_client import (
    AsyncMnemoClient,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    MnemoClient,
    MnemoError,
    NoAnswerError,
    NotFoundError,
    PermissionDeniedError,
    RetryPolicy,
    UnavailableError,
)

URL = "http://navigator.test"
NAVIGATED = {
    "hits": [
        {
            "id": "d1",
            "title": "liability cap",
            "score": 0.9,
            "gain": 0.5,
            "epr": 0.1,
            "via": {"from": "d0", "etype": "cite", "weight": 0.5},
            "restart": False,
            "contradicts": [],
            "source_uri": "mnemo://Memory/d1",
            "added_by_a_newer_navigator": True,
        }
    ],
    "trail": "d0 -> d1",
    "coverage": 0.5,
    "diagnostics": {"cache": "hit"},
    "revision": 7,
}
Handler = Callable[[httpx.Request], httpx.Response]


def _error(status: int, code: str, message: str) -> httpx.Response:
    return httpx.Response(status, json={"error": {"code": code, "message": message}})


def _client(handler: Handler, attempts: int = 4) -> MnemoClient:
    retry = RetryPolicy(attempts=attempts, base_delay=0.0, max_delay=0.0)
    return MnemoClient(URL, "tok", retry=retry, transport=httpx.MockTransport(handler))


def test_navigate_sends_the_token_and_only_the_fields_set_and_answers_a_typed_result() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=NAVIGATED)

    with _client(handler) as client:
        result = client.navigate("My corpus/1", "cap", from_="d0", budget=3)
    (request,) = seen
    assert request.method == "POST"
    assert request.url.raw_path == b"/v1/corpora/My%20corpus%2F1/navigate"
    assert request.headers["Authorization"] == "Bearer tok"
    assert json.loads(request.content) == {"query": "cap", "from": "d0", "budget": 3}
    assert result.revision == 7
    assert result.hits[0].via is not None
    assert result.hits[0].via.from_ == "d0"
    assert result.hits[0].title == "liability cap"


def test_an_invalid_request_is_refused_before_anything_is_sent() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise AssertionError("nothing should be sent")

    with _client(handler) as client, pytest.raises(ValueError, match="query"):
        client.navigate("Memory", "")


def test_an_empty_query_with_a_seed_document_is_sent_to_explore_from_it() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=NAVIGATED)

    with _client(handler) as client:
        client.navigate("Memory", "", from_="d0")
    (request,) = seen
    assert json.loads(request.content) == {"query": "", "from": "d0"}


@pytest.mark.parametrize(
    ("status", "code", "kind"),
    [
        (401, "UNAUTHENTICATED", AuthenticationError),
        (403, "FORBIDDEN", PermissionDeniedError),
        (404, "NOT_FOUND", NotFoundError),
        (409, "CONFLICT", ConflictError),
        (422, "INVALID_REQUEST", BadRequestError),
        (500, "INTERNAL", MnemoError),
    ],
)
def test_an_error_answer_raises_its_class_with_the_servers_code_and_message(
    status: int, code: str, kind: type[MnemoError]
) -> None:
    client = _client(lambda _: _error(status, code, "the reason"))
    with client, pytest.raises(kind) as raised:
        client.retrieve("Memory", "cap")
    assert (raised.value.status, raised.value.code, raised.value.message) == (
        status,
        code,
        "the reason",
    )
    assert "the reason" in str(raised.value)


def test_an_answer_that_is_not_the_navigators_error_keeps_its_status_and_text() -> None:
    client = _client(lambda _: httpx.Response(502, text="bad gateway from a proxy"))
    with client, pytest.raises(MnemoError) as raised:
        client.documents("Memory")
    assert raised.value.status == 502
    assert raised.value.code == "HTTP_ERROR"
    assert "bad gateway from a proxy" in raised.value.message


def test_a_200_whose_body_is_not_the_declared_answer_raises_instead_of_returning_garbage() -> None:
    client = _client(lambda _: httpx.Response(200, json={"hits": "no"}))
    with client, pytest.raises(MnemoError, match="UNEXPECTED_ANSWER"):
        client.navigate("Memory", "cap")


def test_a_503_is_retried_and_the_answer_after_it_returned() -> None:
    answers = [_error(503, "UNAVAILABLE", "database unavailable")] * 2 + [
        httpx.Response(200, json={"items": []})
    ]
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return answers[len(calls) - 1]

    with _client(handler) as client:
        assert client.retrieve("Memory", "cap").items == []
    assert len(calls) == 3


def test_503s_are_retried_a_bounded_number_of_times_then_raised() -> None:
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return _error(503, "UNAVAILABLE", "database unavailable: ConnectionRefusedError")

    with _client(handler, attempts=3) as client, pytest.raises(UnavailableError) as raised:
        client.navigate("Memory", "cap")
    assert len(calls) == 3
    assert raised.value.code == "UNAVAILABLE"
    assert "database unavailable" in raised.value.message


def test_other_errors_are_never_retried() -> None:
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return _error(500, "INTERNAL", "boom")

    with _client(handler) as client, pytest.raises(MnemoError):
        client.navigate("Memory", "cap")
    assert len(calls) == 1


def test_a_connection_that_never_reached_the_navigator_is_retried_then_raised_as_no_answer() -> (
    None
):
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        raise httpx.ConnectError("connection refused", request=request)

    with _client(handler, attempts=2) as client, pytest.raises(NoAnswerError) as raised:
        client.documents("Memory")
    assert len(calls) == 2
    assert raised.value.status == 0
    assert "connection refused" in raised.value.message


def test_a_read_timeout_is_not_retried_the_request_may_have_reached_the_navigator() -> None:
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        raise httpx.ReadTimeout("timed out", request=request)

    with _client(handler) as client, pytest.raises(NoAnswerError):
        client.navigate("Memory", "cap")
    assert len(calls) == 1


def test_iter_documents_follows_the_cursor_to_the_last_page() -> None:
    pages = {
        None: {"documents": [_doc("a"), _doc("b")], "next_after": "b", "revision": 3},
        "b": {"documents": [_doc("c")], "next_after": None, "revision": 3},
    }
    seen: list[dict[str, str]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(dict(request.url.params))
        return httpx.Response(200, json=pages[request.url.params.get("after")])

    with _client(handler) as client:
        assert [d.id for d in client.iter_documents("Memory", page_size=2)] == ["a", "b", "c"]
    assert seen == [{"limit": "2"}, {"limit": "2", "after": "b"}]


async def test_the_async_client_retries_a_503_and_raises_the_navigators_errors() -> None:
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        if len(calls) == 1:
            return _error(503, "UNAVAILABLE", "database unavailable")
        if request.url.path.endswith("/navigate"):
            return httpx.Response(200, json=NAVIGATED)
        return _error(403, "FORBIDDEN", "client-confined token, corpus has no pinned scope")

    retry = RetryPolicy(attempts=2, base_delay=0.0, max_delay=0.0)
    async with AsyncMnemoClient(
        URL, "tok", retry=retry, transport=httpx.MockTransport(handler)
    ) as client:
        assert (await client.navigate("Memory", "cap")).hits[0].id == "d1"
        with pytest.raises(PermissionDeniedError, match="pinned scope"):
            await client.retrieve("Memory", "cap")
    assert len(calls) == 3


def test_back_off_is_jittered_and_bounded_and_honours_retry_after_up_to_its_cap() -> None:
    import random

    policy = RetryPolicy(attempts=10, base_delay=0.5, max_delay=3.0, random=random.Random(7))
    delays = [[policy.delay(n) for _ in range(200)] for n in range(6)]
    for n, waits in enumerate(delays):
        cap = min(3.0, 0.5 * 2**n)
        assert all(0.0 <= w <= cap for w in waits)
        assert len(set(waits)) > 100  # jittered, not one fixed wait
    assert policy.delay(0, retry_after="2") == 2.0
    assert policy.delay(0, retry_after="3600") == 3.0
    assert 0.0 <= policy.delay(0, retry_after="Wed, 21 Oct 2015 07:28:00 GMT") <= 0.5
    with pytest.raises(ValueError, match="attempts"):
        RetryPolicy(attempts=0)


def test_a_token_that_would_split_the_header_is_refused() -> None:
    with pytest.raises(ValueError, match="one line"):
        MnemoClient(URL, "tok\r\nX-Tenant: other")


def _doc(ident: str) -> dict[str, object]:
    return {"id": ident, "title": f"t {ident}", "body": None, "source_uri": f"mnemo://M/{ident}"}
