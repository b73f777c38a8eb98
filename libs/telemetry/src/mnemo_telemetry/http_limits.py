"""Bounds on what an HTTP client can make a service hold, applied by `ServiceRuntime` to every
Mnemo service (one home; the settings are `MNEMO_HTTP_…`, shared by all services):

- a connection must send a complete request head within `header_timeout_seconds` of opening (or
  of the first byte of its next request), and the body of a request within `body_timeout_seconds`
  of its head; otherwise it is closed (uvicorn's own keep-alive time-out only starts after a
  response, so a connection that never sent anything used to stay open for ever);
- at most `max_connections` connections are open (lowered to fit the process's file-descriptor
  limit, `connection_cap`): a new connection beyond the cap closes the connection idle the longest
  (no request in flight), or, when every connection has a request in flight, is answered 503 and
  closed. asyncio accepts up to `accept_batch` sockets in one go before any of them reaches the
  protocol, so the cap leaves room for four such batches below the descriptor limit, while the
  kernel's queue of connections waiting to be accepted stays `backlog` long (a full queue drops
  new connections' handshakes: a retry a second later);
- what the server sheds (closed idle connections, refused ones, failed `accept()`s, invalid
  requests) is counted and logged as at most one `http_pressure` line per `log_interval_seconds`,
  never one traceback per event (an `EMFILE` accept loop once wrote 266,239 tracebacks in 25 s).

`BodyLimitMiddleware` bounds a request body before anything parses it: a service whose API takes
bodies adds it to its app.
"""

from __future__ import annotations

import array
import asyncio
import fcntl
import json
import logging
import os
import resource
import socket
import termios
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any, Final

import h11
import structlog
from fastapi import HTTPException
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict
from uvicorn.protocols.http.h11_impl import H11Protocol

log = structlog.get_logger("mnemo_telemetry.http")

ACCEPT_FAILED: Final = "socket.accept() out of system resource"
# uvicorn's per-connection warnings an unauthenticated client can trigger at will.
NOISY_SERVER_WARNINGS: Final = frozenset(
    {"Invalid HTTP request received.", "Exceeded concurrency limit."}
)
_UNAVAILABLE: Final = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nConnection: close\r\n"
    b"Content-Length: 44\r\n\r\ntoo many open connections; retry in a moment"
)


class HttpSettings(BaseSettings):
    """`MNEMO_HTTP_…`: the HTTP server limits of every service. A service's settings hold one:
    `http: HttpSettings = Field(default_factory=HttpSettings)`."""

    model_config = SettingsConfigDict(env_prefix="MNEMO_HTTP_", frozen=True, extra="ignore")

    max_connections: int = Field(default=1000, ge=1)
    """Open connections at most (also bounded by the file-descriptor limit, `connection_cap`)."""
    backlog: int = Field(default=2048, ge=16)
    """Connections the kernel queues for accept() (capped by `net.core.somaxconn`)."""
    accept_batch: int = Field(default=32, ge=1)
    """Sockets accepted in one go, before the connection cap sees any of them."""
    header_timeout_seconds: float = Field(default=10.0, gt=0)
    """Time a connection has to send a whole request head."""
    body_timeout_seconds: float = Field(default=30.0, gt=0)
    """Time a request has to send its whole body once its head arrived."""
    keep_alive_seconds: int = Field(default=5, ge=1)
    """Time an idle connection is kept open after a response (uvicorn's `timeout_keep_alive`)."""
    log_interval_seconds: float = Field(default=10.0, gt=0)
    """At most one `http_pressure` log line per this many seconds."""


RESERVED_DESCRIPTORS: Final = 64
"""Descriptors kept for what is not a client connection: the pools, the broker, the logs."""


def connection_cap(configured: int, accept_batch: int, descriptor_limit: int | None = None) -> int:
    """`configured`, lowered so that accept() never runs out of file descriptors: the soft
    `RLIMIT_NOFILE` less `RESERVED_DESCRIPTORS` and four batches of `accept_batch` sockets (a
    socket reaches the protocol, which closes an idle one for it, and that one's descriptor is
    freed, a few loop iterations after it was accepted, each of which may accept a batch)."""
    soft = descriptor_limit if descriptor_limit is not None else _soft_descriptor_limit()
    if soft <= 0:
        return configured
    return max(16, min(configured, soft - RESERVED_DESCRIPTORS - 4 * accept_batch))


