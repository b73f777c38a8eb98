"""The chat classifier against a fake OpenAI-compatible server on loopback (real HTTP)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from mnemo_edge_classifier.errors import ChatAnswerError
from mnemo_edge_classifier.llm_classifier import ChatClassifier, ChatSettings
from mnemo_mdn.edge_classification import Rarity, TextDocument, document_keys


class FakeChat:
    """Answers every completion with `content` (or `raw`, the whole body) and records requests."""

    def __init__(self) -> None:
        self.content = "[]"
        self.raw: bytes | None = None
        self.requests: list[dict[str, object]] = []
        self.authorization: list[str | None] = []


@pytest.fixture
def chat() -> Iterator[tuple[FakeChat, str]]:
    fake = FakeChat()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers["content-length"])
            fake.requests.append(json.loads(self.rfile.read(length)))
            fake.authorization.append(self.headers.get("authorization"))
            body = (
                fake.raw
                or json.dumps(
                    {"choices": [{"message": {"role": "assistant", "content": fake.content}}]}
                ).encode()
            )
            self.send_response(200 if self.path == "/v1/chat/completions" else 404)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield fake, f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


NEW = document_keys(TextDocument("new", "Hilda Hilst", "A Brazilian poet."))
CANDIDATES = [
    document_keys(TextDocument("a", "Campinas", "A city where Hilda Hilst lived.")),
    document_keys(TextDocument("b", "Poetry", "Verse.")),
]


async def classify(base_url: str) -> list[tuple[str, str, str, float]]:
    classifier = ChatClassifier(ChatSettings(base_url, "test-model", "secret-key", 5.0))
    try:
        decisions = await classifier.classify(NEW, CANDIDATES, Rarity())
    finally:
        await classifier.close()
    return [(d.source, d.target, d.etype, d.weight) for d in decisions]


async def test_a_well_formed_answer_becomes_edges_from_the_new_document(
    chat: tuple[FakeChat, str],
) -> None:
    fake, url = chat
    fake.content = json.dumps([{"to_id": "a", "etype": "elaborate", "weight": 0.7}])
    assert await classify(url) == [("new", "a", "elaborate", 0.7)]
    request = fake.requests[0]
    assert request["model"] == "test-model"
    assert fake.authorization == ["Bearer secret-key"]
    assert "Campinas" in json.dumps(request["messages"])


async def test_off_catalog_out_of_range_and_foreign_targets_are_dropped_before_persist(
    chat: tuple[FakeChat, str],
) -> None:
    fake, url = chat
    fake.content = json.dumps(
        [
            {"to_id": "a", "etype": "hugs", "weight": 0.5},
            {"to_id": "a", "etype": "cite", "weight": 1.5},
            {"to_id": "a", "etype": "cite", "weight": 0},
            {"to_id": "a", "etype": "cite", "weight": "heavy"},
            {"to_id": "zzz", "etype": "cite", "weight": 0.5},
            {"to_id": "new", "etype": "cite", "weight": 0.5},
            {"to_id": "b", "etype": "cite", "weight": 0.5, "extra": 1},
            "cite b",
            {"to_id": "b", "etype": "contradict", "weight": 0.25},
        ]
    )
    assert await classify(url) == [("new", "b", "contradict", 0.25)]


async def test_a_fenced_json_answer_is_read(chat: tuple[FakeChat, str]) -> None:
    fake, url = chat
    fake.content = '```json\n[{"to_id": "b", "etype": "cite", "weight": 1}]\n```'
    assert await classify(url) == [("new", "b", "cite", 1.0)]


@pytest.mark.parametrize("content", ["this is not json", '{"to_id": "a"}', "", '[{"to_id": '])
async def test_an_answer_that_is_not_a_json_list_is_an_error(
    chat: tuple[FakeChat, str], content: str
) -> None:
    fake, url = chat
    fake.content = content
    with pytest.raises(ChatAnswerError):
        await classify(url)


async def test_a_body_that_is_not_a_chat_completion_is_an_error(
    chat: tuple[FakeChat, str],
) -> None:
    fake, url = chat
    fake.raw = b'{"error": "overloaded"}'
    with pytest.raises(ChatAnswerError, match="not a chat completion"):
        await classify(url)
