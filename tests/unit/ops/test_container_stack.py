"""The Dockerfile and docker-compose.yml, checked for what would make them fail or clash without a
container engine (`make compose-test` runs them for real): layer order, a non-root runtime, every
command's module, every variable a service's settings read, mounted files that exist, host ports
that stay clear of the local stack's, and the host-network override `make compose-test` uses."""

from __future__ import annotations

import importlib
import importlib.util
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from mnemo_auth.tokens import DEVELOPMENT_SECRET
from mnemo_telemetry.tracing import TracingSettings
from pydantic_settings import BaseSettings

ROOT = Path(__file__).resolve().parents[3]
COMPOSE: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES: dict[str, dict[str, Any]] = COMPOSE["services"]
DOCKERFILE = (ROOT / "Dockerfile").read_text()

MNEMO_SERVICES = {
    "ingest": ("mnemo_ingest", "mnemo_ingest.settings:Settings", 8081, "mnemo_ingest"),
    "edge-classifier": (
        "mnemo_edge_classifier",
        "mnemo_edge_classifier.settings:Settings",
        8082,
        "mnemo_classifier",
    ),
    "navigator": ("mnemo_navigator", "mnemo_navigator.settings:Settings", 8080, "mnemo_navigator"),
    "audit": ("mnemo_audit", "mnemo_audit.settings:Settings", 8083, "mnemo_audit"),
}
# Ports the local stack (`make up`, `make ops`) binds on 127.0.0.1 by default.
LOCAL_PORTS = {25432, 29092, 29093, 8080, 8081, 8082, 8083, 4317, 4318, 16686, 16685, 29090}


def workspace_members() -> list[str]:
    root = tomllib.loads((ROOT / "pyproject.toml").read_text())
    members: list[str] = []
    for pattern in root["tool"]["uv"]["workspace"]["members"]:
        members += sorted(
            str(path.parent.relative_to(ROOT)) for path in ROOT.glob(f"{pattern}/pyproject.toml")
        )
    return members


def instructions() -> list[tuple[str, str]]:
    joined = re.sub(r"\\\n", " ", DOCKERFILE)
    found = []
    for line in joined.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            keyword, _, rest = stripped.partition(" ")
            found.append((keyword.upper(), rest.strip()))
    return found


def stages() -> list[list[tuple[str, str]]]:
    result: list[list[tuple[str, str]]] = []
    for keyword, rest in instructions():
        if keyword == "FROM":
            result.append([])
        if result:
            result[-1].append((keyword, rest))
    return result


def test_the_image_is_built_in_stages_and_runs_as_a_non_root_user() -> None:
    built = stages()
    assert len(built) >= 2
    runtime = built[-1]
    users = [rest for keyword, rest in runtime if keyword == "USER"]
    assert users, "the runtime stage sets no USER"
    uid = users[-1].split(":")[0]
    assert uid not in {"0", "root"}
    assert any(keyword == "COPY" and "--from=build" in rest for keyword, rest in runtime)
    assert not any(keyword == "RUN" and "uv sync" in rest for keyword, rest in runtime)


def test_the_base_is_a_build_argument_defaulting_to_the_public_python_image() -> None:
    declared = [rest for keyword, rest in instructions() if keyword == "ARG"]
    assert "PYTHON_IMAGE=python:3.11-slim-bookworm" in declared
    assert all(
        rest.startswith("${PYTHON_IMAGE}") for keyword, rest in instructions() if keyword == "FROM"
    )


def test_the_runtime_has_oci_labels_a_healthcheck_and_no_build_tool() -> None:
    runtime = stages()[-1]
    labels = " ".join(rest for keyword, rest in runtime if keyword == "LABEL")
    for key in ("title", "description", "version", "base.name"):
        assert f"org.opencontainers.image.{key}=" in labels, key
    (healthcheck,) = [rest for keyword, rest in runtime if keyword == "HEALTHCHECK"]
    assert "/readyz" in healthcheck
    runs = " ".join(rest for keyword, rest in runtime if keyword == "RUN")
    assert "pip uninstall --yes pip setuptools wheel" in runs
    assert "uv" not in " ".join(rest for keyword, rest in runtime if keyword == "COPY")


def test_dependencies_are_installed_before_any_source_is_copied() -> None:
    build = stages()[0]
    copies = [(index, rest) for index, (keyword, rest) in enumerate(build) if keyword == "COPY"]
    syncs = [index for index, (keyword, rest) in enumerate(build) if "uv sync" in rest]
    first_sync = syncs[0]
    assert "--no-install-workspace" in build[first_sync][1]
    before = [rest for index, rest in copies if index < first_sync]
    assert any("uv.lock" in rest for rest in before)
    for member in workspace_members():
        assert any(f"{member}/pyproject.toml" in rest for rest in before), (
            f"{member}/pyproject.toml is not copied before the dependency layer"
        )
    for rest in before:
        sources = rest.split()[:-1]
        assert all(source.endswith(("pyproject.toml", "uv.lock")) for source in sources), rest
    assert any(index > first_sync and "libs" in rest for index, rest in copies)
    assert "--no-editable" in build[syncs[-1]][1]


