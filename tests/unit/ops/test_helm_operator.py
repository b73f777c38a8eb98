"""The Helm chart for an operator with their own Postgres and secured Kafka (issue 26): what each
documented values combination (helm/mnemo/ci) renders is what the services' settings read, with
no secret collision, no public development key, no role that bypasses row-level security."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from mnemo_events.settings import KafkaSettings

from tests.unit.ops.test_helm_chart import (
    CHART,
    DUMMY_URL,
    ROOT,
    SERVICES,
    container,
    helm,
    of_kind,
    render,
    settings_class,
)

SECURED = CHART / "ci" / "secured-values.yaml"
PUBLIC_KEY = CHART / "ci" / "public-key-values.yaml"


def environment(deployment: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {item["name"]: item for item in container(deployment)["env"]}


def load_settings(
    component: str, deployment: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> Any:
    """The component's settings class over exactly the rendered environment (a Secret's value
    stands in as DUMMY_URL), outside development mode."""
    monkeypatch.delenv("MNEMO_DEVELOPMENT", raising=False)
    for item in container(deployment)["env"]:
        monkeypatch.setenv(item["name"], item.get("value", DUMMY_URL))
    return settings_class(SERVICES[component][0])()


@pytest.mark.parametrize("component", sorted(SERVICES))
def test_secured_values_give_each_component_its_own_kafka_user_and_the_mounted_ca(
    component: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    deployment = of_kind(render(SECURED), "Deployment")[f"mnemo-memory-{component}"]
    env = environment(deployment)
    assert env["MNEMO_KAFKA_SECURITY_PROTOCOL"]["value"] == "SASL_SSL"
    assert env["MNEMO_KAFKA_SASL_USERNAME"]["value"] == f"mnemo-{component}"
    password = env["MNEMO_KAFKA_SASL_PASSWORD"]["valueFrom"]["secretKeyRef"]
    assert password == {"name": "mnemo-kafka-users", "key": f"{component}-password"}
    assert env["MNEMO_KAFKA_PROVISION_TOPICS"]["value"] == "false"
    ca_file = Path(env["MNEMO_KAFKA_SSL_CA_FILE"]["value"])
    mounts = {m["name"]: m for m in container(deployment)["volumeMounts"]}
    assert mounts["kafka-ca"]["mountPath"] == str(ca_file.parent)
    volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
    assert volumes["kafka-ca"]["secret"]["secretName"] == "kafka-cluster-ca-cert"
    assert ca_file.name == "ca.crt"
    settings = load_settings(component, deployment, monkeypatch)
    kafka: KafkaSettings = settings.kafka
    assert (kafka.security_protocol, kafka.sasl_mechanism) == ("SASL_SSL", "SCRAM-SHA-512")
    assert kafka.sasl_username == f"mnemo-{component}"
    assert kafka.provision_topics is False


@pytest.mark.parametrize("component", ["navigator", "audit"])
def test_a_jwks_url_is_the_only_key_source_with_the_issuer_and_audience_applied(
    component: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    deployment = of_kind(render(SECURED), "Deployment")[f"mnemo-memory-{component}"]
    env = environment(deployment)
    assert not [name for name in env if name.endswith(("TOKEN_SECRET", "TOKEN_PUBLIC_KEY"))]
    assert "MNEMO_DEVELOPMENT" not in env
    keys = load_settings(component, deployment, monkeypatch).token_keys()
    assert keys.jwks_url == "https://idp.example.com/.well-known/jwks.json"
    assert (keys.issuer, keys.audience) == ("https://idp.example.com/", "mnemo-api")


@pytest.mark.parametrize("component", ["navigator", "audit"])
def test_a_public_key_from_a_secret_is_the_only_key_source(
    component: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    deployment = of_kind(render(PUBLIC_KEY), "Deployment")[f"mnemo-prod-{component}"]
    env = environment(deployment)
    key = env[f"MNEMO_{component.upper()}_TOKEN_PUBLIC_KEY"]["valueFrom"]["secretKeyRef"]
    assert key == {"name": "mnemo-token-public-key", "key": "public-key.pem"}
    assert not [name for name in env if name.endswith(("TOKEN_SECRET", "JWKS_URL"))]
    assert load_settings(component, deployment, monkeypatch).token_keys().public_key == DUMMY_URL


def test_no_values_combination_sets_development_mode_or_leaves_a_service_without_a_key() -> None:
    for values in ((), (SECURED,), (PUBLIC_KEY,), (CHART / "ci" / "production-values.yaml",)):
        for deployment in of_kind(render(*values), "Deployment").values():
            env = environment(deployment)
            assert "MNEMO_DEVELOPMENT" not in env
            verifies = any(name.endswith("_TOKEN_AUDIENCE") for name in env)
            sources = [
                n for n in env if n.endswith(("TOKEN_SECRET", "TOKEN_PUBLIC_KEY", "JWKS_URL"))
            ]
            assert len(sources) == (1 if verifies else 0), (values, sources)


def test_an_env_entry_may_come_from_a_secret() -> None:
    deployment = of_kind(render(SECURED), "Deployment")["mnemo-memory-edge-classifier"]
    env = environment(deployment)
    assert env["MNEMO_CLASSIFIER_LLM_API_KEY"]["valueFrom"] == {
        "secretKeyRef": {"name": "mnemo-llm", "key": "api-key"}
    }
    assert env["MNEMO_CLASSIFIER_INDEX_MAX_BYTES"]["value"] == "268435456"


@pytest.mark.parametrize(
    ("values", "name", "expected"),
    [
        ((), "mnemo-navigator", 1024**3),  # 50 % of 2Gi
        ((PUBLIC_KEY,), "mnemo-prod-navigator", 3 * 1024**3 * 40 // 100),
        ((CHART / "ci" / "production-values.yaml",), "mnemo-navigator", 2 * 1024**3),  # env wins
    ],
)
def test_the_navigators_cache_is_sized_from_its_memory_limit_unless_set(
    values: tuple[Path, ...], name: str, expected: int
) -> None:
    deployment = of_kind(render(*values), "Deployment")[name]
    cache = [
        item for item in container(deployment)["env"] if item["name"].endswith("CACHE_MAX_BYTES")
    ]
    assert len(cache) == 1
    assert int(cache[0]["value"]) == expected


def test_the_roles_job_runs_first_with_the_sql_file_and_no_role_bypasses_rls() -> None:
    manifests = render(SECURED)
    jobs = of_kind(manifests, "Job")
    roles, setup = jobs["mnemo-memory-roles"], jobs["mnemo-memory-setup"]

    def weight(obj: dict[str, Any]) -> int:
        return int(obj["metadata"]["annotations"]["helm.sh/hook-weight"])

    config = of_kind(manifests, "ConfigMap")
    assert (
        weight(config["mnemo-memory-roles"]) < weight(roles) < weight(config["mnemo-memory-axon"])
    )
    assert weight(roles) < weight(setup)
    sql = config["mnemo-memory-roles"]["data"]["roles.sql"]
    assert sql.rstrip("\n") == (CHART / "files" / "roles.sql").read_text().rstrip("\n")
    statements = [line for line in sql.splitlines() if not line.lstrip().startswith("--")]
    assert "NOBYPASSRLS" in "\n".join(statements)
    assert " BYPASSRLS" not in "\n".join(statements).replace("NOBYPASSRLS", "")
    assert "NOSUPERUSER" in "\n".join(statements)
    env = environment(roles)
    assert env["MNEMO_ADMIN_DATABASE_URL"]["valueFrom"]["secretKeyRef"]["name"] == (
        "mnemo-postgres-admin"
    )
    passwords = [item for name, item in env.items() if name.startswith("PASSWORD_")]
    assert len(passwords) == 7
    assert all(p["valueFrom"]["secretKeyRef"]["optional"] is True for p in passwords)
    compile(container(roles)["command"][-1], "roles-job", "exec")
    assert not of_kind(render(), "Job").get("mnemo-roles"), "the roles Job is optional, off"


def test_the_prometheus_rule_ships_the_tested_rules_and_the_monitor_sets_their_label() -> None:
    manifests = render(SECURED)
    (rule,) = of_kind(manifests, "PrometheusRule").values()
    shipped = yaml.safe_load(
        (ROOT / "deploy" / "prometheus" / "rules" / "mnemo.rules.yml").read_text()
    )
    assert rule["spec"]["groups"] == shipped["groups"]
    assert rule["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    (monitor,) = of_kind(manifests, "ServiceMonitor").values()
    (endpoint,) = monitor["spec"]["endpoints"]
    assert {
        "sourceLabels": ["__meta_kubernetes_pod_label_app_kubernetes_io_component"],
        "targetLabel": "mnemo_service",
    } in endpoint["relabelings"]
    metrics_services = {
        name: svc
        for name, svc in of_kind(manifests, "Service").items()
        if svc["metadata"]["labels"].get("mnemo.dev/metrics") == "true"
    }
    assert len(metrics_services) == 4
    for svc in metrics_services.values():
        assert (
            monitor["spec"]["selector"]["matchLabels"].items() <= svc["metadata"]["labels"].items()
        )
    for name, deployment in of_kind(manifests, "Deployment").items():
        pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
        assert pod_labels["mnemo_service"] == pod_labels["app.kubernetes.io/component"], name
    alerts = [r["alert"] for g in shipped["groups"] for r in g["rules"] if "alert" in r]
    assert "MnemoServiceDown" in alerts
    dashboards = of_kind(manifests, "ConfigMap")["mnemo-memory-dashboards"]
    assert sorted(dashboards["data"]) == sorted(
        p.name for p in (ROOT / "deploy" / "grafana" / "dashboards").glob("*.json")
    )


def test_the_ingress_routes_to_the_api_services_it_names() -> None:
    manifests = render(SECURED)
    (ingress,) = of_kind(manifests, "Ingress").values()
    services = of_kind(manifests, "Service")
    backends = [
        path["backend"]["service"]["name"]
        for rule in ingress["spec"]["rules"]
        for path in rule["http"]["paths"]
    ]
    assert backends == ["mnemo-memory-audit", "mnemo-memory-navigator"]
    assert all(name in services for name in backends)
    assert ingress["spec"]["tls"][0]["secretName"] == "mnemo-tls"


def test_name_overrides_rename_every_object_and_global_is_accepted() -> None:
    for values, prefix in ((SECURED, "mnemo-memory"), (PUBLIC_KEY, "mnemo-prod")):
        for doc in render(values):
            assert doc["metadata"]["name"].startswith(prefix), doc["metadata"]["name"]


@pytest.mark.parametrize(
    ("override", "reason"),
    [
        (("--set", "auth.mode=jwks"), "jwksUrl"),
        (("--set", "kafka.securityProtocol=SASL_SSL"), "secretName"),
        (("--set", "services.navigator.env.X={}"), "env"),
        (("--set", "kafka.securityProtocol=KERBEROS"), "securityProtocol"),
    ],
)
def test_the_schema_refuses_incomplete_security_values(
    override: tuple[str, ...], reason: str
) -> None:
    result = subprocess.run(
        [helm(), "template", "mnemo", str(CHART), *override],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode != 0
    assert reason in result.stderr, result.stderr


def test_keda_reads_the_lag_of_a_secured_cluster_as_each_services_own_user() -> None:
    manifests = render(SECURED)
    scaled = of_kind(manifests, "ScaledObject")
    authentications = of_kind(manifests, "TriggerAuthentication")
    deployments = of_kind(manifests, "Deployment")
    assert sorted(scaled) == sorted(authentications)
    for name, scaled_object in scaled.items():
        (trigger,) = scaled_object["spec"]["triggers"]
        assert trigger["metadata"]["sasl"] == "scram_sha512"
        assert trigger["metadata"]["tls"] == "enable"
        assert trigger["authenticationRef"]["name"] == name
        spec = authentications[name]["spec"]
        env = environment(deployments[name])
        for ref in spec["env"]:
            assert ref["containerName"] == container(deployments[name])["name"]
            assert ref["name"] in env
        assert {r["parameter"] for r in spec["env"]} == {"username", "password"}
        (ca,) = spec["secretTargetRef"]
        assert (ca["parameter"], ca["name"], ca["key"]) == ("ca", "kafka-cluster-ca-cert", "ca.crt")
