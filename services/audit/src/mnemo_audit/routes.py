"""HTTP: `GET /v1/audit` (a page of the caller's tenant's chain) and `GET /v1/audit/verify`.

The tenant comes only from the verified bearer token; the token needs scope `audit` (or `admin`)
and its tenant must exist (403 otherwise, never an empty 200). A token confined to one end-client
(its `client` claim) sees only the rows recorded for exactly that client (`payload.client`), and
may not verify the tenant's whole chain (403). A query parameter holding text the audit log cannot
hold (NUL, a lone surrogate) or a time outside the representable range is a 422 with the reason.
"""

# No `from __future__ import annotations`: FastAPI must see the dependencies defined inside
# `audit_router` as objects, not as names it cannot resolve.

import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, HTTPException, Query, Request, status
from mnemo_auth import (
    InsufficientScopeError,
    InvalidTokenError,
    Principal,
    TokenVerifier,
    bearer_token,
)
from mnemo_store.audit_chain import AuditValueError, ChainReport, ChainRow, check_chain_value
from mnemo_store.audit_log import AuditFilter
from pydantic import AwareDatetime, BaseModel, ConfigDict, JsonValue

from mnemo_audit.use_cases import AuditReader, audit_page, verify_audit_chain

SCOPE = "audit"


class Problem(BaseModel):
    detail: str


class AuditRowOut(BaseModel):
    model_config = ConfigDict(frozen=True)

    seq: int
    event_id: uuid.UUID
    kind: str
    occurred_at: datetime
    producer: str
    trace: str | None
    payload: dict[str, JsonValue]
    prev_hash: str
    hash: str
    recorded_at: datetime | None
    payload_sha256: str | None = None
    """The digest the row's link covers (the payload's canonical JSON, hashed)."""
    redacted_at: datetime | None = None
    """Set when the payload was redacted (it is then empty); the digest and the link stay."""


class AuditPage(BaseModel):
    items: list[AuditRowOut]
    next_after: int | None
    """Pass as `after` for the next page; null on the last page."""


class ChainBreakOut(BaseModel):
    seq: int
    problem: str
    detail: str


class VerifyOut(BaseModel):
    ok: bool
    rows: int
    head_seq: int
    head_hash: str
    broken: ChainBreakOut | None
    redacted: int = 0
    """Rows whose payload was redacted: their links verified, their content is gone."""


def _row(row: ChainRow) -> AuditRowOut:
    return AuditRowOut(
        seq=row.seq,
        event_id=row.event_id,
        kind=row.kind,
        occurred_at=row.occurred_at,
        producer=row.producer,
        trace=row.trace,
        payload=dict(row.payload),
        prev_hash=row.prev_hash.hex(),
        hash=row.hash.hex(),
        recorded_at=row.recorded_at,
        payload_sha256=None if row.payload_digest is None else row.payload_digest.hex(),
        redacted_at=row.redacted_at,
    )


def _report(report: ChainReport) -> VerifyOut:
    broken = report.broken
    return VerifyOut(
        ok=report.ok,
        rows=report.rows,
        head_seq=report.head_seq,
        head_hash=report.head_hash.hex(),
        redacted=report.redacted,
        broken=None
        if broken is None
        else ChainBreakOut(seq=broken.seq, problem=broken.problem, detail=broken.detail),
    )


ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": Problem, "description": "missing, malformed, expired or wrongly signed token"},
    403: {
        "model": Problem,
        "description": "the token lacks scope `audit`, names a tenant that does not exist, or "
        "(verify) is confined to one end-client",
    },
    422: {"model": Problem, "description": "a query parameter the audit log cannot hold"},
    503: {"model": Problem, "description": "the audit log is not reachable yet"},
}


