"""`MnemoCorpus`: the `CorpusProtocol` over a Mnemo navigator's HTTP API (CORPUS.md B).

This library stays pure: it speaks HTTP only through an `HttpTransport` the caller supplies (the
`mnemo` CLI has one over httpx, `mnemo_cli.http_transport.HttpxTransport`). `entries()` pages
through `GET /v1/corpora/{id}/documents`; `version` is the graph revision the first page was read
at; `get(path)` looks an id up among the entries. With `cache=True` (the default) the entries are
fetched once; `refresh()` fetches them again.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import quote

from mnemo_corpus.entry import RetrievalEntry
from mnemo_corpus.errors import CorpusError


@dataclass(frozen=True, slots=True)
class HttpResponse:
    status: int
    body: Any  # the decoded JSON body, None when the body was not JSON


class HttpTransport(Protocol):
    """One HTTP exchange; raises `OSError` (or a subclass) when no answer came at all."""

    def request(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str],
        params: Mapping[str, str] | None = None,
        json_body: Any = None,
    ) -> HttpResponse: ...


class RemoteCorpusError(CorpusError):
    """The navigator refused or failed a request; `status` is its HTTP status (0: no answer)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}" if status else message)
        self.status = status


def error_message(response: HttpResponse) -> str:
    body = response.body
    if isinstance(body, Mapping) and isinstance(body.get("error"), Mapping):
        return str(body["error"].get("message", body["error"]))
    return str(body)


class MnemoClient:
    """The navigator's HTTP API for one base URL and token."""

    def __init__(self, url: str, token: str, transport: HttpTransport) -> None:
        self._url = url.rstrip("/")
        self._headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        self._transport = transport

    def call(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        json_body: Any = None,
    ) -> Any:
        try:
            response = self._transport.request(
                method, self._url + path, headers=self._headers, params=params, json_body=json_body
            )
        except OSError as error:
            raise RemoteCorpusError(0, f"no answer from {self._url}: {error}") from error
        if response.status != 200:
            raise RemoteCorpusError(response.status, error_message(response))
        return response.body

    def corpus_path(self, corpus_id: str, action: str) -> str:
        return f"/v1/corpora/{quote(corpus_id, safe='')}/{action}"

    def navigate(self, corpus_id: str, body: Mapping[str, Any]) -> Any:
        return self.call("POST", self.corpus_path(corpus_id, "navigate"), json_body=dict(body))

    def retrieve(self, corpus_id: str, body: Mapping[str, Any]) -> Any:
        return self.call("POST", self.corpus_path(corpus_id, "retrieve"), json_body=dict(body))


class MnemoCorpus:
    """A corpus served by a Mnemo navigator, as a `CorpusProtocol`."""

    def __init__(
        self,
        url: str,
        corpus_id: str,
        token: str,
        *,
        transport: HttpTransport,
        page_size: int = 500,
        cache: bool = True,
    ) -> None:
        if not 1 <= page_size <= 1000:
            raise ValueError(f"page_size must be between 1 and 1000, got {page_size}")
        self._client = MnemoClient(url, token, transport)
        self._corpus_id = corpus_id
        self._page_size = page_size
        self._cache = cache
        self._entries: dict[str, RetrievalEntry] | None = None
        self._revision: int | None = None

    @property
    def name(self) -> str:
        return f"mnemo:{self._corpus_id}"

    @property
    def version(self) -> str:
        """The graph revision the entries were read at."""
        self._load()
        return str(self._revision)

    def entries(self) -> Iterator[RetrievalEntry]:
        return iter(self._load().values())

    def get(self, path: str) -> RetrievalEntry | None:
        return self._load().get(path)

    def refresh(self) -> None:
        self._entries = None

    def _load(self) -> dict[str, RetrievalEntry]:
        if self._entries is not None and self._cache:
            return self._entries
        entries: dict[str, RetrievalEntry] = {}
        after: str | None = None
        revision: int | None = None
        while True:
            params = {"limit": str(self._page_size)}
            if after is not None:
                params["after"] = after
            page = self._client.call(
                "GET", self._client.corpus_path(self._corpus_id, "documents"), params=params
            )
            if revision is None:
                revision = int(page["revision"])
            for document in page["documents"]:
                entries[document["id"]] = RetrievalEntry(
                    path=document["id"],
                    category="",
                    content=document["body"] if document["body"] is not None else document["title"],
                    summary=document["title"],
                    metadata={"source_uri": document["source_uri"]},
                )
            after = page["next_after"]
            if after is None:
                break
        self._entries, self._revision = entries, revision
        return entries
