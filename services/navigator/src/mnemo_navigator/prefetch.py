"""Deterministic prefetch over a route (CORPUS.md A, the registry seed), over two ports.

`Prefetcher.prefetch(caller, route_id, goal, version)`:

1. the route's version (`version`, else its active one; 404 when there is none); a route in mode
   `tool` never prefetches (its scope is catalogue documentation, 409 `ROUTE_NOT_PREFETCH`);
2. every corpus row in scope, in order, read from the registry before any gateway is asked: one that
   is not registered or not `published` fails the call naming it (409 `CORPUS_NOT_PUBLISHED`), and no
   request reaches any gateway;
3. for each corpus, in scope order and one at a time, `POST {collection, goal}` to its `url` over
   HTTP; a time-out, an unreachable gateway, a status other than 200, a body that is not JSON or has
   no `chunks` list, or a malformed chunk fails the whole call naming the corpus (502
   `GATEWAY_FAILED`); every chunk is tagged with its `corpus_id`;
4. no chunk at all fails closed (502 `PREFETCH_EMPTY`): a grounded route never answers ungrounded.

The answer holds the slots (`prefetch`: every chunk in scope order; `prefetch:<corpus_id>`: that
corpus's) and `packed`, one line per chunk: `[<corpus_id>:<chunk id>] <text>` (the text's white
space collapsed to single spaces). No partial result is ever returned.

Only Mnemo's own gateway (a url under `PrefetchPolicy.own_gateway`, this navigator's
`/v1/corpora/`) receives the caller's bearer token, so it answers under the caller's tenant and
end-client; any other gateway receives no credentials from Mnemo. Each call that found its route is audited once, answered or
failed, as `route:<id>:prefetch` in the caller's tenant (its outbox, like every query audit).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from mnemo_auth import Principal
from mnemo_events.models import AuditRecorded, PrefetchAudited, new_envelope
from mnemo_events.topics import AUDIT
from mnemo_store import OutboxEvent
from mnemo_store.registry import CorpusRow, Route

from mnemo_navigator.errors import NavigatorError
from mnemo_navigator.ports import Transactions
from mnemo_navigator.use_cases import PRODUCER, Caller, checked_query, goal_text

MAX_CHUNKS_PER_CORPUS = 500
"""More chunks than this from one gateway fail the call (a runaway gateway, not a ranking)."""


class UnknownRouteError(NavigatorError):
    status = 404
    code = "NOT_FOUND"


class RouteNotPrefetchError(NavigatorError):
    status = 409
    code = "ROUTE_NOT_PREFETCH"


class CorpusNotPublishedError(NavigatorError):
    status = 409
    code = "CORPUS_NOT_PUBLISHED"


class GatewayFailedError(NavigatorError):
    status = 502
    code = "GATEWAY_FAILED"


class PrefetchEmptyError(NavigatorError):
    status = 502
    code = "PREFETCH_EMPTY"


# ------------------------------------------------------------------------------------------ ports


class Registry(Protocol):
    """The registry rows prefetch reads (deployment-wide, no tenant)."""

    async def route(self, route_id: str, version: str | None) -> Route | None:
        """Version `version` of the route, or its active version when None."""

    async def corpus(self, corpus_id: str) -> CorpusRow | None: ...


class GatewayError(Exception):
    """A gateway that could not be asked or did not answer in time: the message says which."""


@dataclass(frozen=True, slots=True)
class GatewayReply:
    status: int
    body: object
    """The parsed JSON body, or None when the body was not JSON."""


class Gateway(Protocol):
    async def post(
        self, url: str, body: Mapping[str, Any], headers: Mapping[str, str]
    ) -> GatewayReply:
        """POST `body` as JSON; GatewayError when it times out or cannot connect."""


# -------------------------------------------------------------------------------------- use case


@dataclass(frozen=True, slots=True)
class Prefetched:
    route: Route
    slots: dict[str, dict[str, Any]]
    packed: str


@dataclass(frozen=True, slots=True)
class PrefetchPolicy:
    audit_goal_text: bool = True
    audit_topic: str = AUDIT
    own_gateway: str | None = None
    """The prefix of this navigator's gateway urls (`http://HOST:PORT/v1/corpora/`): the only
    urls the caller's token is sent to. None: it is sent to none."""


