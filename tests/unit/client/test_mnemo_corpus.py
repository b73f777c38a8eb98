"""`mnemo_client.MnemoCorpus(url, corpus_id, token)`: the constructor CORPUS.md documents, a
`CorpusProtocol` (checked here, where the corpus library may be imported; the client never
imports it), which retrieval code reads like any corpus."""

from __future__ import annotations

from typing import Any

import httpx
from mnemo_client import MnemoCorpus
from mnemo_corpus import CorpusProtocol, KeywordRetriever

PAGES: dict[str | None, dict[str, Any]] = {
    None: {
        "documents": [
            {"id": "cap", "title": "liability cap", "body": "capped at 1M", "source_uri": "u:cap"}
        ],
        "next_after": "cap",
        "revision": 12,
    },
    "cap": {
        "documents": [{"id": "z", "title": "hosting plan", "body": None, "source_uri": "u:z"}],
        "next_after": None,
        "revision": 12,
    },
}


def _corpus(requests: list[httpx.Request]) -> MnemoCorpus:
    def handler(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        return httpx.Response(200, json=PAGES[request.url.params.get("after")])

    return MnemoCorpus(
        "http://nav.test", "Memory", "tok", page_size=1, transport=httpx.MockTransport(handler)
    )


def test_the_documented_constructor_takes_url_corpus_id_and_token_only() -> None:
    corpus = MnemoCorpus("http://127.0.0.1:8080", "Memory", "tok")
    assert corpus.name == "mnemo:Memory"
    corpus.close()


def test_it_is_a_corpus_protocol_and_reads_every_page_once() -> None:
    requests: list[httpx.Request] = []
    corpus = _corpus(requests)
    assert isinstance(corpus, CorpusProtocol)
    assert corpus.version == "12"
    entries = list(corpus.entries())
    assert [e.path for e in entries] == ["cap", "z"]
    assert entries[1].content == "hosting plan"  # no body: its title
    assert entries[0].summary == "liability cap"
    got = corpus.get("cap")
    assert got is not None
    assert got.metadata == {"source_uri": "u:cap"}
    assert corpus.get("missing") is None
    assert len(requests) == 2
    corpus.refresh()
    list(corpus.entries())
    assert len(requests) == 4


def test_the_keyword_retriever_reads_it_like_any_corpus() -> None:
    corpus = _corpus([])
    hits = KeywordRetriever().retrieve("liability cap", corpus, k=1)  # type: ignore[arg-type]
    assert [hit.entry.path for hit in hits] == ["cap"]
