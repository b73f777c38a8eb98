"""Alert rules and Grafana dashboards read only the metrics of the contract, their PromQL parses,
and the alert rules behave as their `promtool` tests say."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from mnemo_telemetry.metrics import METRIC_NAMES

ROOT = Path(__file__).resolve().parents[3]
PROMETHEUS = ROOT / "deploy" / "prometheus"
DASHBOARDS = sorted((ROOT / "deploy" / "grafana" / "dashboards").glob("*.json"))
RULE_FILES = sorted((PROMETHEUS / "rules").glob("*.yml"))
HISTOGRAMS = {"mnemo_http_request_duration_seconds", "mnemo_handler_duration_seconds",
              "mnemo_navigate_duration_seconds", "mnemo_epr_seconds"}  # fmt: skip
ALLOWED = (
    set(METRIC_NAMES)
    | {f"{name}_{suffix}" for name in HISTOGRAMS for suffix in ("bucket", "count", "sum")}
    | {"up"}
)
PROMQL_WORDS = {
    "sum", "by", "without", "rate", "increase", "delta", "max", "min", "avg", "count", "and", "or",
    "unless", "histogram_quantile", "le", "bool", "on", "ignoring", "group_left", "group_right",
    "offset", "label_values", "topk", "bottomk", "abs", "clamp_min", "clamp_max", "irate",
}  # fmt: skip


def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        pytest.skip("promtool is missing: `make tools` (run by `make test`) installs Prometheus")
    return found


def panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    found = []
    for panel in dashboard["panels"]:
        found.append(panel)
        found.extend(panel.get("panels", []))
    return found


def dashboard_expressions() -> list[tuple[str, str, str]]:
    """(dashboard uid, panel title, PromQL) for every query of every panel."""
    expressions = []
    for path in DASHBOARDS:
        dashboard = json.loads(path.read_text())
        for panel in panels(dashboard):
            for target in panel.get("targets", []):
                expressions.append((dashboard["uid"], panel["title"], target["expr"]))
    return expressions


def rule_expressions() -> list[tuple[str, str]]:
    expressions = []
    for path in RULE_FILES:
        for group in yaml.safe_load(path.read_text())["groups"]:
            for rule in group["rules"]:
                expressions.append((rule.get("alert") or rule["record"], rule["expr"]))
    return expressions


def metric_names(expression: str) -> set[str]:
    without_strings = re.sub(r'"[^"]*"', '""', expression)
    without_labels = re.sub(r"\{[^}]*\}", "", without_strings)
    without_ranges = re.sub(r"\[[^\]]*\]", "", without_labels)
    without_groupings = re.sub(r"\b(by|without|on|ignoring)\s*\([^)]*\)", "", without_ranges)
    words = set(re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*", without_groupings))
    return {word for word in words if word not in PROMQL_WORDS and not word.startswith("__")}


def as_plain_promql(expression: str) -> str:
    """A dashboard query with Grafana's variables replaced, so Prometheus can parse it."""
    return (
        expression.replace("$__rate_interval", "1m")
        .replace("$__interval", "1m")
        .replace("$service", ".*")
        .replace("$corpus", ".*")
    )


def test_the_contract_document_lists_exactly_the_metrics_the_code_defines() -> None:
    document = (PROMETHEUS / "METRICS.md").read_text()
    listed = re.findall(r"^\| `(mnemo_[a-z_]+)` \|", document, flags=re.MULTILINE)
    assert sorted(listed) == sorted(METRIC_NAMES)


@pytest.mark.parametrize(
    ("where", "expression"),
    [(f"{uid}: {title}", expr) for uid, title, expr in dashboard_expressions()]
    + [(f"alert {name}", expr) for name, expr in rule_expressions()],
)
def test_every_panel_and_alert_reads_only_contract_metrics(where: str, expression: str) -> None:
    names = metric_names(as_plain_promql(expression))
    assert names, where
    assert names <= ALLOWED, f"{where} reads {sorted(names - ALLOWED)}"


def test_the_dashboards_show_what_operators_asked_for() -> None:
    everything = "\n".join(expr for _uid, _title, expr in dashboard_expressions())
    for needed in (
        "rate(mnemo_rows_persisted_total",  # ingest rate
        "mnemo_dead_letters_total",
        "histogram_quantile(0.5, sum by (le, corpus) (rate(mnemo_navigate_duration_seconds_bucket",
        "histogram_quantile(0.95, sum by (le, corpus) (rate(mnemo_navigate_duration_seconds_bucket",
        "histogram_quantile(0.99, sum by (le, corpus) (rate(mnemo_navigate_duration_seconds_bucket",
        'mnemo_graph_cache_requests_total{corpus=~"$corpus", result="hit"}',
        "mnemo_consumer_lag",
        "mnemo_audit_rows_appended_total",
    ):
        assert needed in everything, needed


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda path: path.name)
def test_a_dashboard_is_well_formed_for_provisioning(path: Path) -> None:
    dashboard = json.loads(path.read_text())
    assert dashboard["uid"] == path.stem
    assert "mnemo" in dashboard["tags"]
    variables = {variable["name"] for variable in dashboard["templating"]["list"]}
    assert "datasource" in variables
    ids = [panel["id"] for panel in panels(dashboard)]
    assert len(ids) == len(set(ids))
    for panel in panels(dashboard):
        grid = panel["gridPos"]
        assert grid["x"] >= 0, panel["title"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
        if panel["type"] == "row":
            continue
        assert panel["targets"], panel["title"]
        assert panel["description"], panel["title"]
        for target in panel["targets"]:
            assert target["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        used = set(re.findall(r"\$(\w+)", json.dumps(panel["targets"]))) - {"__rate_interval"}
        assert used <= variables, f"{panel['title']} uses undefined variables {used - variables}"


def test_every_dashboard_query_parses_as_promql(tmp_path: Path) -> None:
    rules = {
        "groups": [
            {
                "name": "dashboard-queries",
                "rules": [
                    {"record": f"dashboard:query_{index}", "expr": as_plain_promql(expr)}
                    for index, (_uid, _title, expr) in enumerate(dashboard_expressions())
                ],
            }
        ]
    }
    path = tmp_path / "dashboard_queries.yml"
    path.write_text(yaml.safe_dump(rules))
    result = subprocess.run(
        [promtool(), "check", "rules", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_alert_rules_pass_their_promtool_tests() -> None:
    result = subprocess.run(
        [promtool(), "test", "rules", str(PROMETHEUS / "tests" / "mnemo.rules.test.yml")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_compose_prometheus_configuration_checks() -> None:
    result = subprocess.run(
        [promtool(), "check", "config", str(PROMETHEUS / "prometheus.yml")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
