"""The HTTP API's store routes: rows written into a declared store (`POST /v1/stores/{store}/rows`)
and a document forgotten (`DELETE /v1/stores/{store}/rows/{id}`), through `mnemo_navigator.writes`
(the outbox, Kafka, ingest). The bearer token is verified by
`TokenFirstMiddleware` before the body is read, as for every `/v1` route; errors answer
`{"error": {"code", "message"}}` with the statuses declared here.
"""

# No `from __future__ import annotations`: FastAPI reads the annotations of the handlers defined
# inside `store_router`.

import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Request, Response
from fastapi.security import HTTPAuthorizationCredentials
from mnemo_auth import Principal, TokenVerifier
from mnemo_events.tracing import current_traceparent
from pydantic import BaseModel, ConfigDict, Field, JsonValue

from mnemo_navigator.routes import _PRINCIPAL, ErrorBody, _bearer, authenticate
from mnemo_navigator.writes import MAX_ROWS, MAX_WAIT_SECONDS, Writes

StoreName = Annotated[
    str,
    Path(min_length=1, max_length=63, pattern=r"^[^\x00/]+$", description="a declared store"),
]

_ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": description}
    for status, description in {
        400: "the body is not JSON",
        401: "no token, or an invalid, expired or wrongly signed one",
        403: "the token lacks the write scope, names a tenant that does not exist, or is "
        "client-confined and a corpus reading the store has no pinned scope made of equalities "
        "on the store's columns",
        404: "no registered corpus reads a store of that name (as its documents, for a delete), or "
        "no such document for this token: another tenant's or end-client's rows do not exist here",
        409: "an event id was sent before with another store or values (code EVENT_ID_REUSED)",
        410: "the tenant was erased while the request waited: its queued rows were removed and "
        "will never be written (code TENANT_ERASED)",
        413: "the body is larger than the navigator accepts (MNEMO_NAVIGATOR_MAX_BODY_BYTES)",
        422: "a row, the body or `wait` is invalid (the message names the row and the column)",
        503: "the database is unavailable, or the rows are queued but the relay did not publish "
        "them in time (code NOT_YET_PUBLISHED: they will still be written; do not resend)",
    }.items()
}


class RowsBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rows: Annotated[list[dict[str, JsonValue]], Field(min_length=1, max_length=MAX_ROWS)]
    """The rows, each a column → value object (a client-confined token's pinned columns are set
    from its claim, whatever is sent)."""
    event_ids: Annotated[list[uuid.UUID] | None, Field(max_length=MAX_ROWS)] = None
    """One id per row, chosen by the caller (a UUID4): a resent request then writes each row once.
    Without them the navigator picks new ids."""


class RowsAccepted(BaseModel):
    event_ids: list[uuid.UUID]
    """One persist event per row, in the order sent; each is in Kafka."""
    processed: list[uuid.UUID] | None
    """With `wait`: the events ingest processed within it: written (an edge whose document has
    not arrived yet waits for it), or refused and dead-lettered with the reason (a check only
    ingest can make: an edge across scopes, a duplicate key). The others are still on their way.
    Without `wait`: null."""


RowId = Annotated[
    str,
    Path(
        min_length=1,
        max_length=1024,
        pattern=r"^[^\x00]+$",
        description="the document's id, as text",
    ),
]


class ForgetAccepted(BaseModel):
    event_id: uuid.UUID
    """The forget command, in Kafka: ingest removes the document, every edge touching it, its
    parked edges and the navigation outcomes naming it, and records `store:<name>:delete`."""
    processed: bool | None
    """With `wait`: whether ingest carried it out within it. Without `wait`: null."""


def _wait_query(description: str) -> Any:  # FastAPI's Query() is typed as Any
    """`?wait=SECONDS`: 0 to MAX_WAIT_SECONDS, or absent (do not wait)."""
    return Query(ge=0, le=MAX_WAIT_SECONDS, description=description)


def store_router(writes: Writes, verifier: TokenVerifier) -> APIRouter:
    router = APIRouter(prefix="/v1", responses=_ERRORS)

    def principal(
        request: Request,
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    ) -> Principal:
        verified = request.scope.get("state", {}).get(_PRINCIPAL)
        if isinstance(verified, Principal):
            return verified
        token = None if credentials is None else f"Bearer {credentials.credentials}"
        return authenticate(verifier, token)

    @router.post(
        "/stores/{store}/rows",
        response_model=RowsAccepted,
        status_code=202,
        summary="Write rows into a store (through ingest)",
    )
    async def write_rows(
        store: StoreName,
        body: RowsBody,
        response: Response,
        who: Annotated[Principal, Depends(principal)],
        wait: Annotated[
            float | None, _wait_query("seconds to wait until ingest has processed the rows")
        ] = None,
    ) -> RowsAccepted:
        result = await writes.write(
            who,
            store,
            body.rows,
            wait=wait,
            traceparent=current_traceparent(),
            event_ids=body.event_ids,
        )
        response.headers["Server-Timing"] = ", ".join(
            f"{name};dur={ms:.1f}" for name, ms in result.timings.items()
        )
        return RowsAccepted(
            event_ids=list(result.event_ids),
            processed=None if result.processed is None else list(result.processed),
        )

    @router.delete(
        "/stores/{store}/rows/{id:path}",  # an id may hold '/' (a file path, say)
        response_model=ForgetAccepted,
        status_code=202,
        summary="Forget a document, with its edges and the outcomes naming it (through ingest)",
    )
    async def forget_row(
        store: StoreName,
        id: RowId,  # the path parameter's public name
        who: Annotated[Principal, Depends(principal)],
        wait: Annotated[
            float | None, _wait_query("seconds to wait until ingest has forgotten the document")
        ] = None,
        event_id: Annotated[
            uuid.UUID | None,
            Query(description="the caller's id for the command: a resent request forgets once"),
        ] = None,
    ) -> ForgetAccepted:
        result = await writes.forget(
            who, store, id, wait=wait, traceparent=current_traceparent(), event_id=event_id
        )
        return ForgetAccepted(
            event_id=result.event_ids[0],
            processed=None if result.processed is None else bool(result.processed),
        )

    return router
