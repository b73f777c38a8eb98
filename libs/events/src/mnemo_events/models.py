"""The messages that cross a process boundary: the envelope and every event of ARCHITECTURE §4.

Every model is frozen and forbids unknown fields, so a producer that misspells a field gets a
validation error (and a dead letter) instead of a silently dropped value. The tenant travels in the
envelope and is also the Kafka key; a consumer refuses an envelope whose tenant disagrees with it.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Annotated, Any, Generic, Literal, TypeVar

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, JsonValue, model_validator

SCHEMA_VERSION = 1
"""Version of every model below; a breaking change gets a new topic, not a new version here."""

StoreName = Annotated[str, Field(min_length=1, max_length=63)]
CorpusId = Annotated[str, Field(min_length=1, max_length=200)]
RowId = str | int
"""A document id as the store declares it (text, uuid as text, or integer)."""


class Message(BaseModel):
    """Base of every event model: immutable, unknown fields refused."""

    model_config = ConfigDict(frozen=True, extra="forbid")


# -- data of each topic --------------------------------------------------------------------------


class PersistRow(Message):
    """`mnemo.persist.v1`: one row for one declared store (a document, an edge, any store row)."""

    store: StoreName
    values: dict[str, JsonValue]


class DocumentPersisted(Message):
    """`mnemo.document.persisted.v1`: a row of a corpus's documents store was written."""

    corpus: CorpusId
    store: StoreName
    id: RowId
    values: dict[str, JsonValue]


NavigateMode = Literal["mdn", "axon"]
NavigateDirection = Literal["out", "both"]
ParamValue = str | int | float | bool | None


ClientClaim = Annotated[
    dict[Annotated[str, Field(min_length=1)], Annotated[str, Field(min_length=1)]],
    Field(min_length=1),
]
"""A `client` object naming an end-client: at least one key, no empty key or value. An empty object
is refused, never read as "no client" (that would widen the request to the whole tenant)."""


NoNul = Field(pattern=r"^[^\x00]*$")
"""Text that reaches Postgres (a query remembered, a filter, a parameter): no NUL character,
which Postgres text cannot hold; refused at decoding, so the record is dead-lettered at once."""
RequestParamValue = Annotated[str, NoNul, Field(max_length=4096)] | int | float | bool | None


class ForgetRow(Message):
    """`mnemo.forget.v1`: forget one document of a store read by a store corpus as its documents:
    the row goes, with every edge touching it, the parked edges naming it and the navigation
    outcomes whose path went through it. `match` narrows it to a row whose columns equal these
    text values (an end-client's pinned scope): a row outside it is not forgotten."""

    store: StoreName
    id: Annotated[str, NoNul, Field(min_length=1, max_length=1024)]
    match: dict[Annotated[str, Field(min_length=1, max_length=63)], Annotated[str, NoNul]] = Field(
        default_factory=dict
    )


class NavigateRequested(Message):
    """`mnemo.navigate.requested.v1`: a navigation asked for over Kafka, answered by request id.

    The record carries the caller's bearer token in its `authorization` header; the navigator
    takes the tenant and the `client` claim from the token. `client`, when sent, must equal the
    token's claim (a request naming another end-client is refused, never widened).
    """

    request_id: uuid.UUID
    corpus: CorpusId
    query: Annotated[str, NoNul, Field(max_length=4096)]
    from_id: Annotated[str, NoNul, Field(max_length=1024)] | None = None
    budget: Annotated[int, Field(ge=1, le=1000)] | None = None
    where: Annotated[str, NoNul, Field(max_length=4096)] | None = None
    params: dict[Annotated[str, NoNul], RequestParamValue] = Field(default_factory=dict)
    mode: NavigateMode | None = None
    direction: NavigateDirection | None = None
    client: ClientClaim | None = None
    reply_to: str | None = None

    @model_validator(mode="after")
    def _a_blank_query_needs_a_seed(self) -> NavigateRequested:
        """The navigator's rule: a blank query explores from `from_id`, and is refused without."""
        if not self.query.strip() and self.from_id is None:
            raise ValueError(
                "query is empty: give the text to look for, or a seed document in from_id"
            )
        return self


class NavigateHit(Message):
    id: str
    title: str
    score: float
    epr: float | None = None


class NavigateCompleted(Message):
    """`mnemo.navigate.completed.v1`: the answer to one `NavigateRequested`, or why there is none."""

    request_id: uuid.UUID
    corpus: CorpusId
    ok: bool
    hits: tuple[NavigateHit, ...] = ()
    trail: tuple[str, ...] = ()
    coverage: float | None = None
    revision: int | None = None
    diagnostics: dict[str, JsonValue] = Field(default_factory=dict)
    error: str | None = None


class QueryAudited(Message):
    """Audit data of `corpus:<name>:query`: one per navigate, retrieve, search and documents page
    (ARCHITECTURE §5)."""

    kind: Literal["query"] = "query"
    action: Annotated[str, Field(pattern=r"^corpus:[^:]+:query$")]
    corpus: CorpusId
    operation: Literal["navigate", "retrieve", "search", "documents"]
    query: str | None
    """The query text, or None when the deployment keeps only its digest."""
    query_digest: str
    k_returned: Annotated[int, Field(ge=0)]
    latency_ms: Annotated[float, Field(ge=0)]
    top_similarity: float | None
    returned_ids: tuple[str, ...]
    scope_digest: str
    principal: str
    trace_id: str | None
    revision: int | None = None
    client: ClientClaim | None = None
    """The caller's end-client (its token's `client` claim) when it was confined to one; None for a
    tenant-wide caller. The audit API shows a client-confined token only rows whose `client` equals
    its own claim."""


