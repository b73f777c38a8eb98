"""`mnemo dev …`: developer commands for the local stack (`make up` / `make down`)."""

from __future__ import annotations

import argparse
import json
import os
import socket
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class LocalService:
    """A process of the local stack: where it listens and where its pid file is."""

    name: str
    port_variable: str
    default_port: int
    http: bool = False
    """Serves `/healthz` (the Mnemo services)."""


LOCAL_SERVICES: tuple[LocalService, ...] = (
    LocalService("postgres", "MNEMO_PG_PORT", 25432),
    LocalService("kafka", "MNEMO_KAFKA_PORT", 29092),
    LocalService("ingest", "MNEMO_INGEST_PORT", 8081, http=True),
    LocalService("edge-classifier", "MNEMO_EDGE_CLASSIFIER_PORT", 8082, http=True),
    LocalService("navigator", "MNEMO_NAVIGATOR_PORT", 8080, http=True),
    LocalService("audit", "MNEMO_AUDIT_PORT", 8083, http=True),
)


@dataclass(frozen=True, slots=True)
class ServiceStatus:
    name: str
    host: str
    port: int
    up: bool
    pid: int | None
    health: str | None = None
    """`/healthz`'s answer for an HTTP service ("ok", or what went wrong); None otherwise."""


def find_project_root(start: Path) -> Path | None:
    """The checkout holding deploy/local/stack.sh, searched upwards from `start`."""
    for folder in (start, *start.parents):
        if (folder / "deploy" / "local" / "stack.sh").is_file():
            return folder
    return None


def port_accepts(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def pid_from_file(pidfile: Path) -> int | None:
    """The pid in `pidfile` when that process is alive, else None."""
    try:
        pid = int(pidfile.read_text().strip())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return None
    return pid


def healthz(host: str, port: int, timeout: float = 1.0) -> str:
    """What `GET /healthz` says: "ok", or the status / error it gave instead."""
    try:
        with urllib.request.urlopen(f"http://{host}:{port}/healthz", timeout=timeout) as response:
            body = json.loads(response.read() or b"{}")
            return (
                str(body.get("status", "ok"))
                if response.status == 200
                else f"HTTP {response.status}"
            )
    except urllib.error.HTTPError as error:
        return f"HTTP {error.code}"
    except (OSError, ValueError) as error:
        return f"no answer ({type(error).__name__})"


def local_status(root: Path | None, environ: dict[str, str]) -> list[ServiceStatus]:
    run_dir = root / ".local" / "run" if root else None
    statuses = []
    for service in LOCAL_SERVICES:
        port = int(environ.get(service.port_variable, service.default_port))
        pid = pid_from_file(run_dir / f"{service.name}.pid") if run_dir else None
        up = pid is not None and port_accepts("127.0.0.1", port)
        health = healthz("127.0.0.1", port) if up and service.http else None
        statuses.append(ServiceStatus(service.name, "127.0.0.1", port, up, pid, health))
    return statuses


def status_command(args: argparse.Namespace) -> int:
    root = find_project_root(Path.cwd())
    statuses = local_status(root, dict(os.environ))
    if args.json:
        print(json.dumps([asdict(status) for status in statuses]))
        return 0
    for status in statuses:
        where = f"{status.host}:{status.port}"
        state = f"up    {where:<22} pid {status.pid}" if status.up else f"down  ({where})"
        if status.health is not None:
            state += f"  healthz: {status.health}"
        print(f"{status.name:<16} {state}")
    if root is None:
        print("(not inside a Mnemo checkout: pid files unknown, so nothing counts as ours)")
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    dev = subparsers.add_parser("dev", help="developer commands for the local stack")
    dev_commands = dev.add_subparsers(dest="dev_command", metavar="DEV_COMMAND", required=True)
    status = dev_commands.add_parser("status", help="which local services are up, on which ports")
    status.add_argument("--json", action="store_true", help="print a JSON list instead of a table")
    status.set_defaults(func=status_command)
