"""The workspace, compose file and Makefile keep the shape the architecture settles."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]
LIBS = ("mdn", "axon", "corpus", "events", "store", "telemetry")
SERVICES = ("ingest", "edge-classifier", "navigator", "audit")


def test_every_package_has_a_pyproject_and_a_py_typed_marker() -> None:
    folders = [ROOT / "libs" / name for name in LIBS] + [ROOT / "services" / s for s in SERVICES]
    for folder in folders:
        pyproject = tomllib.loads((folder / "pyproject.toml").read_text())
        import_name = "mnemo_" + folder.name.replace("-", "_")
        assert pyproject["project"]["name"] == "mnemo-" + folder.name
        assert (folder / "src" / import_name / "py.typed").is_file(), folder


def test_the_workspace_has_one_lock_file_and_lists_every_package() -> None:
    root = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert root["tool"]["uv"]["workspace"]["members"] == ["libs/*", "services/*", "cli"]
    assert (ROOT / "uv.lock").is_file()
    assert not list(ROOT.glob("libs/*/uv.lock")) + list(ROOT.glob("services/*/uv.lock"))


def test_the_compose_file_runs_postgres_kafka_and_the_four_services_from_one_dockerfile() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    assert {"postgres", "kafka", *SERVICES} <= set(services)
    builds = {name: services[name]["build"] for name in SERVICES}
    assert {build["dockerfile"] for build in builds.values()} == {"Dockerfile"}
    assert (ROOT / "Dockerfile").is_file()
    kafka_env = services["kafka"]["environment"]
    assert kafka_env["KAFKA_PROCESS_ROLES"] == "broker,controller"  # KRaft, no ZooKeeper
    # The set-up steps wait for healthy Postgres and Kafka; the services wait for the set-up steps.
    assert services["setup"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert services["kafka-topics"]["depends_on"]["kafka"]["condition"] == "service_healthy"
    for name in SERVICES:
        depends = services[name]["depends_on"]
        assert depends["setup"]["condition"] == "service_completed_successfully"
        assert depends["kafka-topics"]["condition"] == "service_completed_successfully"
        # Each service connects as its own login role, never as the owner or a superuser.
        urls = [
            str(value)
            for value in services[name]["environment"].values()
            if str(value).startswith("postgresql://")
        ]
        assert urls, name
        for url in urls:
            assert not url.startswith(("postgresql://mnemo_owner:", "postgresql://postgres:")), url
    for mount in services["postgres"]["volumes"]:
        source = mount.split(":", 1)[0]
        if source.startswith("./"):
            assert (ROOT / source).exists(), source


def test_every_makefile_target_the_guide_names_exists_and_documents_itself() -> None:
    makefile = (ROOT / "Makefile").read_text()
    documented = set(re.findall(r"^([a-z-]+):.*## ", makefile, flags=re.MULTILINE))
    required = {"help", "install", "up", "down", "status", "lint", "typecheck", "test", "check"}
    assert required | {"run"} <= documented


def test_ci_runs_the_command_the_readme_gives() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    readme = (ROOT / "README.md").read_text()
    assert "make check" in ci
    assert "make test" in readme
    assert "make run" in readme


def test_the_registry_is_read_only_through_mnemo_store_registry() -> None:
    """One home for the registry's rows: no other module writes a query over `mnemo.corpora`."""
    home = ROOT / "libs" / "store" / "src" / "mnemo_store" / "registry.py"
    query = re.compile(r"\bFROM\s+mnemo\.corpora\b", re.IGNORECASE)
    sources = [*ROOT.glob("libs/*/src/**/*.py"), *ROOT.glob("services/*/src/**/*.py")]
    sources += ROOT.glob("cli/src/**/*.py")
    elsewhere = [p.relative_to(ROOT) for p in sources if p != home and query.search(p.read_text())]
    assert elsewhere == []
