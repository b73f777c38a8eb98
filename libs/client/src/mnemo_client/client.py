"""`MnemoClient` (synchronous) and `AsyncMnemoClient`: the navigator's API (reads, and row writes
through ingest) over httpx, typed answers, errors raised as `MnemoError`s, and a 503 or an
unreached navigator retried with back-off (`RetryPolicy`; a write carries an event id per row,
so a retried write is written once).

Both take the navigator's base URL and a bearer token; the token names the tenant (and, for an
end-client's token, the client whose pinned scope the navigator applies): the client never sends
a tenant of its own.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any, Literal, Self

import httpx

from mnemo_client import _http
from mnemo_client._http import Call
from mnemo_client.models import (
    CorpusInfo,
    Document,
    DocumentsPage,
    ForgetAccepted,
    NavigateRequest,
    NavigateResponse,
    ParamValue,
    RetrieveRequest,
    RetrieveResponse,
    SearchRequest,
    SearchResponse,
    WriteAccepted,
    WriteRequest,
)
from mnemo_client.retry import RetryPolicy

USER_AGENT = "mnemo-client/0.1"
DEFAULT_TIMEOUT = 30.0


def _navigate(
    query: str,
    from_: str | None,
    budget: int | None,
    where: str | None,
    params: Mapping[str, ParamValue] | None,
    mode: Literal["mdn", "axon"],
    direction: Literal["out", "both"],
) -> NavigateRequest:
    return NavigateRequest(
        query=query,
        from_=from_,
        budget=budget,
        where=where,
        params=dict(params or {}),
        mode=mode,
        direction=direction,
    )


def _retrieve(
    query: str, k: int, where: str | None, params: Mapping[str, ParamValue] | None
) -> RetrieveRequest:
    return RetrieveRequest(query=query, k=k, where=where, params=dict(params or {}))


def _write(
    rows: Sequence[Mapping[str, Any]], event_ids: Sequence[uuid.UUID] | None
) -> WriteRequest:
    """The write's body, with an event id per row (new ones unless given), so that a retried
    request writes each row once."""
    ids = [uuid.uuid4() for _ in rows] if event_ids is None else list(event_ids)
    return WriteRequest(rows=[dict(row) for row in rows], event_ids=ids)


class MnemoClient:
    """The navigator's read API, synchronous. Use it as a context manager, or `close()` it.

    `transport` replaces httpx's network transport (tests pass an `httpx.MockTransport`).
    """

    def __init__(
        self,
        url: str,
        token: str,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.retry = retry or RetryPolicy()
        self._http = httpx.Client(
            base_url=self.url,
            headers=_http.headers(token, USER_AGENT),
            timeout=timeout,
            transport=transport,
        )

    def navigate(
        self,
        corpus: str,
        query: str,
        *,
        from_: str | None = None,
        budget: int | None = None,
        where: str | None = None,
        params: Mapping[str, ParamValue] | None = None,
        mode: Literal["mdn", "axon"] = "mdn",
        direction: Literal["out", "both"] = "both",
    ) -> NavigateResponse:
        request = _navigate(query, from_, budget, where, params, mode, direction)
        return self._ask(_http.navigate_call(corpus, request), NavigateResponse)

    def retrieve(
        self,
        corpus: str,
        query: str,
        *,
        k: int = 5,
        where: str | None = None,
        params: Mapping[str, ParamValue] | None = None,
    ) -> RetrieveResponse:
        request = _retrieve(query, k, where, params)
        return self._ask(_http.retrieve_call(corpus, request), RetrieveResponse)

    def search(
        self, corpus: str, goal: Mapping[str, Any], *, collection: str = ""
    ) -> SearchResponse:
        request = SearchRequest(collection=collection, goal=dict(goal))
        return self._ask(_http.search_call(corpus, request), SearchResponse)

    def documents(
        self, corpus: str, *, after: str | None = None, limit: int = 100
    ) -> DocumentsPage:
        return self._ask(_http.documents_call(corpus, after, limit), DocumentsPage)

    def iter_documents(self, corpus: str, *, page_size: int = 500) -> Iterator[Document]:
        """Every document of the corpus, page after page, in id order."""
        after: str | None = None
        while True:
            page = self.documents(corpus, after=after, limit=page_size)
            yield from page.documents
            if page.next_after is None:
                return
            after = page.next_after

    def write(
        self,
        store: str,
        rows: Sequence[Mapping[str, Any]],
        *,
        event_ids: Sequence[uuid.UUID] | None = None,
        wait: float | None = None,
    ) -> WriteAccepted:
        """Write `rows` into the declared `store` (through ingest; the token needs the `write`
        scope). Returns once they are in Kafka, or, with `wait` (seconds), once ingest processed
        them or the wait ran out. Pass `event_ids` (one per row) to resend a write safely."""
        request = _write(rows, event_ids)
        return self._ask(_http.write_call(store, request, wait), WriteAccepted)

    def forget(
        self,
        store: str,
        document_id: str,
        *,
        event_id: uuid.UUID | None = None,
        wait: float | None = None,
    ) -> ForgetAccepted:
        """Forget the document `document_id` of the documents `store` (through ingest; the token
        needs the `write` scope, and a client-confined token reaches only its pinned scope): the
        document goes with its edges and the outcomes naming it. A document the token cannot see
        raises `NotFoundError`. With `wait` (seconds), returns once ingest carried it out or the
        wait ran out. The command's id (new unless given) makes a retried call forget once."""
        call = _http.forget_call(store, document_id, str(event_id or uuid.uuid4()), wait)
        return self._ask(call, ForgetAccepted)

    def corpus(self, corpus: str) -> CorpusInfo:
        """The corpus as this token sees it: raises the navigator's error when it may not."""
        return CorpusInfo(id=corpus, revision=self.documents(corpus, limit=1).revision)

    def _ask(self, call: Call, answer: type[_http.Answer]) -> _http.Answer:
        retry = 0
        while True:
            response: httpx.Response | None = None
            try:
                response = self._http.request(
                    call.method, call.path, params=call.params, json=call.json()
                )
            except _http.UNSENT as error:
                if retry + 1 >= self.retry.attempts:
                    raise _http.no_answer(self.url, error) from error
            except httpx.HTTPError as error:
                raise _http.no_answer(self.url, error) from error
            else:
                if response.status_code not in _http.RETRIED_STATUSES:
                    return _http.decode(response, answer)
                if retry + 1 >= self.retry.attempts:
                    raise _http.error_of(response)
            time.sleep(self.retry.delay(retry, _http.retry_after(response)))
            retry += 1

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


