"""`mnemo dev status` reports which local services are up, on which ports."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from mnemo_cli.commands.dev import find_project_root, local_status, pid_from_file
from mnemo_cli.main import main


def test_the_project_root_is_found_from_a_subfolder(tmp_path: Path) -> None:
    (tmp_path / "deploy" / "local").mkdir(parents=True)
    (tmp_path / "deploy" / "local" / "stack.sh").write_text("")
    nested = tmp_path / "a" / "b"
    nested.mkdir(parents=True)
    assert find_project_root(nested) == tmp_path
    assert find_project_root(Path("/")) is None


def test_a_stale_or_garbled_pid_file_counts_as_not_running(tmp_path: Path) -> None:
    (tmp_path / "garbled.pid").write_text("not a pid")
    (tmp_path / "stale.pid").write_text("999999999")
    (tmp_path / "alive.pid").write_text(str(os.getpid()))
    assert pid_from_file(tmp_path / "garbled.pid") is None
    assert pid_from_file(tmp_path / "stale.pid") is None
    assert pid_from_file(tmp_path / "missing.pid") is None
    assert pid_from_file(tmp_path / "alive.pid") == os.getpid()


def test_a_service_is_up_only_when_our_pid_is_alive_and_its_port_answers(tmp_path: Path) -> None:
    run = tmp_path / ".local" / "run"
    run.mkdir(parents=True)
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        (run / "postgres.pid").write_text(str(os.getpid()))
        (run / "navigator.pid").write_text(str(os.getpid()))
        with (
            socket.socket() as spare
        ):  # a port nothing listens on (make up runs the real navigator)
            spare.bind(("127.0.0.1", 0))
            free = spare.getsockname()[1]
        environ = {
            "MNEMO_PG_PORT": str(port),
            "MNEMO_KAFKA_PORT": str(port),
            "MNEMO_NAVIGATOR_PORT": str(free),
        }
        statuses = {status.name: status for status in local_status(tmp_path, environ)}
    assert statuses["postgres"].up
    assert statuses["postgres"].port == port
    assert not statuses["kafka"].up  # the port answers, but no pid file of ours says we started it
    assert not statuses["navigator"].up  # our pid is alive, but nothing listens on its port


def test_the_status_command_prints_one_line_per_service(capsys: object) -> None:
    assert main(["dev", "status"]) == 0
    out = capsys.readouterr().out  # type: ignore[attr-defined]  # pytest's CaptureFixture
    for name in ("postgres", "kafka", "ingest", "edge-classifier", "navigator", "audit"):
        assert name in out