class Prefetcher:
    def __init__(
        self,
        registry: Registry,
        gateway: Gateway,
        transactions: Transactions,
        admit: Callable[[Principal], Awaitable[None]],
        policy: PrefetchPolicy | None = None,
    ) -> None:
        self._registry = registry
        self._gateway = gateway
        self._db = transactions
        self._admit = admit
        self._policy = policy or PrefetchPolicy()

    async def prefetch(
        self,
        caller: Caller,
        route_id: str,
        goal: Mapping[str, Any],
        version: str | None = None,
        authorization: str | None = None,
    ) -> Prefetched:
        """The route's prefetch (module docstring). `authorization` is the caller's header, sent
        to Mnemo's own gateway only."""
        started = time.perf_counter()
        await self._admit(caller.principal)
        text = checked_query(goal_text(goal), "goal")
        route = await self._registry.route(route_id, version)
        if route is None:
            which = f"version {version!r}" if version is not None else "active version"
            raise UnknownRouteError(f"route {route_id!r} has no {which}")
        chunk_ids: list[str] = []
        try:
            result = await self._run(route, goal, caller, authorization)
            chunk_ids = [f"{c['corpus_id']}:{c['id']}" for c in result.slots["prefetch"]["chunks"]]
        except NavigatorError as error:
            await self._audit(caller, route, text, chunk_ids, started, str(error))
            raise
        await self._audit(caller, route, text, chunk_ids, started, None)
        return result

    async def _run(
        self,
        route: Route,
        goal: Mapping[str, Any],
        caller: Caller,
        authorization: str | None,
    ) -> Prefetched:
        if route.mode != "deterministic_prefetch":
            raise RouteNotPrefetchError(
                f"route {route.key} is in mode {route.mode}: it never prefetches (its scope is "
                "catalogue documentation; the capability retrieves through its tool)"
            )
        rows: list[CorpusRow] = []
        for corpus_id in route.scope:
            row = await self._registry.corpus(str(corpus_id))
            if row is None:
                raise CorpusNotPublishedError(
                    f"route {route.key}: corpus {corpus_id} is not registered; no gateway was "
                    "asked (prefetch fails rather than retrieving less)"
                )
            if row.status != "published":
                raise CorpusNotPublishedError(
                    f"route {route.key}: corpus {corpus_id} is {row.status}, not published; no "
                    "gateway was asked (prefetch fails rather than retrieving less)"
                )
            rows.append(row)
        slots: dict[str, dict[str, Any]] = {}
        every: list[dict[str, Any]] = []
        for row in rows:
            chunks = await self._search(route, row, goal, caller, authorization)
            slots[f"prefetch:{row.corpus_id}"] = {"corpus_id": row.corpus_id, "chunks": chunks}
            every.extend(chunks)
        if not every:
            raise PrefetchEmptyError(
                f"route {route.key}: prefetch returned no chunks from "
                f"{', '.join(row.corpus_id for row in rows) or 'an empty scope'}; the route fails "
                "closed rather than answer ungrounded"
            )
        packed = "\n".join(
            f"[{chunk['corpus_id']}:{chunk['id']}] {' '.join(chunk['text'].split())}"
            for chunk in every
        )
        return Prefetched(route, {"prefetch": {"chunks": every}, **slots}, packed)

    async def _search(
        self,
        route: Route,
        row: CorpusRow,
        goal: Mapping[str, Any],
        caller: Caller,
        authorization: str | None,
    ) -> list[dict[str, Any]]:
        headers = {"content-type": "application/json", "accept": "application/json"}
        if caller.traceparent:
            headers["traceparent"] = caller.traceparent
        own = self._policy.own_gateway
        if own and authorization and row.url.startswith(own):
            headers["authorization"] = authorization
        body = {"collection": row.collection or row.corpus_id, "goal": dict(goal)}

        def failed(why: str) -> GatewayFailedError:
            return GatewayFailedError(
                f"route {route.key}: the gateway of corpus {row.corpus_id} {why}; prefetch failed "
                "(no partial result)"
            )

        try:
            reply = await self._gateway.post(row.url, body, headers)
        except GatewayError as error:
            raise failed(str(error)) from error
        if reply.status != 200:
            raise failed(f"answered HTTP {reply.status}")
        answer = reply.body
        if not isinstance(answer, dict) or not isinstance(answer.get("chunks"), list):
            raise failed("answered without a 'chunks' list")
        raw = answer["chunks"]
        if len(raw) > MAX_CHUNKS_PER_CORPUS:
            raise failed(f"answered {len(raw)} chunks; at most {MAX_CHUNKS_PER_CORPUS} are taken")
        chunks: list[dict[str, Any]] = []
        for index, chunk in enumerate(raw):
            problem = _chunk_problem(chunk)
            if problem:
                raise failed(f"answered a malformed chunk {index + 1}: {problem}")
            assert isinstance(chunk, dict)
            tags = chunk.get("tags", [])
            chunks.append(
                {**chunk, "id": str(chunk["id"]), "tags": tags, "corpus_id": row.corpus_id}
            )
        return chunks

    async def _audit(
        self,
        caller: Caller,
        route: Route,
        text: str,
        chunk_ids: list[str],
        started: float,
        error: str | None,
    ) -> None:
        principal = caller.principal
        record = PrefetchAudited(
            # A route id written by hand may hold ':' (`mnemo route apply` refuses it).
            action=f"route:{route.route_id.replace(':', '_')}:prefetch",
            route_id=route.route_id,
            route_version=route.route_version,
            corpora=tuple(str(c) for c in route.scope),
            goal=_storable(text) if self._policy.audit_goal_text else None,
            goal_digest=hashlib.sha256(text.encode("utf-8")).hexdigest(),
            chunk_ids=tuple(_storable(c) for c in chunk_ids),
            latency_ms=max((time.perf_counter() - started) * 1000, 0.0),
            error=None if error is None else _storable(error),
            principal=_storable(caller.name),
            trace_id=caller.trace_id,
            client={_storable(k): _storable(v) for k, v in principal.client.items()} or None,
        )
        envelope = new_envelope(
            AuditRecorded(record=record),
            tenant=principal.tenant,
            producer=PRODUCER,
            event_type=AUDIT,
            trace=caller.traceparent,
        )
        headers = {"content-type": "application/json"}
        if caller.traceparent:
            headers["traceparent"] = caller.traceparent
        event = OutboxEvent(
            event_id=envelope.event_id,
            topic=self._policy.audit_topic,
            key=str(principal.tenant).encode(),
            payload=envelope.model_dump(mode="json"),
            headers=headers,
        )
        async with self._db.tenant(principal.tenant) as tx:
            await tx.audit.append(event)


def _chunk_problem(chunk: object) -> str | None:
    if not isinstance(chunk, dict):
        return "not an object"
    if not isinstance(chunk.get("id"), (str, int)) or isinstance(chunk.get("id"), bool):
        return "no 'id' (text or integer)"
    if not isinstance(chunk.get("text"), str):
        return "no 'text'"
    tags = chunk.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        return "'tags' is not a list of text"
    try:
        json.dumps(chunk)
    except (TypeError, ValueError):
        return "not JSON"
    return None


def _storable(text: str) -> str:
    return text.replace("\x00", "\ufffd")
