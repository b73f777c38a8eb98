"""The process around a service: probes over HTTP, start, wait for SIGTERM, stop in order.

    runtime = ServiceRuntime(name="ingest", port=8081, start=..., stop=..., checks=...)
    raise SystemExit(asyncio.run(runtime.run()))

On SIGUSR1 the process logs what every asyncio task is waiting for (`tasks_dumped`: the stacks,
tasks with the same stack counted together) and goes on serving: what an operator asks of a
service that answers nothing while it uses no CPU (a thread dump, `py-spy dump`, shows only the
idle event loop).

On SIGTERM (or SIGINT) `stopping` is set first (consumers stop retrying and leave uncommitted
what they have not finished, `/readyz` turns 503), then `stop` runs (stop the broker, which
waits for the batch in hand and commits it; stop background tasks; close pools) within
`stop_timeout`, then the HTTP server closes and `run` returns 0.

The HTTP server runs with the limits of `http` (`mnemo_telemetry.http_limits`: header and body
time-outs, a connection cap, failed accepts and shed connections logged once per interval).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import traceback
from collections import Counter
from collections.abc import Awaitable, Callable, Generator, Mapping
from dataclasses import dataclass, field

import structlog
import uvicorn
from fastapi import FastAPI

from mnemo_telemetry.http_limits import (
    HttpSettings,
    PressureLog,
    bounded_protocol,
    quiet_server_warnings,
    widen_listen_queue,
)
from mnemo_telemetry.probes import ReadinessCheck, probe_app

log = structlog.get_logger("mnemo_telemetry.service")


class _Server(uvicorn.Server):
    """uvicorn without its own signal handling: the runtime owns SIGTERM."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


@dataclass
class ServiceRuntime:
    name: str
    port: int
    start: Callable[[], Awaitable[None]]
    stop: Callable[[], Awaitable[None]]
    checks: Mapping[str, ReadinessCheck] = field(default_factory=dict)
    consumer_checks: Mapping[str, ReadinessCheck] = field(default_factory=dict)
    """Reported by `/readyz?consumers=true` only (`mnemo_telemetry.probes`)."""
    host: str = "127.0.0.1"
    stopping: asyncio.Event = field(default_factory=asyncio.Event)
    app: FastAPI | None = None
    """The service's own HTTP app (it must include `probe_router`); a probe-only app otherwise."""
    stop_timeout: float = 9.0
    http: HttpSettings = field(default_factory=HttpSettings)
    """The HTTP server's limits (`MNEMO_HTTP_…`)."""

    async def run(self) -> int:
        """Serve until SIGTERM/SIGINT; returns the process exit code."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._on_signal, sig)
        loop.add_signal_handler(signal.SIGUSR1, dump_tasks)
        app = self.app or probe_app(
            self.name, self.checks, self.stopping, consumer_checks=self.consumer_checks
        )
        pressure = PressureLog(self.http.log_interval_seconds)
        loop.set_exception_handler(pressure.loop_exception_handler(loop.get_exception_handler()))
        unquiet = quiet_server_warnings(pressure)
        protocol = bounded_protocol(self.http, pressure)
        server = _Server(
            uvicorn.Config(
                app,
                host=self.host,
                port=self.port,
                log_config=None,
                lifespan="off",
                access_log=False,
                http=protocol,
                timeout_keep_alive=self.http.keep_alive_seconds,
                backlog=self.http.accept_batch,
            )
        )
        serving = asyncio.create_task(server.serve())
        while not server.started:
            if serving.done():
                log.error("http_failed", port=self.port, error=repr(serving.exception()))
                unquiet()
                return 1
            await asyncio.sleep(0.02)
        widen_listen_queue(
            (sock for listening in server.servers for sock in listening.sockets), self.http.backlog
        )
        log.info("http_listening", host=self.host, port=self.port, max_connections=protocol.cap)
        code = 0
        try:
            await self.start()
            log.info("started")
            await self.stopping.wait()
        except Exception as error:
            log.exception("start_failed", error=repr(error))
            code = 1
            self.stopping.set()
        try:
            await asyncio.wait_for(self.stop(), self.stop_timeout)
            log.info("stopped")
        except TimeoutError:
            log.error("stop_timed_out", seconds=self.stop_timeout)
            code = code or 1
        except Exception as error:
            log.exception("stop_failed", error=repr(error))
            code = code or 1
        server.should_exit = True
        await serving
        pressure.flush()
        unquiet()
        return code

    def _on_signal(self, sig: signal.Signals) -> None:
        log.info("signal", signal=sig.name)
        self.stopping.set()


def dump_tasks() -> None:
    """Log the running loop's tasks grouped by the stack they are suspended in (innermost frame
    last), the largest group first: a thousand requests waiting on one lock are one entry."""
    groups: Counter[str] = Counter()
    tasks = asyncio.all_tasks()
    for task in tasks:
        frames = traceback.StackSummary.extract(
            (frame, frame.f_lineno) for frame in task.get_stack()
        )
        groups["".join(frames.format()) or "(no frame)\n"] += 1
    stacks = "".join(f"--- {count} task(s)\n{stack}" for stack, count in groups.most_common())
    log.warning("tasks_dumped", tasks=len(tasks), stacks=stacks)
