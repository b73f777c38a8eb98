"""`MnemoCorpus` over an in-memory transport (the HTTP API itself is tested against the service)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from mnemo_corpus import CorpusProtocol, HttpResponse, MnemoCorpus, RemoteCorpusError


class PagedTransport:
    def __init__(self, ids: list[str], status: int = 200) -> None:
        self.ids = ids
        self.status = status
        self.calls: list[Mapping[str, str]] = []

    def request(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str],
        params: Mapping[str, str] | None = None,
        json_body: Any = None,
    ) -> HttpResponse:
        assert headers["Authorization"] == "Bearer tok"
        assert url == "http://nav/v1/corpora/My%20Corpus/documents"
        params = params or {}
        self.calls.append(params)
        if self.status != 200:
            return HttpResponse(self.status, {"error": {"code": "X", "message": "corpus is draft"}})
        limit = int(params["limit"])
        rest = [i for i in self.ids if "after" not in params or i > params["after"]]
        page = rest[:limit]
        more = len(rest) > limit
        return HttpResponse(
            200,
            {
                "documents": [
                    {"id": i, "title": f"t {i}", "body": None, "source_uri": f"mnemo://{i}"}
                    for i in page
                ],
                "next_after": page[-1] if more else None,
                "revision": 7,
            },
        )


def test_a_remote_corpus_pages_through_every_document_and_reports_the_revision() -> None:
    transport = PagedTransport([f"d{k:02}" for k in range(7)])
    corpus = MnemoCorpus("http://nav/", "My Corpus", "tok", transport=transport, page_size=3)
    assert isinstance(corpus, CorpusProtocol)
    assert [entry.path for entry in corpus.entries()] == [f"d{k:02}" for k in range(7)]
    assert corpus.version == "7"
    assert corpus.name == "mnemo:My Corpus"
    entry = corpus.get("d03")
    assert entry is not None
    assert entry.content == "t d03"
    assert corpus.get("missing") is None
    assert len(transport.calls) == 3


def test_a_refused_request_raises_with_the_navigators_reason() -> None:
    corpus = MnemoCorpus("http://nav", "My Corpus", "tok", transport=PagedTransport([], status=409))
    with pytest.raises(RemoteCorpusError, match="corpus is draft"):
        list(corpus.entries())
