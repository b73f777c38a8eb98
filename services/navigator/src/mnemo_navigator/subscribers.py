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

A request is authenticated exactly as an HTTP call is: its record carries the caller's bearer
token in an `authorization` header (`Bearer <token>`), verified by the same verifier as the HTTP
API. The tenant, the scopes and the `client` claim come from the token, never from the event: a
request without a valid token, with a token lacking the `read` scope, whose envelope names another
tenant than its token, or whose body's `client` differs from the token's claim, is dead-lettered
with the reason and never answered (the dead letter drops the header, so no token is kept). The
token travels in a header, not in the event, so the topic's retained payloads hold no credentials.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from mnemo_auth import AuthError, Principal, TokenVerifier, bearer_token
from mnemo_events.broker import publish
from mnemo_events.consumer import Received
from mnemo_events.dead_letters import AUTHORIZATION
from mnemo_events.errors import Rejected
from mnemo_events.models import NavigateCompleted, NavigateHit, NavigateRequested, new_envelope
from mnemo_events.topics import NAVIGATE_COMPLETED
from mnemo_events.tracing import current_traceparent, trace_id_of

from mnemo_navigator.corpus_forms import FormsNavigator
from mnemo_navigator.errors import NavigatorError
from mnemo_navigator.use_cases import PRODUCER, Caller, Claim, NavigateRequest, Navigator

CONSUMER = "mnemo.navigator"


def requester(verifier: TokenVerifier, received: Received[NavigateRequested]) -> Principal:
    """Who a navigate request speaks for: the principal of the bearer token its record carries,
    when it grants `read` and agrees with the envelope's tenant and the body's `client`; else
    `Rejected` with the reason (which never quotes the token)."""
    envelope = received.envelope
    try:
        principal = verifier.verify(bearer_token(received.delivery.header(AUTHORIZATION)))
    except AuthError as error:
        raise Rejected(
            f"navigate request not authenticated: {error} (send the caller's token in the "
            f"record's '{AUTHORIZATION}' header as 'Bearer <token>')"
        ) from None
    try:
        principal.require("read")
    except AuthError as error:
        raise Rejected(f"navigate request not authorised: {error}") from None
    if principal.tenant != envelope.tenant:
        raise Rejected(
            f"the envelope names tenant {envelope.tenant} but the token is for tenant "
            f"{principal.tenant}: a request reads only its token's tenant"
        )
    client = envelope.data.client
    if client is not None and dict(client) != dict(principal.client):
        raise Rejected(
            "the request's 'client' is not the token's client claim: leave 'client' out (the "
            "token's claim applies) or send the token of that end-client"
        )
    return principal


def navigate_requested_handler(
    navigator: Navigator | FormsNavigator,
    broker: Any,
    verifier: TokenVerifier,
    reply_topics: Iterable[str] = (),
) -> Callable[[Received[NavigateRequested]], Awaitable[None]]:
    """`verifier`: the HTTP API's token verifier. `reply_topics`: completed topics a request may
    name in `reply_to`, beside the default."""
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
        principal = requester(verifier, received)
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
                bounded=False,  # the consumer's batch bounds it; a busy answer would be lost
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
