"""The optional classifier: an OpenAI-compatible chat API decides the edges.

It sends the new document and its candidates (ids, titles, the start of each text) and asks for a
JSON list `[{"to_id", "etype", "weight"}]` of edges from the new document. The answer is untrusted
input: an answer that is not such a list is an error (the use case's caller retries, then
dead-letters); a decision with a type outside the catalog, a weight outside (0, 1] or a target
that is not a candidate is dropped here, counted and logged, and never reaches ingest.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass

import httpx
import structlog
from mnemo_mdn import RELATION_TYPES
from mnemo_mdn.edge_classification import DocumentKeys, EdgeDecision, Rarity
from prometheus_client import Counter

from mnemo_edge_classifier.errors import ChatAnswerError

log = structlog.get_logger("mnemo_edge_classifier")

REJECTED = Counter(
    "mnemo_classifier_llm_decisions_rejected_total",
    "decisions of the chat classifier refused before persist",
    ["reason"],
)
EXCERPT_CHARACTERS = 600

SYSTEM_PROMPT = (
    "You link documents of a knowledge graph. Given a NEW document and CANDIDATES, answer with "
    "only a JSON array of edges from NEW to candidates, each an object "
    '{"to_id": <candidate id>, "etype": <type>, "weight": <number in (0, 1]>}. Types: '
    "cite (NEW refers to it), elaborate (NEW adds detail to it), corroborate (says the same), "
    "contradict (NEW disagrees with it), supersede (NEW replaces it), depend, implement, "
    "exemplify. Weight is your confidence. Answer [] when none applies."
)


@dataclass(frozen=True, slots=True)
class ChatSettings:
    base_url: str
    model: str
    api_key: str
    timeout_seconds: float = 30.0


class ChatClassifier:
    """Edges from a chat completion (`POST {base_url}/chat/completions`)."""

    def __init__(self, settings: ChatSettings, client: httpx.AsyncClient | None = None) -> None:
        self._settings = settings
        self._client = client or httpx.AsyncClient(timeout=settings.timeout_seconds)

    async def close(self) -> None:
        await self._client.aclose()

    async def classify(
        self, document: DocumentKeys, candidates: Sequence[DocumentKeys], rarity: Rarity
    ) -> Sequence[EdgeDecision]:
        del rarity  # the model judges relevance itself
        if not candidates:
            return []
        answer = await self._complete(_prompt(document, candidates))
        return parse_decisions(answer, document.id, {c.id for c in candidates})

    async def _complete(self, prompt: str) -> str:
        headers = {"content-type": "application/json"}
        if self._settings.api_key:
            headers["authorization"] = f"Bearer {self._settings.api_key}"
        response = await self._client.post(
            self._settings.base_url.rstrip("/") + "/chat/completions",
            headers=headers,
            json={
                "model": self._settings.model,
                "temperature": 0,
                "messages": [
                    {"role": "system", "content": SYSTEM_PROMPT},
                    {"role": "user", "content": prompt},
                ],
            },
        )
        response.raise_for_status()
        try:
            content = response.json()["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError) as error:
            raise ChatAnswerError(f"not a chat completion: {response.text[:200]!r}") from error
        if not isinstance(content, str):
            raise ChatAnswerError("the completion's message content is not text")
        return content


def _prompt(document: DocumentKeys, candidates: Sequence[DocumentKeys]) -> str:
    def describe(keys: DocumentKeys) -> dict[str, str]:
        text = " ".join(keys.sentences)
        return {"id": keys.id, "title": keys.title_cased, "text": text[:EXCERPT_CHARACTERS]}

    return json.dumps(
        {"new": describe(document), "candidates": [describe(c) for c in candidates]},
        ensure_ascii=False,
    )


def parse_decisions(answer: str, document_id: str, candidate_ids: set[str]) -> list[EdgeDecision]:
    """The valid decisions of `answer`; raises ChatAnswerError when it is not a JSON list."""
    text = answer.strip()
    if text.startswith("```"):  # models wrap JSON in a fenced block despite being asked not to
        text = text.strip("`").removeprefix("json").strip()
    try:
        items = json.loads(text)
    except ValueError as error:
        raise ChatAnswerError(f"the answer is not JSON: {answer[:200]!r}") from error
    if not isinstance(items, list):
        raise ChatAnswerError(f"the answer is not a JSON list: {answer[:200]!r}")
    kept: dict[tuple[str, str], EdgeDecision] = {}
    for item in items:
        reason = _refusal(item, document_id, candidate_ids)
        if reason is not None:
            REJECTED.labels(reason.split(":", 1)[0]).inc()
            log.info("llm_decision_rejected", reason=reason, document=document_id)
            continue
        decision = EdgeDecision(
            document_id, str(item["to_id"]), item["etype"], float(item["weight"]), "chat model"
        )
        kept.setdefault((decision.target, decision.etype), decision)
    return [kept[key] for key in sorted(kept)]


def _refusal(item: object, document_id: str, candidate_ids: set[str]) -> str | None:
    if not isinstance(item, dict) or set(item) != {"to_id", "etype", "weight"}:
        return f"shape: {item!r} is not {{to_id, etype, weight}}"
    etype, weight, target = item["etype"], item["weight"], item["to_id"]
    if not isinstance(etype, str) or etype not in RELATION_TYPES:
        return f"type: {etype!r} is not in the relation catalog"
    if isinstance(weight, bool) or not isinstance(weight, (int, float)):
        return f"weight: {weight!r} is not a number"
    if not (math.isfinite(weight) and 0.0 < weight <= 1.0):
        return f"weight: {weight!r} is outside (0, 1]"
    if not isinstance(target, (str, int)) or str(target) not in candidate_ids:
        return f"target: {target!r} is not a candidate"
    if str(target) == document_id:
        return "target: an edge from the document to itself"
    return None
