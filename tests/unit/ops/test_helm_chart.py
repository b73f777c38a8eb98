"""The Helm chart renders what the services need: each Deployment runs its module as non-root on a
read-only root filesystem with probes, resources and the environment its settings class reads;
the set-up hook runs before anything else; scaling, budgets and policies select real pods.

Rendering needs helm: `make tools` builds it once (deploy/local/tools.sh), and `make test` runs it first.
"""

from __future__ import annotations

import importlib
import importlib.util
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from mnemo_telemetry.tracing import TracingSettings
from pydantic_settings import BaseSettings

ROOT = Path(__file__).resolve().parents[3]
CHART = ROOT / "helm" / "mnemo"
PRODUCTION = CHART / "ci" / "production-values.yaml"
HELM = ROOT / ".local" / "gotools" / "helm-v4.3.2" / "helm"

# component -> (its settings class, the database Secret key of its login role)
SERVICES = {
    "navigator": ("mnemo_navigator.settings:Settings", "navigator-url"),
    "ingest": ("mnemo_ingest.settings:Settings", "ingest-url"),
    "edge-classifier": ("mnemo_edge_classifier.settings:Settings", "classifier-url"),
    "audit": ("mnemo_audit.settings:Settings", "audit-url"),
}
DUMMY_URL = "postgresql://role:secret@db.example:5432/mnemo"


def helm() -> str:
    if HELM.exists():
        return str(HELM)
    found = shutil.which("helm")
    if found is None:
        pytest.skip(
            "helm is missing: `make tools` (run by `make test`) builds it into .local/gotools"
        )
    return found