def audit_router(
    verifier: TokenVerifier, reader: Callable[[], AuditReader | None], page_limit: int
) -> APIRouter:
    """The audit API over `reader` (None until the service has connected: 503)."""
    router = APIRouter(prefix="/v1/audit", tags=["audit"], responses=ERRORS)
    known: set[uuid.UUID] = set()
    """Tenants seen to exist (tenants are not deleted while the service runs)."""

    def log() -> AuditReader:
        current = reader()
        if current is None:
            raise HTTPException(
                status.HTTP_503_SERVICE_UNAVAILABLE, "the audit log is not connected yet"
            )
        return current

    async def caller_of(
        audit: Annotated[AuditReader, Depends(log)],
        authorization: Annotated[str | None, Header()] = None,
    ) -> Principal:
        try:
            principal = verifier.verify(bearer_token(authorization))
            principal.require(SCOPE)
        except InvalidTokenError as error:
            raise HTTPException(
                status.HTTP_401_UNAUTHORIZED, str(error), headers={"WWW-Authenticate": "Bearer"}
            ) from error
        except InsufficientScopeError as error:
            raise HTTPException(status.HTTP_403_FORBIDDEN, str(error)) from error
        if principal.tenant not in known:
            if not await audit.tenant_exists(principal.tenant):
                raise HTTPException(
                    status.HTTP_403_FORBIDDEN,
                    f"the token's tenant {principal.tenant} does not exist: no audit log to read; "
                    "use a token issued for a tenant `mnemo tenant list` shows",
                )
            known.add(principal.tenant)
        return principal

    def storable_query(
        request: Request, principal: Annotated[Principal, Depends(caller_of)]
    ) -> Principal:
        """The caller, once every query parameter (name and value) is text the log can hold."""
        for name, value in request.query_params.multi_items():
            try:
                check_chain_value(name, "a query parameter's name")
                check_chain_value(value, f"query parameter {name!r}")
            except AuditValueError as error:
                raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, str(error)) from None
        return principal

    @router.get("", response_model=AuditPage)
    async def list_audit(
        caller: Annotated[Principal, Depends(storable_query)],
        audit: Annotated[AuditReader, Depends(log)],
        corpus: Annotated[str | None, Query(max_length=200)] = None,
        event_type: Annotated[
            str | None,
            Query(alias="type", max_length=300, description="`query`, `persist` or an action"),
        ] = None,
        since: Annotated[AwareDatetime | None, Query(description="occurred at or after")] = None,
        until: Annotated[AwareDatetime | None, Query(description="occurred before")] = None,
        after: Annotated[int, Query(ge=0, le=2**62, description="rows with a greater seq")] = 0,
        limit: Annotated[int, Query(ge=1, le=10_000)] = 100,
    ) -> AuditPage:
        filters = AuditFilter(
            corpus=corpus,
            event_type=event_type,
            since=_in_range(since, "since"),
            until=_in_range(until, "until"),
            client=caller.client or None,
        )
        rows, next_after = await audit_page(
            audit, caller.tenant, after_seq=after, limit=min(limit, page_limit), filters=filters
        )
        return AuditPage(items=[_row(r) for r in rows], next_after=next_after)

    @router.get("/verify", response_model=VerifyOut)
    async def verify_audit(
        caller: Annotated[Principal, Depends(storable_query)],
        audit: Annotated[AuditReader, Depends(log)],
    ) -> VerifyOut:
        if caller.client:
            raise HTTPException(
                status.HTTP_403_FORBIDDEN,
                "this token is confined to one end-client (its 'client' claim), and verify "
                "covers the tenant's whole chain, every client's rows: use a tenant-wide token "
                "(no 'client' claim) with scope 'audit'",
            )
        return _report(await verify_audit_chain(audit, caller.tenant))

    return router


def _in_range(moment: datetime | None, name: str) -> datetime | None:
    """`moment` when it has a UTC equivalent (Postgres compares in UTC), else a 422 saying so."""
    if moment is None:
        return None
    try:
        moment.astimezone(UTC)
    except OverflowError:
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT,
            f"query parameter {name!r}: {moment.isoformat()} is outside the representable range "
            "once converted to UTC; give a time between 0001-01-02 and 9999-12-30",
        ) from None
    return moment
