"""Live checks of `make ops`: a span exported by mnemo_telemetry comes back from Jaeger's query API
with its attributes, and the local Prometheus has loaded every alert rule and evaluates every
dashboard and alert expression without error. Run with `make ops-test` (it starts `make ops`).

The end-to-end traces and "every expression returns data" are in test_live_pipeline.py.
"""

from __future__ import annotations

import json
import os
import urllib.parse
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from mnemo_telemetry import trace_view, tracing
from mnemo_telemetry.errors import TelemetryError

from tests.waiting import eventually_sync

pytestmark = pytest.mark.ops

ROOT = Path(__file__).resolve().parents[2]
JAEGER = os.environ.get("MNEMO_JAEGER_URL", "http://127.0.0.1:16686")
PROMETHEUS = f"http://127.0.0.1:{os.environ.get('MNEMO_PROMETHEUS_PORT', '29090')}"
OTLP = os.environ.get("MNEMO_OTLP_ENDPOINT", "http://127.0.0.1:4318")


def get_json(url: str) -> Any:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return json.load(response)
    except OSError as error:
        pytest.fail(f"{url} does not answer ({error}): start Jaeger and Prometheus with `make ops`")


def test_a_span_exported_over_otlp_comes_back_from_jaegers_query_api() -> None:
    service = f"ops-test-{uuid.uuid4().hex[:8]}"
    configured = tracing.configure_tracing(service, OTLP)
    with tracing.navigate_span(tenant="t-ops", corpus="notes", mode="axon") as navigate:
        with tracing.sql_span("SELECT", "docs", tenant="t-ops"):
            pass
        navigate.set(graph_documents=3, graph_edges=2, cache="miss", epr_iterations=9, hits=1)
        trace_id = navigate.trace_id
    assert trace_id is not None
    assert configured.force_flush()
    configured.shutdown()

    def shown() -> list[str]:
        try:
            return trace_view.show_trace(JAEGER, trace_id)
        except trace_view.TraceNotFoundError:
            return []
        except TelemetryError as error:
            pytest.fail(str(error))

    lines = eventually_sync(
        shown, within=15, every=0.3, what=f"Jaeger did not return trace {trace_id}"
    )
    assert lines[0].startswith(f"trace {trace_id}: 2 spans")
    assert f"mnemo-{service}: mnemo.navigate" in lines[1]
    assert "mnemo.hits.returned=1" in lines[1]
    assert "SELECT docs" in lines[2]


def test_prometheus_has_loaded_every_alert_rule_and_they_evaluate() -> None:
    groups = get_json(f"{PROMETHEUS}/api/v1/rules")["data"]["groups"]
    loaded = {rule["name"]: rule for group in groups for rule in group["rules"]}
    expected = {
        rule["alert"]
        for path in (ROOT / "deploy" / "prometheus" / "rules").glob("*.yml")
        for group in yaml.safe_load(path.read_text())["groups"]
        for rule in group["rules"]
    }
    assert expected <= set(loaded)

    def every_rule_evaluated() -> bool:
        nonlocal loaded
        groups = get_json(f"{PROMETHEUS}/api/v1/rules")["data"]["groups"]
        loaded = {rule["name"]: rule for group in groups for rule in group["rules"]}
        return all(loaded[name]["health"] != "unknown" for name in expected)

    eventually_sync(
        every_rule_evaluated,
        within=30,
        every=1,
        what=lambda: (
            "never evaluated: "
            + ", ".join(name for name in expected if loaded[name]["health"] == "unknown")
        ),
    )
    for name in expected:
        assert loaded[name]["health"] == "ok", (name, loaded[name].get("lastError"))


def test_every_dashboard_expression_is_accepted_by_the_live_prometheus() -> None:
    for path in sorted((ROOT / "deploy" / "grafana" / "dashboards").glob("*.json")):
        dashboard = json.loads(path.read_text())
        for panel in dashboard["panels"]:
            for target in panel.get("targets", []):
                expression = (
                    target["expr"]
                    .replace("$__rate_interval", "1m")
                    .replace("$service", ".*")
                    .replace("$corpus", ".*")
                )
                query = urllib.parse.urlencode({"query": expression})
                answer = get_json(f"{PROMETHEUS}/api/v1/query?{query}")
                assert answer["status"] == "success", (path.name, panel["title"], answer)
