"""HTTP: `GET /v1/audit` (a page of the caller's tenant's chain) and `GET /v1/audit/verify`.

The tenant comes only from the verified bearer token; the token needs scope `audit` (or `admin`).
"""

# No `from __future__ import annotations`: FastAPI must see the dependencies defined inside
# `audit_router` as objects, not as names it cannot resolve.

import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, HTTPException, Query, status
from mnemo_auth import InsufficientScopeError, InvalidTokenError, TokenVerifier, bearer_token
from mnemo_store.audit_chain import ChainReport, ChainRow
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
    )


def _report(report: ChainReport) -> VerifyOut:
    broken = report.broken
    return VerifyOut(
        ok=report.ok,
        rows=report.rows,
        head_seq=report.head_seq,
        head_hash=report.head_hash.hex(),
        broken=None
        if broken is None
        else ChainBreakOut(seq=broken.seq, problem=broken.problem, detail=broken.detail),
    )


ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": Problem, "description": "missing, malformed, expired or wrongly signed token"},
    403: {"model": Problem, "description": "the token lacks scope `audit`"},
    503: {"model": Problem, "description": "the audit log is not reachable yet"},
}


def audit_router(
    verifier: TokenVerifier, reader: Callable[[], AuditReader | None], page_limit: int
) -> APIRouter:
    """The audit API over `reader` (None until the service has connected: 503)."""
    router = APIRouter(prefix="/v1/audit", tags=["audit"], responses=ERRORS)

    def tenant_of(authorization: Annotated[str | None, Header()] = None) -> uuid.UUID:
        try:
            principal = verifier.verify(bearer_token(authorization))
            principal.require(SCOPE)
        except InvalidTokenError as error:
            raise HTTPException(
                status.HTTP_401_UNAUTHORIZED, str(error), headers={"WWW-Authenticate": "Bearer"}
            ) from error
        except InsufficientScopeError as error:
            raise HTTPException(status.HTTP_403_FORBIDDEN, str(error)) from error
        return principal.tenant

    def log() -> AuditReader:
        current = reader()
        if current is None:
            raise HTTPException(
                status.HTTP_503_SERVICE_UNAVAILABLE, "the audit log is not connected yet"
            )
        return current

    @router.get("", response_model=AuditPage)
    async def list_audit(
        tenant: Annotated[uuid.UUID, Depends(tenant_of)],
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
        filters = AuditFilter(corpus=corpus, event_type=event_type, since=since, until=until)
        rows, next_after = await audit_page(
            audit, tenant, after_seq=after, limit=min(limit, page_limit), filters=filters
        )
        return AuditPage(items=[_row(r) for r in rows], next_after=next_after)

    @router.get("/verify", response_model=VerifyOut)
    async def verify_audit(
        tenant: Annotated[uuid.UUID, Depends(tenant_of)],
        audit: Annotated[AuditReader, Depends(log)],
    ) -> VerifyOut:
        return _report(await verify_audit_chain(audit, tenant))

    return router