def render(*values: Path, extra: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    args = [helm(), "template", "mnemo", str(CHART), "--namespace", "mnemo"]
    for path in values:
        args += ["-f", str(path)]
    result = subprocess.run(
        [*args, *extra], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


@pytest.fixture(scope="module", params=["default", "production"])
def manifests(request: pytest.FixtureRequest) -> list[dict[str, Any]]:
    return render(PRODUCTION) if request.param == "production" else render()


def of_kind(manifests: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {doc["metadata"]["name"]: doc for doc in manifests if doc["kind"] == kind}


def container(deployment: dict[str, Any]) -> dict[str, Any]:
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return dict(containers[0])


def settings_class(path: str) -> type[BaseSettings]:
    module, name = path.split(":")
    cls: type[BaseSettings] = getattr(importlib.import_module(module), name)
    assert issubclass(cls, BaseSettings)
    return cls


def test_every_service_has_a_hardened_deployment_with_probes_and_resources(
    manifests: list[dict[str, Any]],
) -> None:
    deployments = of_kind(manifests, "Deployment")
    assert sorted(deployments) == sorted(f"mnemo-{name}" for name in SERVICES)
    for name, deployment in deployments.items():
        pod = deployment["spec"]["template"]["spec"]
        main = container(deployment)
        assert pod["securityContext"]["runAsNonRoot"] is True, name
        assert pod["securityContext"]["runAsUser"] != 0, name
        assert main["securityContext"]["readOnlyRootFilesystem"] is True, name
        assert main["securityContext"]["allowPrivilegeEscalation"] is False, name
        assert main["securityContext"]["capabilities"]["drop"] == ["ALL"], name
        assert main["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}, name
        assert main["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}, name
        assert main["resources"]["requests"], name
        assert main["resources"]["limits"], name
        assert {"name": "tmp", "mountPath": "/tmp"} in main["volumeMounts"], name
        assert pod["terminationGracePeriodSeconds"] > 10, name


def test_each_container_runs_a_module_that_exists(manifests: list[dict[str, Any]]) -> None:
    for name, deployment in of_kind(manifests, "Deployment").items():
        command = container(deployment)["command"]
        assert command[:2] == ["python", "-m"], name
        assert importlib.util.find_spec(command[2]) is not None, f"{name}: no module {command[2]}"
        assert importlib.util.find_spec(f"{command[2]}.__main__") is not None, name


@pytest.mark.parametrize("component", sorted(SERVICES))
def test_the_environment_a_deployment_sets_is_what_its_settings_class_reads(
    component: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, secret_key = SERVICES[component]
    deployment = of_kind(render(PRODUCTION), "Deployment")[f"mnemo-{component}"]
    env = container(deployment)["env"]
    secret_refs = {
        item["name"]: item["valueFrom"]["secretKeyRef"] for item in env if "valueFrom" in item
    }
    for item in env:
        monkeypatch.setenv(item["name"], item.get("value", DUMMY_URL))
    settings: Any = settings_class(path)()
    assert settings.host == "0.0.0.0"
    assert settings.port == int(
        deployment["spec"]["template"]["metadata"]["annotations"]["prometheus.io/port"]
    )
    assert settings.database_url.get_secret_value() == DUMMY_URL
    database_refs = {
        ref["key"] for name, ref in secret_refs.items() if name.endswith("_DATABASE_URL")
    }
    assert secret_key in database_refs
    assert settings.kafka.bootstrap.startswith("kafka-0.kafka-headless")
    assert TracingSettings().otlp_endpoint == "http://otel-collector.observability.svc:4318"
    token_vars = [name for name in secret_refs if name.endswith("TOKEN_SECRET")]
    if token_vars:
        assert settings.token_secret.get_secret_value() == DUMMY_URL
    for name in secret_refs:
        assert name.startswith("MNEMO_"), name


def test_only_the_navigator_and_audit_get_a_service_pointing_at_their_pods(
    manifests: list[dict[str, Any]],
) -> None:
    services = of_kind(manifests, "Service")
    assert sorted(services) == ["mnemo-audit", "mnemo-navigator"]
    deployments = of_kind(manifests, "Deployment")
    for name, service in services.items():
        pod_labels = deployments[name]["spec"]["template"]["metadata"]["labels"]
        assert service["spec"]["selector"].items() <= pod_labels.items()
        assert service["spec"]["ports"][0]["targetPort"] == "http"


def test_the_setup_job_runs_before_install_and_upgrade_after_its_declarations(
    manifests: list[dict[str, Any]],
) -> None:
    job = of_kind(manifests, "Job")["mnemo-setup"]
    config = of_kind(manifests, "ConfigMap")["mnemo-axon"]
    for hook in (job, config):
        assert hook["metadata"]["annotations"]["helm.sh/hook"] == "pre-install,pre-upgrade"
    assert int(config["metadata"]["annotations"]["helm.sh/hook-weight"]) < int(
        job["metadata"]["annotations"]["helm.sh/hook-weight"]
    )
    script = container(job)["command"][-1]
    steps = [line.strip() for line in script.strip().splitlines()]
    assert steps == [
        "alembic -c migrations/alembic.ini upgrade heads",
        "python -m mnemo_events.provisioning",
        "mnemo apply /etc/mnemo/axon/*.axon",
    ]
    env = {item["name"]: item for item in container(job)["env"]}
    assert env["MNEMO_OWNER_DATABASE_URL"]["valueFrom"]["secretKeyRef"]["key"] == "owner-url"
    assert container(job)["securityContext"]["readOnlyRootFilesystem"] is True


def test_the_declarations_configmap_carries_deploy_axon_verbatim() -> None:
    data = of_kind(render(), "ConfigMap")["mnemo-axon"]["data"]
    shipped = sorted((ROOT / "deploy" / "axon").glob("*.axon"))
    assert shipped
    assert sorted(data) == [path.name for path in shipped]
    for path in shipped:
        assert data[path.name].rstrip("\n") == path.read_text().rstrip("\n")


def test_the_production_example_declarations_pass_mnemo_check(tmp_path: Path) -> None:
    data = of_kind(render(PRODUCTION), "ConfigMap")["mnemo-axon"]["data"]
    for name, text in data.items():
        (tmp_path / name).write_text(text)
    mnemo = ROOT / ".venv" / "bin" / "mnemo"
    result = subprocess.run(
        [str(mnemo), "check", *sorted(str(path) for path in tmp_path.glob("*.axon"))],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_navigator_scales_on_cpu_and_its_replicas_are_left_to_the_autoscaler(
    manifests: list[dict[str, Any]],
) -> None:
    hpa = of_kind(manifests, "HorizontalPodAutoscaler")["mnemo-navigator"]
    assert hpa["spec"]["scaleTargetRef"]["name"] in of_kind(manifests, "Deployment")
    assert hpa["spec"]["minReplicas"] >= 2
    assert "replicas" not in of_kind(manifests, "Deployment")["mnemo-navigator"]["spec"]


def test_keda_scales_each_consumer_on_its_own_group_and_topic() -> None:
    manifests = render(PRODUCTION)
    scaled = of_kind(manifests, "ScaledObject")
    assert sorted(scaled) == ["mnemo-audit", "mnemo-edge-classifier", "mnemo-ingest"]
    deployments = of_kind(manifests, "Deployment")
    expected = {
        "mnemo-ingest": ("mnemo.persist.v1", "mnemo.ingest"),
        "mnemo-edge-classifier": ("mnemo.document.persisted.v1", "mnemo.edge-classifier"),
        "mnemo-audit": ("mnemo.audit.v1", "mnemo.audit"),
    }
    for name, scaled_object in scaled.items():
        assert scaled_object["spec"]["scaleTargetRef"]["name"] == name
        assert "replicas" not in deployments[name]["spec"], name
        (trigger,) = scaled_object["spec"]["triggers"]
        assert trigger["type"] == "kafka"
        assert (trigger["metadata"]["topic"], trigger["metadata"]["consumerGroup"]) == expected[
            name
        ]
        assert int(trigger["metadata"]["lagThreshold"]) > 0
    assert not of_kind(render(), "ScaledObject"), "KEDA is off by default"


def test_the_consumer_groups_keda_watches_are_the_ones_the_services_use() -> None:
    from mnemo_audit.settings import Settings as AuditSettings
    from mnemo_edge_classifier.settings import Settings as ClassifierSettings
    from mnemo_ingest.settings import Settings as IngestSettings

    assert IngestSettings().group == "mnemo.ingest"
    assert IngestSettings().topic == "mnemo.persist.v1"
    assert ClassifierSettings().group == "mnemo.edge-classifier"
    assert AuditSettings().group == "mnemo.audit"
    assert AuditSettings().topic == "mnemo.audit.v1"


def test_budgets_and_network_policies_select_each_services_pods(
    manifests: list[dict[str, Any]],
) -> None:
    deployments = of_kind(manifests, "Deployment")
    for kind in ("PodDisruptionBudget", "NetworkPolicy"):
        objects = of_kind(manifests, kind)
        assert sorted(objects) == sorted(deployments), kind
        for name, obj in objects.items():
            selector = obj["spec"]["selector" if kind == "PodDisruptionBudget" else "podSelector"]
            pod_labels = deployments[name]["spec"]["template"]["metadata"]["labels"]
            assert selector["matchLabels"].items() <= pod_labels.items(), (kind, name)
    for policy in of_kind(manifests, "NetworkPolicy").values():
        assert policy["spec"]["policyTypes"] == ["Ingress", "Egress"]
        ports = {rule["port"] for rule in policy["spec"]["egress"][0]["ports"]}
        assert {5432, 9092, 53} <= ports


def test_values_that_would_run_as_root_or_break_a_port_are_refused_by_the_schema() -> None:
    for override in (
        "podSecurityContext.runAsNonRoot=false",
        "containerSecurityContext.readOnlyRootFilesystem=false",
        "services.navigator.port=70000",
        "otlpEndpoint=collector:4318",
    ):
        result = subprocess.run(
            [helm(), "template", "mnemo", str(CHART), "--set", override],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert result.returncode != 0, override
        assert "schema" in result.stderr, override
