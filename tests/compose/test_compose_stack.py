"""End-to-end checks of docker-compose.yml running under podman: `make compose-test` brings it up on
the host's network (deploy/compose/host-network.yml), runs this module, and tears it down.

Everything goes through what a user has: the `mnemo` CLI against the Compose ports, the navigator's
HTTP API, Jaeger's query API and Prometheus' HTTP API. The ports come from the MNEMO_COMPOSE_*
variables deploy/container/compose-test.sh exports; without them the module is skipped.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.waiting import eventually_sync

ROOT = Path(__file__).resolve().parents[2]
_PORTS = (
    "MNEMO_COMPOSE_PG_PORT",
    "MNEMO_COMPOSE_KAFKA_PORT",
    "MNEMO_COMPOSE_NAVIGATOR_PORT",
    "MNEMO_COMPOSE_JAEGER_QUERY_PORT",
    "MNEMO_COMPOSE_PROMETHEUS_PORT",
)
if not all(os.environ.get(name) for name in _PORTS):
    pytest.skip("run by `make compose-test` (the Compose stack's ports)", allow_module_level=True)

PG = os.environ["MNEMO_COMPOSE_PG_PORT"]
NAVIGATOR = f"http://127.0.0.1:{os.environ['MNEMO_COMPOSE_NAVIGATOR_PORT']}"
JAEGER = f"http://127.0.0.1:{os.environ['MNEMO_COMPOSE_JAEGER_QUERY_PORT']}"
PROMETHEUS = f"http://127.0.0.1:{os.environ['MNEMO_COMPOSE_PROMETHEUS_PORT']}"
QUERY = "what is the liability cap now"


def _dsn(role: str) -> str:
    return f"postgresql://{role}:{role}@127.0.0.1:{PG}/mnemo"


def _cli_env() -> dict[str, str]:
    """The CLI pointed at the Compose stack only (nothing of the local stack's settings)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMO_")}
    env.update(
        MNEMO_OWNER_DATABASE_URL=_dsn("mnemo_owner"),
        MNEMO_DATABASE_URL=_dsn("mnemo_app"),
        MNEMO_AUDIT_DATABASE_URL=_dsn("mnemo_audit"),
        MNEMO_KAFKA_BOOTSTRAP=f"127.0.0.1:{os.environ['MNEMO_COMPOSE_KAFKA_PORT']}",
        MNEMO_NAVIGATOR_URL=NAVIGATOR,
    )
    return env


def mnemo(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(Path(sys.executable).parent / "mnemo"), *args],
        env=_cli_env(),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )
    if check and done.returncode != 0:
        raise AssertionError(f"mnemo {' '.join(args)} exited {done.returncode}: {done.stderr}")
    return done


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as answer:
        return json.load(answer)


def answered_json(url: str) -> Any:
    """`get_json`, or None while the server refuses or drops the connection (it may be restarting)."""
    try:
        return get_json(url)
    except urllib.error.HTTPError:
        raise
    except (urllib.error.URLError, ConnectionError):
        return None


@dataclass(frozen=True)
class Tenant:
    id: str
    memories: Path
    northwind: str
    globex: str