class AsyncMnemoClient:
    """The navigator's read API, asynchronous (`async with AsyncMnemoClient(url, token) as m:`)."""

    def __init__(
        self,
        url: str,
        token: str,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.retry = retry or RetryPolicy()
        self._http = httpx.AsyncClient(
            base_url=self.url,
            headers=_http.headers(token, USER_AGENT),
            timeout=timeout,
            transport=transport,
        )

    async def navigate(
        self,
        corpus: str,
        query: str,
        *,
        from_: str | None = None,
        budget: int | None = None,
        where: str | None = None,
        params: Mapping[str, ParamValue] | None = None,
        mode: Literal["mdn", "axon"] = "mdn",
        direction: Literal["out", "both"] = "both",
    ) -> NavigateResponse:
        request = _navigate(query, from_, budget, where, params, mode, direction)
        return await self._ask(_http.navigate_call(corpus, request), NavigateResponse)

    async def retrieve(
        self,
        corpus: str,
        query: str,
        *,
        k: int = 5,
        where: str | None = None,
        params: Mapping[str, ParamValue] | None = None,
    ) -> RetrieveResponse:
        request = _retrieve(query, k, where, params)
        return await self._ask(_http.retrieve_call(corpus, request), RetrieveResponse)

    async def search(
        self, corpus: str, goal: Mapping[str, Any], *, collection: str = ""
    ) -> SearchResponse:
        request = SearchRequest(collection=collection, goal=dict(goal))
        return await self._ask(_http.search_call(corpus, request), SearchResponse)

    async def documents(
        self, corpus: str, *, after: str | None = None, limit: int = 100
    ) -> DocumentsPage:
        return await self._ask(_http.documents_call(corpus, after, limit), DocumentsPage)

    async def iter_documents(self, corpus: str, *, page_size: int = 500) -> AsyncIterator[Document]:
        """Every document of the corpus, page after page, in id order."""
        after: str | None = None
        while True:
            page = await self.documents(corpus, after=after, limit=page_size)
            for document in page.documents:
                yield document
            if page.next_after is None:
                return
            after = page.next_after

    async def write(
        self,
        store: str,
        rows: Sequence[Mapping[str, Any]],
        *,
        event_ids: Sequence[uuid.UUID] | None = None,
        wait: float | None = None,
    ) -> WriteAccepted:
        """Write `rows` into the declared `store`: see `MnemoClient.write`."""
        request = _write(rows, event_ids)
        return await self._ask(_http.write_call(store, request, wait), WriteAccepted)

    async def forget(
        self,
        store: str,
        document_id: str,
        *,
        event_id: uuid.UUID | None = None,
        wait: float | None = None,
    ) -> ForgetAccepted:
        """Forget one document: see `MnemoClient.forget`."""
        call = _http.forget_call(store, document_id, str(event_id or uuid.uuid4()), wait)
        return await self._ask(call, ForgetAccepted)

    async def corpus(self, corpus: str) -> CorpusInfo:
        """The corpus as this token sees it: raises the navigator's error when it may not."""
        page = await self.documents(corpus, limit=1)
        return CorpusInfo(id=corpus, revision=page.revision)

    async def _ask(self, call: Call, answer: type[_http.Answer]) -> _http.Answer:
        retry = 0
        while True:
            response: httpx.Response | None = None
            try:
                response = await self._http.request(
                    call.method, call.path, params=call.params, json=call.json()
                )
            except _http.UNSENT as error:
                if retry + 1 >= self.retry.attempts:
                    raise _http.no_answer(self.url, error) from error
            except httpx.HTTPError as error:
                raise _http.no_answer(self.url, error) from error
            else:
                if response.status_code not in _http.RETRIED_STATUSES:
                    return _http.decode(response, answer)
                if retry + 1 >= self.retry.attempts:
                    raise _http.error_of(response)
            await asyncio.sleep(self.retry.delay(retry, _http.retry_after(response)))
            retry += 1

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()
