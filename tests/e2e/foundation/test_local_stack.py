"""The local stack that `make up` started is up, says so, and a second `up` changes nothing."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_dev_status_reports_postgres_and_kafka_up_on_their_ports() -> None:
    result = subprocess.run(
        ["mnemo", "dev", "status", "--json"], capture_output=True, text=True, check=True, cwd=ROOT
    )
    statuses = {entry["name"]: entry for entry in json.loads(result.stdout)}
    assert statuses["postgres"]["up"], statuses["postgres"]
    assert statuses["kafka"]["up"], statuses["kafka"]
    assert statuses["postgres"]["port"] == int(os.environ.get("MNEMO_PG_PORT", "25432"))
    assert statuses["kafka"]["port"] == int(os.environ.get("MNEMO_KAFKA_PORT", "29092"))


def test_a_second_up_is_a_no_op_and_says_so() -> None:
    pids_before = {p.name: p.read_text() for p in (ROOT / ".local" / "run").glob("*.pid")}
    result = subprocess.run(
        ["bash", "deploy/local/stack.sh", "up"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    assert "postgres: already running" in result.stdout
    assert "kafka: already running" in result.stdout
    pids_after = {p.name: p.read_text() for p in (ROOT / ".local" / "run").glob("*.pid")}
    assert pids_after == pids_before


def test_up_restarts_a_service_whose_code_changed_since_it_started_and_only_that_one() -> None:
    run = ROOT / ".local" / "run"
    pids_before = {p.name: p.read_text() for p in run.glob("*.pid")}
    assert "audit.pid" in pids_before, "make up starts the audit service"
    # what `up` recorded when audit started, made stale as an edit to its code would make it
    (run / "audit.code").write_text("the fingerprint of older code\n")
    result = subprocess.run(
        ["bash", "deploy/local/services.sh", "up"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    assert "audit: its code changed since it started: restarting" in result.stdout
    assert "ingest: already running" in result.stdout
    pids_after = {p.name: p.read_text() for p in run.glob("*.pid")}
    assert pids_after["audit.pid"] != pids_before["audit.pid"]
    assert {k: v for k, v in pids_after.items() if k != "audit.pid"} == {
        k: v for k, v in pids_before.items() if k != "audit.pid"
    }
