"""`bench/load_test.py` for a few seconds (its own ingest, edge classifier, navigator and audit
processes, tenant, corpus and topics), so the 10-minute benchmark cannot rot unnoticed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "bench" / "load_test.py"


def test_help_runs_nothing() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--help"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "--persist-rate" in done.stdout
    assert "--navigate-rate" in done.stdout
    assert "load:" not in done.stderr  # nothing started


def test_a_short_run_measures_every_window_without_errors(tmp_path: Path) -> None:
    output = tmp_path / "load_test.json"
    done = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--minutes",
            "0.1",
            "--window",
            "3",
            "--persist-rate",
            "10",
            "--navigate-rate",
            "4",
            "--seed-documents",
            "100",
            "--drain",
            "30",
            "--output",
            str(output),
            "--logs",
            str(tmp_path / "logs"),
        ],
        capture_output=True,
        text=True,
        timeout=150,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(output.read_text())
    assert result["errors_total"] == 0, result["first_errors"]
    totals = result["totals"]
    assert totals["persists_sent"] == 60
    assert totals["persisted_seen"] == 60
    assert totals["documents_stored"] == 160
    assert totals["navigations"] == 24
    assert totals["shutdown_codes"] == dict.fromkeys(
        ("ingest", "edge-classifier", "navigator", "audit"), 0
    )
    windows = result["windows"]
    assert [w["window"] for w in windows] == [1, 2]
    for window in windows:
        assert window["persist"]["n"] == 30
        assert window["navigate"]["n"] == 12
        assert 0 < window["persist"]["p50_ms"] <= window["persist"]["p95_ms"]
        assert 0 < window["navigate"]["p50_ms"] <= window["navigate"]["p95_ms"]
        assert set(window["rss_mb"]) == {"ingest", "edge-classifier", "navigator", "audit"}
        assert set(window["lag_max"]) == {"ingest", "classifier", "audit"}
        # Every document sent is timed to its edges' commit, or counted as given none.
        assert window["edges"]["n"] + window["edges"]["documents_without"] == 30
        assert window["edges"]["n"] > 0
    # Every edge row stored was seen committed (its audit event) before the run ended.
    assert totals["edge_rows_seen_committed"] == totals["edge_rows"] > 0
    assert set(result["lag_slope_per_minute_last_half"]) == {"classifier", "ingest", "audit"}
    ratios = result["ratios"]
    assert ratios["persist_p95_vs_first"][0] == 1.0
    assert set(ratios["rss_last_vs_first"]) == {"ingest", "edge-classifier", "navigator", "audit"}
    assert "persist p95 / window 1" in done.stdout
    assert "lag slope over the last half" in done.stdout
