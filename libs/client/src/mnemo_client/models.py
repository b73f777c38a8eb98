"""The typed requests and answers of the navigator's API (the `/v1/corpora/{corpus}/…` reads
and `/v1/stores/{store}/rows` writes), field for field as the navigator's OpenAPI document declares them (an e2e test holds
them equal to the served document).

Requests refuse unknown fields, as the navigator does; answers ignore fields they do not know, so
a newer navigator that adds one does not break an older client.
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, model_validator

MAX_QUERY_CHARS = 4096
"""The longest query text the navigator accepts."""

_NoNul = r"^[^\x00]*$"
ParamValue = Annotated[str, Field(pattern=_NoNul, max_length=4096)] | int | float | bool | None
Params = Annotated[dict[Annotated[str, Field(max_length=200)], ParamValue], Field(max_length=100)]


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


class _Answer(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True, frozen=True)


class NavigateRequest(_Request):
    """`POST /v1/corpora/{corpus}/navigate`: walk the corpus's graph from the query's matches (or
    from the document `from_`, sent as `from`) within `budget` steps."""

    query: Annotated[str, Field(max_length=MAX_QUERY_CHARS, pattern=_NoNul)]
    from_: Annotated[str | None, Field(alias="from", max_length=1024, pattern=_NoNul)] = None
    budget: Annotated[int, Field(ge=1, le=1000)] | None = None
    where: Annotated[str, Field(max_length=4096, pattern=_NoNul)] | None = None
    params: Params = Field(default_factory=dict)
    mode: Literal["mdn", "axon"] = "mdn"
    direction: Literal["out", "both"] = "both"

    @model_validator(mode="after")
    def _a_blank_query_needs_a_seed(self) -> NavigateRequest:
        """The navigator's rule: a blank query explores from `from_`; without one it is a 422."""
        if not self.query.strip() and self.from_ is None:
            raise ValueError(
                "query is empty: give the text to look for, or a seed document (from_) to "
                "explore from it"
            )
        return self


class Via(_Answer):
    """The edge a hit was reached by."""

    from_: str = Field(alias="from")
    etype: str
    weight: float


class Hit(_Answer):
    id: str
    title: str
    score: float
    gain: float
    epr: float
    via: Via | None
    restart: bool
    contradicts: list[str]
    source_uri: str


class NavigateResponse(_Answer):
    hits: list[Hit]
    trail: str
    coverage: float
    diagnostics: dict[str, Any]
    revision: int
    """The graph revision the walk read."""


class RetrieveRequest(_Request):
    """`POST /v1/corpora/{corpus}/retrieve`: the `k` documents most similar to the query."""

    query: Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS, pattern=_NoNul)]
    k: Annotated[int, Field(ge=1, le=100)] = 5
    where: Annotated[str, Field(max_length=4096, pattern=_NoNul)] | None = None
    params: Params = Field(default_factory=dict)


class RetrievedItem(_Answer):
    id: str
    title: str
    content: str
    similarity: Annotated[float, Field(ge=0, le=1)]
    source_uri: str


class RetrieveResponse(_Answer):
    items: list[RetrievedItem]


class SearchRequest(_Request):
    """`POST /v1/corpora/{corpus}/search`, the search gateway: the query text is the goal's
    `utterance`, `message`, `query` or `topic` (the first present)."""

    collection: Annotated[str, Field(max_length=200)]
    goal: Annotated[dict[Annotated[str, Field(max_length=200)], Any], Field(max_length=100)]


class Chunk(_Answer):
    id: str
    text: str
    tags: list[str]
    score: float
    source_uri: str
    corpus_id: str


class SearchResponse(_Answer):
    chunks: list[Chunk]


class Document(_Answer):
    id: str
    title: str
    body: str | None
    source_uri: str


class DocumentsPage(_Answer):
    """`GET /v1/corpora/{corpus}/documents?after=&limit=`: one page of documents in id order;
    `next_after` is the cursor of the next page (None after the last)."""

    documents: list[Document]
    next_after: str | None
    revision: int


class ErrorDetail(_Answer):
    code: str
    message: str


class ErrorBody(_Answer):
    """Every error answer of the navigator: `{"error": {"code", "message"}}`."""

    error: ErrorDetail


class CorpusInfo(_Answer):
    """What the navigator tells a caller about one corpus it may read: its id and the graph
    revision it serves now (read as the first page of its documents)."""

    id: str
    revision: int


MAX_ROWS = 1000
"""The most rows one write carries."""


class WriteRequest(_Request):
    """`POST /v1/stores/{store}/rows`: rows for a declared store, written by ingest. `event_ids`
    (one per row) make a resent request write each row once; the clients always send them."""

    rows: Annotated[list[dict[str, JsonValue]], Field(min_length=1, max_length=MAX_ROWS)]
    event_ids: Annotated[list[uuid.UUID] | None, Field(max_length=MAX_ROWS)] = None


class ForgetAccepted(_Answer):
    """`DELETE /v1/stores/{store}/rows/{id}`: the forget command is in Kafka, on its way to ingest,
    which removes the document with its edges and the outcomes naming it. `processed` (only when
    the call waited) says whether ingest carried it out within the wait."""

    event_id: uuid.UUID
    processed: bool | None


class WriteAccepted(_Answer):
    """The rows are in Kafka, on their way to ingest: one event id per row, in order.
    `processed` (only when the write waited) lists the events ingest processed within the wait:
    written, or refused and dead-lettered with the reason."""

    event_ids: list[uuid.UUID]
    processed: list[uuid.UUID] | None
