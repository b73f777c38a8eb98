"""The reference MCP server `@modelcontextprotocol/server-everything` (npm, pinned, installed under
.local by deploy/local/mcp-everything.sh) run on loopback over streamable HTTP for a test module:
the foreign server MCP-bound corpora read. Its static documents are under `PREFIX`."""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.infrastructure import free_port
from tests.waiting import eventually_sync

ROOT = Path(__file__).resolve().parents[3]
PREFIX = "demo://resource/static/document/"


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


@dataclass
class Everything:
    """The npm MCP server, run by this module; `stop` ends it (by its own process id)."""

    process: subprocess.Popen[bytes]
    url: str
    port: int
    entry: str
    """The server's entry point (`node <entry> stdio` runs it over stdio)."""

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)


def installed_entry() -> str:
    """The server's entry point, installed first if it is not (deploy/local/mcp-everything.sh)."""
    installed = subprocess.run(
        ["bash", str(ROOT / "deploy" / "local" / "mcp-everything.sh")],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    return installed.stdout.strip().splitlines()[-1]


@contextmanager
def running_everything() -> Iterator[Everything]:
    """The server over streamable HTTP on a free loopback port, stopped when the block ends."""
    entry = installed_entry()
    port = free_port()
    process = subprocess.Popen(
        ["node", entry, "streamableHttp"],
        env={**os.environ, "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    server = Everything(process, f"http://127.0.0.1:{port}/mcp", port, entry)

    def started() -> bool:
        assert process.poll() is None, "the MCP server exited"
        return _answers(port)

    try:
        eventually_sync(started, within=60, what="the MCP server to listen")
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def everything() -> Iterator[Everything]:
    """One server for a test module."""
    with running_everything() as server:
        yield server