class DeleteAudited(Message):
    """Audit data of `store:<name>:delete`: a document ingest forgot, with who asked and what went
    (how many edges, parked edges and navigation outcomes with it), never the row's content."""

    kind: Literal["delete"] = "delete"
    action: Annotated[str, Field(pattern=r"^store:[^:]+:delete$")]
    store: StoreName
    row_ids: tuple[str, ...]
    edges_removed: Annotated[int, Field(ge=0)] = 0
    pending_removed: Annotated[int, Field(ge=0)] = 0
    outcomes_removed: Annotated[int, Field(ge=0)] = 0
    source_event_ids: tuple[uuid.UUID, ...]
    principal: str
    trace_id: str | None


class PersistAudited(Message):
    """Audit data of `store:<name>:persist`: rows ingest wrote in one transaction for one store."""

    kind: Literal["persist"] = "persist"
    action: Annotated[str, Field(pattern=r"^store:[^:]+:persist$")]
    store: StoreName
    row_ids: tuple[str, ...]
    source_event_ids: tuple[uuid.UUID, ...]
    principal: str
    trace_id: str | None


class PrefetchAudited(Message):
    """Audit data of `route:<id>:prefetch`: one per deterministic prefetch over a route, whether it
    returned chunks or failed (then `error` says why and `chunk_ids` is empty)."""

    kind: Literal["prefetch"] = "prefetch"
    action: Annotated[str, Field(pattern=r"^route:[^:]+:prefetch$")]
    route_id: Annotated[str, Field(min_length=1, max_length=200)]
    route_version: Annotated[str, Field(min_length=1, max_length=100)]
    corpora: tuple[str, ...]
    """The route's scope, in order: the corpora searched (or meant to be), as the row holds them."""
    goal: str | None
    """The goal's text, or None when the deployment keeps only its digest."""
    goal_digest: str
    chunk_ids: tuple[str, ...]
    """Every chunk returned, as `<corpus_id>:<chunk id>`, in scope order."""
    latency_ms: Annotated[float, Field(ge=0)]
    error: str | None = None
    principal: str
    trace_id: str | None
    client: ClientClaim | None = None


AuditData = Annotated[
    QueryAudited | PersistAudited | PrefetchAudited | DeleteAudited, Field(discriminator="kind")
]


class AuditRecorded(Message):
    """`mnemo.audit.v1`: one event for the tenant's hash-chained audit log."""

    record: AuditData


# -- the envelope ---------------------------------------------------------------------------------

DataT = TypeVar("DataT", bound=Message)


class Envelope(Message, Generic[DataT]):
    """What every topic carries: who, when, which trace, and the event's data."""

    event_id: uuid.UUID
    type: str
    schema_version: int = SCHEMA_VERSION
    tenant: uuid.UUID
    occurred_at: AwareDatetime
    producer: Annotated[str, Field(min_length=1, max_length=200)]
    trace: str | None = None
    data: DataT


_ANY_ENVELOPE: type[Envelope[Any]] = Envelope[Any]
"""Parameterised once: pydantic looks a generic alias up on every subscript."""


def new_envelope(
    data: DataT,
    *,
    tenant: uuid.UUID,
    producer: str,
    event_type: str,
    event_id: uuid.UUID | None = None,
    trace: str | None = None,
) -> Envelope[DataT]:
    """An envelope for `data`, stamped now; `event_id` defaults to a fresh uuid4.

    Give a deterministic `event_id` (uuid5 of what caused the event) when a retry must produce the
    same event, so the consumer's inbox deduplicates it.
    """
    return _ANY_ENVELOPE(
        event_id=event_id or uuid.uuid4(),
        type=event_type,
        tenant=tenant,
        occurred_at=datetime.now(UTC),
        producer=producer,
        trace=trace,
        data=data,
    )


def envelope_json(
    model: type[Message],
    data: Mapping[str, Any],
    *,
    tenant: uuid.UUID,
    producer: str,
    event_type: str,
    event_id: uuid.UUID,
    trace: str | None = None,
) -> dict[str, Any]:
    """`new_envelope(model(**data), ...).model_dump(mode="json")` for `data` whose values are
    already JSON values (text, numbers, booleans, null, and lists and dicts of them), built without
    pydantic's validation and serialiser, which cost a writer emitting one event per row (ingest's
    `document.persisted`) several times as much. The data's keys are the model's fields, in its
    order (a KeyError names one `data` lacks); a unit test holds the two equal."""
    return {
        "event_id": str(event_id),
        "type": event_type,
        "schema_version": SCHEMA_VERSION,
        "tenant": str(tenant),
        "occurred_at": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
        "producer": producer,
        "trace": trace,
        "data": {name: data[name] for name in model.model_fields},
    }