@pytest.fixture(scope="module")
def tenant(tmp_path_factory: pytest.TempPathFactory) -> Tenant:
    """A new tenant with the demo's agency memories persisted through Kafka and written by ingest."""
    folder = tmp_path_factory.mktemp("compose-memories")
    tenant_id = mnemo("tenant", "create", f"compose-{uuid.uuid4().hex[:12]}").stdout.strip()
    made = subprocess.run(
        [sys.executable, "deploy/demo/memories.py", str(folder)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    clients = dict(line.split("=", 1) for line in made.stdout.split())
    memories = folder / "acme.jsonl"
    mnemo("persist", "--store", "MemoryDocuments", "--tenant", tenant_id, "--quiet", "--wait", "90",
          str(memories))  # fmt: skip
    return Tenant(tenant_id, memories, clients["northwind"], clients["globex"])


def _navigate(token: str) -> dict[str, Any]:
    done = mnemo("navigate", "Memory", "--query", QUERY, "--budget", "8", "--direction", "both",
                 "--token", token)  # fmt: skip
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def test_the_first_navigate_after_up_answers_200_because_setup_published_the_corpus() -> None:
    empty_tenant = mnemo("tenant", "create", f"compose-empty-{uuid.uuid4().hex[:8]}").stdout.strip()
    token = mnemo("token", "--tenant", empty_tenant).stdout.strip()
    # A draft corpus answers 409 and the CLI exits non-zero: `mnemo` raises on it here.
    answer = _navigate(token)
    assert isinstance(answer, dict)


def test_ingest_writes_the_memories_sent_through_kafka_and_the_classifier_adds_typed_edges(
    tenant: Tenant,
) -> None:
    def superseding_edge() -> bool:
        tail = mnemo("audit", "tail", "--tenant", tenant.id, "--after-seq", "0", "--no-follow",
                     "--json")  # fmt: skip
        script = "deploy/demo/classified_edges.py"
        expect = ("--titles", str(tenant.memories), "--expect", "supersede")
        edges = subprocess.run(
            [sys.executable, script, *expect],
            input=tail.stdout,
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        return edges.returncode == 0

    eventually_sync(
        superseding_edge, within=120, every=2, what="a supersede edge from the edge classifier"
    )


def _memories_in(answer: dict[str, Any], tenant: Tenant) -> dict[str, str]:
    """The tenant's memories (id -> end-client id) whose id the answer names anywhere."""
    text = json.dumps(answer)
    rows = [json.loads(line) for line in tenant.memories.read_text().splitlines()]
    return {row["id"]: row["tenant_id"] for row in rows if row["id"] in text}


def test_a_client_token_navigates_only_its_own_end_clients_memories(tenant: Tenant) -> None:
    token = mnemo("token", "--tenant", tenant.id, "--client", f"tenant_id={tenant.northwind}")
    found = _memories_in(_navigate(token.stdout.strip()), tenant)
    assert found, "the client token found none of its end-client's memories"
    assert set(found.values()) == {tenant.northwind}, "a client token saw another end-client's"


def test_another_tenants_token_sees_none_of_this_tenants_memories(tenant: Tenant) -> None:
    other = mnemo("tenant", "create", f"compose-other-{uuid.uuid4().hex[:8]}").stdout.strip()
    answer = _navigate(mnemo("token", "--tenant", other).stdout.strip())
    assert _memories_in(answer, tenant) == {}


def test_mnemo_audit_verify_finds_the_tenants_audit_chain_intact(tenant: Tenant) -> None:
    done = mnemo("audit", "verify", "--tenant", tenant.id, "--json")
    report = json.loads(done.stdout)
    assert report["ok"] is True, report


def test_the_services_traces_reach_jaeger() -> None:
    def traced_services() -> set[str]:
        services = set(get_json(f"{JAEGER}/api/services").get("data") or [])
        return {name for name in services if name.startswith("mnemo")}

    services = eventually_sync(
        traced_services, within=60, every=1, what="a Mnemo service in Jaeger"
    )
    service = sorted(services)[0]
    query = urllib.parse.urlencode({"service": service, "limit": "1", "lookback": "1h"})
    traces = get_json(f"{JAEGER}/api/traces?{query}")["data"]
    assert traces, f"no trace of {service} in Jaeger"
    assert traces[0]["spans"], f"an empty trace of {service} in Jaeger"


def test_prometheus_scrapes_the_four_services_and_evaluates_mnemos_alert_rules() -> None:
    def every_service_up() -> bool:
        query = urllib.parse.urlencode({"query": "up{job='mnemo'} == 1"})
        answer = answered_json(f"{PROMETHEUS}/api/v1/query?{query}")
        if answer is None:
            return False
        return {r["metric"]["mnemo_service"] for r in answer["data"]["result"]} == {
            "navigator", "ingest", "edge-classifier", "audit",
        }  # fmt: skip

    eventually_sync(every_service_up, within=60, every=1, what="the four services scraped as up")

    def every_rule_evaluated() -> bool:
        answer = answered_json(f"{PROMETHEUS}/api/v1/rules")
        if answer is None:
            return False
        rules = [rule for group in answer["data"]["groups"] for rule in group["rules"]]
        return bool(rules) and all(
            rule["health"] == "ok" and not rule["lastEvaluation"].startswith("0001")
            for rule in rules
        )

    eventually_sync(every_rule_evaluated, within=60, every=1, what="every alert rule evaluated")
    query = urllib.parse.urlencode({"query": "ALERTS{alertname='MnemoServiceDown'}"})
    firing = get_json(f"{PROMETHEUS}/api/v1/query?{query}")["data"]["result"]
    assert firing == [], f"MnemoServiceDown is pending or firing: {firing}"