def _soft_descriptor_limit() -> int:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return -1 if soft == resource.RLIM_INFINITY else int(soft)


class PressureLog:
    """Counts what the server shed, by reason, and logs the counts as one `http_pressure` line at
    most every `interval` seconds (the first event of a quiet period is logged at once)."""

    def __init__(self, interval: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.interval = interval
        self._clock = clock
        self._counts: Counter[str] = Counter()
        self._last: float | None = None
        self.lines = 0
        """How many lines were written (for tests and benchmarks)."""

    def note(self, reason: str, **detail: Any) -> None:
        self._counts[reason] += 1
        now = self._clock()
        if self._last is None or now - self._last >= self.interval:
            self._last = now
            self.flush(**detail)

    def flush(self, **detail: Any) -> None:
        if self._counts:
            counts = dict(self._counts)
            self._counts.clear()
            self.lines += 1
            log.warning("http_pressure", shed=counts, interval_s=self.interval, **detail)

    def loop_exception_handler(
        self, previous: Callable[[asyncio.AbstractEventLoop, dict[str, Any]], object] | None
    ) -> Callable[[asyncio.AbstractEventLoop, dict[str, Any]], None]:
        """An event-loop exception handler that counts failed accepts (`EMFILE` and its kin:
        asyncio reports each with a traceback, up to the listen backlog per loop iteration) and
        passes everything else on to `previous` (the loop's default handler when None)."""

        def handle(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
            if context.get("message") == ACCEPT_FAILED:
                self.note("accept_failed", error=repr(context.get("exception")))
            elif previous is not None:
                previous(loop, context)
            else:
                loop.default_exception_handler(context)

        return handle


class _NoisyWarnings(logging.Filter):
    """Folds uvicorn's per-connection warnings into the pressure counts instead of one line each."""

    def __init__(self, pressure: PressureLog) -> None:
        super().__init__()
        self.pressure = pressure

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if message in NOISY_SERVER_WARNINGS:
            self.pressure.note(message.rstrip(".").lower().replace(" ", "_"))
            return False
        return True


class BoundedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with the time-outs and the connection cap of `HttpSettings`.
    `bounded_protocol` makes the subclass that carries the settings."""

    settings: HttpSettings = HttpSettings.model_construct()
    cap: int = 1000
    pressure: PressureLog = PressureLog(10.0)
    by_activity: dict[BoundedH11Protocol, None] = {}  # noqa: RUF012  (one per subclass, see bounded_protocol)
    """The open connections, least recently active first (a dict keeps insertion order)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._reading_body = False

    # -- state

    def in_flight(self) -> bool:
        """A request of this connection is being served (its app task has not answered)."""
        return self.cycle is not None and not self.cycle.response_complete

    def bytes_waiting(self) -> bool:
        """The client sent bytes the server has not read yet."""
        sock = self.transport.get_extra_info("socket")
        if sock is None:
            return False
        available = array.array("i", [0])
        try:
            fcntl.ioctl(sock.fileno(), termios.FIONREAD, available)
        except OSError:
            return False
        return available[0] > 0

    # -- asyncio.Protocol

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]  # uvicorn narrows the argument the same way
        super().connection_made(transport)
        self.by_activity[self] = None
        if len(self.connections) > self.cap and not self._make_room():
            self.pressure.note("refused_at_cap", connections=len(self.connections))
            transport.write(_UNAVAILABLE)
            transport.close()
            return
        self._arm(self.settings.header_timeout_seconds)

    def connection_lost(self, exc: Exception | None) -> None:
        self.by_activity.pop(self, None)
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self.by_activity.pop(self, 0) is None:  # still open: now the most recently active
            self.by_activity[self] = None
        super().data_received(data)
        self._watch()

    def on_response_complete(self) -> None:
        self._disarm()
        self._reading_body = False
        super().on_response_complete()
        self._watch()

    # -- the deadlines

    def _watch(self) -> None:
        """Arms the deadline of the phase the request is in: its head (from its first byte), its
        body (from its head), nothing once it is all read."""
        if self.transport is None or self.transport.is_closing():
            return
        state = self.conn.their_state
        if state is h11.IDLE:
            # Waiting for a head: uvicorn's keep-alive timer guards the silence after a response;
            # once a byte arrived (it cancelled that timer), the head has its own deadline.
            if self._deadline is None and self.conn.trailing_data[0]:
                self._arm(self.settings.header_timeout_seconds)
        elif state is h11.SEND_BODY:
            if not self._reading_body:
                self._reading_body = True
                self._arm(self.settings.body_timeout_seconds)
        else:
            self._disarm()

    def _arm(self, seconds: float) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(seconds, self._expired)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        reason = "body_timeout" if self._reading_body else "header_timeout"
        self.pressure.note(reason, connections=len(self.connections))
        self.transport.close()

    def _make_room(self) -> bool:
        """Closes the connection idle the longest: none of its requests in flight and no bytes
        waiting to be read (a new client whose request has arrived but not been read yet is not
        idle); False when there is none."""
        victim = next(
            (
                c
                for c in self.by_activity
                if c is not self and not c.in_flight() and not c.bytes_waiting()
            ),
            None,
        )
        if victim is None:
            return False
        victim._disarm()
        victim.transport.close()
        self.connections.discard(victim)
        del self.by_activity[victim]
        self.pressure.note("idle_closed_at_cap", connections=len(self.connections))
        return True


def bounded_protocol(settings: HttpSettings, pressure: PressureLog) -> type[BoundedH11Protocol]:
    """The protocol class for `uvicorn.Config(http=…)` carrying `settings` (and the cap fitted to
    this process's descriptor limit)."""
    return type(
        "MnemoH11Protocol",
        (BoundedH11Protocol,),
        {
            "settings": settings,
            "cap": connection_cap(settings.max_connections, settings.accept_batch),
            "pressure": pressure,
            "by_activity": {},
        },
    )


def widen_listen_queue(sockets: Iterable[Any], backlog: int) -> None:
    """Sets the kernel's accept queue of listening `sockets` to `backlog`. asyncio listens with
    the number of sockets it accepts per loop iteration (`accept_batch`, small so that the
    connection cap sees each batch in time); listen() again on a listening socket changes only
    the queue's length (Linux and the BSDs)."""
    for listening in sockets:
        with socket.socket(fileno=os.dup(listening.fileno())) as duplicate:
            duplicate.listen(backlog)


def quiet_server_warnings(pressure: PressureLog) -> Callable[[], None]:
    """Counts uvicorn's per-connection warnings in `pressure`; returns the undo."""
    noisy = _NoisyWarnings(pressure)
    logger = logging.getLogger("uvicorn.error")
    logger.addFilter(noisy)
    return lambda: logger.removeFilter(noisy)


Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def too_large(size: int | str, max_bytes: int) -> str:
    return (
        f"the request body is {size} bytes; at most {max_bytes} are accepted (send a smaller body)"
    )


class BodyLimitMiddleware:
    """Refuses a request body larger than `max_bytes` with 413 before it is parsed: at once when
    `Content-Length` says so (nothing is read), else as soon as the bytes read so far exceed it
    (the app's read raises `HTTPException(413)`; what was read is dropped). The answer carries
    `Connection: close`, so the server stops reading the rest."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_bytes:
            await refuse(send, 413, "PAYLOAD_TOO_LARGE", too_large(declared, self.max_bytes))
            return
        seen = 0

        async def bounded() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise HTTPException(
                        413,
                        too_large(f"more than {self.max_bytes}", self.max_bytes),
                        headers={"Connection": "close"},
                    )
            return message

        await self.app(scope, bounded, send)


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None  # h11 refuses a malformed length before the app sees the request
    return None


async def refuse(send: Send, status: int, code: str, message: str) -> None:
    """An error answer in Mnemo's shape (`{"error": {"code", "message"}}`) that closes the
    connection: sent before the request's body was read, so the rest of it is never read."""
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
    ]
    if status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
