"""Kafka: `mnemo.navigate.requested.v1` in, `mnemo.navigate.completed.v1` out, correlated by
`request_id`. Thin: decode, call the navigate use case, publish the answer (or why there is none).

A redelivered request (the same `request_id`, e.g. after a crash between the work and the offset
commit) is answered again but remembered once: the request id is claimed in `mnemo.inbox` in the
same transaction as the navigation's memory and audit event.

A request names its tenant in the envelope (Kafka producers are trusted services of the
deployment); its `client` object plays the part of a token's `client` claim, so a pinned scope
confines it exactly as it confines an HTTP caller.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from mnemo_auth import Principal
from mnemo_events.broker import publish
from mnemo_events.consumer import Received
from mnemo_events.models import NavigateCompleted, NavigateHit, NavigateRequested, new_envelope
from mnemo_events.topics import NAVIGATE_COMPLETED
from mnemo_events.tracing import current_traceparent, trace_id_of

from mnemo_navigator.errors import NavigatorError
from mnemo_navigator.use_cases import PRODUCER, Caller, Claim, NavigateRequest, Navigator

CONSUMER = "mnemo.navigator"


def navigate_requested_handler(
    navigator: Navigator, broker: Any
) -> Callable[[Received[NavigateRequested]], Awaitable[None]]:
    async def handle(received: Received[NavigateRequested]) -> None:
        envelope = received.envelope
        data = envelope.data
        principal = Principal(
            tenant=envelope.tenant,
            subject=f"kafka:{envelope.producer}",
            scopes=frozenset({"read"}),
            client=dict(data.client or {}),
        )
        caller = Caller(principal, trace_id_of(received.context), current_traceparent())
        try:
            result = await navigator.navigate(
                caller,
                data.corpus,
                NavigateRequest(
                    query=data.query,
                    seed=data.from_id,
                    budget=data.budget,
                    where=data.where,
                    params=dict(data.params),
                    mode=data.mode or "mdn",
                    direction=data.direction or "both",
                ),
                claim=Claim(CONSUMER, data.request_id),
            )
            nav = result.navigation
            answer = NavigateCompleted(
                request_id=data.request_id,
                corpus=data.corpus,
                ok=True,
                hits=tuple(
                    NavigateHit(id=hit.id, title=hit.title, score=hit.score, epr=hit.epr)
                    for hit in nav.hits
                ),
                trail=tuple(f"{hit.title} (Δ={hit.gain:.2f})" for hit in nav.hits),
                coverage=nav.coverage,
                revision=result.revision,
                diagnostics={
                    str(k): v
                    for k, v in nav.diagnostics.items()
                    if isinstance(v, str | int | float | bool) or v is None
                },
            )
        except NavigatorError as error:
            answer = NavigateCompleted(
                request_id=data.request_id, corpus=data.corpus, ok=False, error=str(error)
            )
        await publish(
            broker,
            data.reply_to or NAVIGATE_COMPLETED,
            new_envelope(
                answer,
                tenant=envelope.tenant,
                producer=PRODUCER,
                event_type=NAVIGATE_COMPLETED,
                trace=current_traceparent(),
            ),
        )

    return handle