def test_the_runtime_carries_the_migrations_and_declarations_its_commands_read() -> None:
    runtime = stages()[-1]
    copied = " ".join(rest for keyword, rest in runtime if keyword == "COPY")
    assert "migrations" in copied
    assert "deploy/axon" in copied
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert ".local" in ignored
    assert ".venv" in ignored


@pytest.mark.parametrize("name", sorted(MNEMO_SERVICES))
def test_each_service_runs_its_module_with_the_settings_it_reads(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    module, settings_path, port, role = MNEMO_SERVICES[name]
    service = SERVICES[name]
    assert service["command"] == ["python", "-m", module]
    assert importlib.util.find_spec(f"{module}.__main__") is not None
    environment = {key: str(value) for key, value in service["environment"].items()}
    for key, value in environment.items():
        # Compose's ${NAME:-default}: the default is what runs when NAME is unset.
        monkeypatch.setenv(key, re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", value))
    module_name, class_name = settings_path.split(":")
    cls: type[BaseSettings] = getattr(importlib.import_module(module_name), class_name)
    settings: Any = cls()
    assert settings.host == "0.0.0.0"
    assert settings.port == port
    assert (
        settings.database_url.get_secret_value()
        == f"postgresql://{role}:{role}@postgres:5432/mnemo"
    )
    assert settings.kafka.bootstrap == "kafka:9092"
    assert TracingSettings().otlp_endpoint == "http://jaeger:4318"
    assert f"127.0.0.1:{port}/readyz" in " ".join(service["healthcheck"]["test"])
    assert service["depends_on"]["setup"]["condition"] == "service_completed_successfully"
    assert service["depends_on"]["kafka-topics"]["condition"] == "service_completed_successfully"


def test_every_role_a_service_connects_as_is_created_by_the_init_script() -> None:
    script = (ROOT / "deploy" / "compose" / "init-roles.sql").read_text()
    urls = [
        str(value)
        for service in SERVICES.values()
        for value in (service.get("environment") or {}).values()
        if str(value).startswith("postgresql://")
    ]
    assert urls
    for url in urls:
        role, password = re.match(r"postgresql://([^:]+):([^@]+)@", url).groups()  # type: ignore[union-attr]
        assert f"CREATE ROLE {role} LOGIN PASSWORD '{password}'" in script, role


def test_the_set_up_steps_migrate_apply_and_create_the_topics() -> None:
    setup = " ".join(SERVICES["setup"]["command"])
    assert "alembic -c migrations/alembic.ini upgrade heads" in setup
    assert "mnemo apply deploy/axon/" in setup
    assert SERVICES["kafka-topics"]["command"] == ["python", "-m", "mnemo_events.provisioning"]
    assert importlib.util.find_spec("mnemo_events.provisioning") is not None
    assert SERVICES["setup"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert SERVICES["kafka-topics"]["depends_on"]["kafka"]["condition"] == "service_healthy"


def test_kafka_and_postgres_keep_their_data_in_named_volumes() -> None:
    declared = set(COMPOSE["volumes"])
    for name, path in (("kafka", "/var/lib/kafka/data"), ("postgres", "/var/lib/postgresql/data")):
        mounts = [volume.split(":") for volume in SERVICES[name]["volumes"]]
        assert any(source in declared and target == path for source, target, *_ in mounts), name
    assert SERVICES["kafka"]["environment"]["KAFKA_LOG_DIRS"] == "/var/lib/kafka/data"


def test_every_depends_on_and_mounted_file_exists() -> None:
    for name, service in SERVICES.items():
        for dependency in service.get("depends_on") or {}:
            assert dependency in SERVICES, f"{name} depends on unknown {dependency}"
        for volume in service.get("volumes") or []:
            source = volume.split(":")[0]
            if source.startswith("./"):
                assert (ROOT / source).exists(), f"{name} mounts missing {source}"


def test_host_ports_are_loopback_only_and_clear_of_the_local_stack() -> None:
    published: list[int] = []
    for name, service in SERVICES.items():
        for mapping in service.get("ports") or []:
            host, port, _container = str(mapping).split(":")
            assert host == "127.0.0.1", f"{name} publishes {mapping} beyond loopback"
            published.append(int(port))
    assert published
    assert len(published) == len(set(published))
    assert not set(published) & LOCAL_PORTS


def test_the_optional_collector_forwards_traces_to_jaeger() -> None:
    assert SERVICES["otel-collector"]["profiles"] == ["extras"]
    config = yaml.safe_load((ROOT / "deploy" / "otel-collector" / "config.yaml").read_text())
    mounted = SERVICES["otel-collector"]["volumes"][0].split(":")
    assert mounted[0] == "./deploy/otel-collector/config.yaml"
    assert f"--config={mounted[1]}" in SERVICES["otel-collector"]["command"]
    assert config["receivers"]["otlp"]["protocols"]["http"]["endpoint"].endswith(":4318")
    pipeline = config["service"]["pipelines"]["traces"]
    assert pipeline["receivers"] == ["otlp"]
    for exporter in pipeline["exporters"]:
        assert config["exporters"][exporter]["endpoint"] == "jaeger:4317"
    for processor in pipeline["processors"]:
        assert processor in config["processors"]
    assert "jaeger" in SERVICES


def test_every_image_is_a_variable_whose_default_is_the_public_image() -> None:
    images = {
        name: str(service["image"]) for name, service in SERVICES.items() if "image" in service
    }
    assert set(images) == set(SERVICES)
    for name, image in images.items():
        assert re.fullmatch(
            r"\$\{MNEMO_\w+_IMAGE:-[^}]+\}|\$\{MNEMO_IMAGE:-mnemo:local\}", image
        ), name


def test_postgres_is_healthy_only_once_it_answers_over_tcp() -> None:
    test = SERVICES["postgres"]["healthcheck"]["test"]
    assert test[:2] == ["CMD", "pg_isready"]
    assert test[test.index("-h") + 1] == "127.0.0.1"


def test_setup_publishes_the_corpus_so_the_first_navigate_answers() -> None:
    setup = SERVICES["setup"]["command"][-1].splitlines()
    assert setup[-1] == "mnemo corpus publish Memory"


def test_the_services_verify_tokens_with_the_key_mnemo_token_signs_with() -> None:
    for name, variable in (
        ("navigator", "MNEMO_NAVIGATOR_TOKEN_SECRET"),
        ("audit", "MNEMO_AUDIT_TOKEN_SECRET"),
    ):
        value = SERVICES[name]["environment"][variable]
        assert value == f"${{MNEMO_TOKEN_SECRET:-{DEVELOPMENT_SECRET}}}", name


def test_the_host_network_override_keeps_every_server_on_loopback_and_clear_of_the_local_stack() -> (
    None
):
    override = yaml.safe_load(
        (ROOT / "deploy" / "compose" / "host-network.yml")
        .read_text()
        .replace("!override ", "")
        .replace("!reset ", "")
    )["services"]
    assert set(override) == set(SERVICES) - {"otel-collector", "grafana"}
    for service in override.values():
        assert service["network_mode"] == "host"
    text = yaml.safe_dump(override)
    assert not re.search(r"\b(postgres|kafka|jaeger|otel-collector):\d", text)
    ports = {int(port) for port in re.findall(r"127\.0\.0\.1:(\d+)", text)}
    assert ports
    assert not ports & LOCAL_PORTS


def test_prometheus_scrapes_each_service_where_compose_runs_it() -> None:
    config = yaml.safe_load((ROOT / "deploy" / "prometheus" / "prometheus.yml").read_text())
    (mnemo_job,) = [job for job in config["scrape_configs"] if job["job_name"] == "mnemo"]
    targets = {
        group["labels"]["mnemo_service"]: group["targets"][0]
        for group in mnemo_job["static_configs"]
    }
    assert targets == {
        name: f"{name}:{port}" for name, (_m, _s, port, _r) in MNEMO_SERVICES.items()
    }
    volumes = dict(volume.split(":")[:2] for volume in SERVICES["prometheus"]["volumes"])
    assert volumes["./deploy/prometheus/rules"] == "/etc/prometheus/rules"
    assert config["rule_files"] == ["/etc/prometheus/rules/*.yml"]


def test_grafana_is_provisioned_with_the_prometheus_source_and_the_dashboards() -> None:
    volumes = dict(volume.split(":")[:2] for volume in SERVICES["grafana"]["volumes"])
    provider = yaml.safe_load(
        (ROOT / "deploy" / "grafana" / "provisioning" / "dashboards" / "mnemo.yml").read_text()
    )
    assert volumes["./deploy/grafana/dashboards"] == provider["providers"][0]["options"]["path"]
    assert volumes["./deploy/grafana/provisioning"] == "/etc/grafana/provisioning"
    source = yaml.safe_load(
        (
            ROOT / "deploy" / "grafana" / "provisioning" / "datasources" / "prometheus.yml"
        ).read_text()
    )["datasources"][0]
    assert source["url"] == "http://prometheus:9090"
    assert source["isDefault"] is True
    home = SERVICES["grafana"]["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert (ROOT / "deploy" / "grafana" / "dashboards" / Path(home).name).exists()
