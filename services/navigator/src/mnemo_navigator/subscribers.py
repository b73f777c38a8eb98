"""Kafka: `mnemo.navigate.requested.v1` in, `mnemo.navigate.completed.v1` out, correlated by
`request_id`. Thin: decode, call the navigate use case, publish the answer (or why there is none).

A redelivered request (the same `request_id`, e.g. after a crash between the work and the offset
commit) is answered again but remembered once: the request id is claimed in `mnemo.inbox` in the
same transaction as the navigation's memory and audit event.

`reply_to` may name only a completed topic Mnemo owns (`mnemo.navigate.completed.v1`, or one the
caller of `navigate_requested_handler` adds): any other topic is refused before any work, and the
request is dead-lettered with the reason. Answering on the default topic instead would reach no
one (the requester listens on the topic it named), while the dead letter keeps the request and
says why; and a reply never goes into a topic another consumer reads as input (`mnemo.persist.v1`),
nor waits for the metadata of a topic that does not exist.

A request names its tenant in the envelope (Kafka producers are trusted services of the
deployment); its `client` object plays the part of a token's `client` claim, so a pinned scope
confines it exactly as it confines an HTTP caller.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from mnemo_auth import Principal
from mnemo_events.broker import publish
from mnemo_events.consumer import Received
from mnemo_events.errors import Rejected
from mnemo_events.models import NavigateCompleted, NavigateHit, NavigateRequested, new_envelope
from mnemo_events.topics import NAVIGATE_COMPLETED
from mnemo_events.tracing import current_traceparent, trace_id_of

from mnemo_navigator.errors import NavigatorError
from mnemo_navigator.use_cases import PRODUCER, Caller, Claim, NavigateRequest, Navigator

CONSUMER = "mnemo.navigator"


def navigate_requested_handler(
    navigator: Navigator, broker: Any, reply_topics: Iterable[str] = ()
) -> Callable[[Received[NavigateRequested]], Awaitable[None]]:
    """`reply_topics`: completed topics a request may name in `reply_to`, beside the default."""
    allowed = frozenset({NAVIGATE_COMPLETED, *reply_topics})

    async def handle(received: Received[NavigateRequested]) -> None:
        envelope = received.envelope
        data = envelope.data
        reply_to = data.reply_to or NAVIGATE_COMPLETED
        if reply_to not in allowed:
            raise Rejected(
                f"reply_to {reply_to[:200]!r} is not a completed topic of this navigator: name "
                f"{' or '.join(sorted(allowed))}, or leave reply_to out for "
                f"{NAVIGATE_COMPLETED}"
            )
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
            reply_to,
            new_envelope(
                answer,
                tenant=envelope.tenant,
                producer=PRODUCER,
                event_type=NAVIGATE_COMPLETED,
                trace=current_traceparent(),
            ),
        )

    return handle
