"""The services against a private Kafka broker secured as a managed cluster is: SASL_SSL with
SCRAM-SHA-512, a locally made CA, one user per service whose ACLs (deploy/kafka/service-acls.txt)
allow only its own topics and consumer group (`deploy/local/kafka-secure.sh`, its own directory
and ports; the shared broker of `make up` is never touched).

Each service runs as its own process with only its user's settings and joins its consumer group;
each user writes the topics its service produces; a client without credentials, with a wrong
password or without the CA, and a producer writing a topic it was not granted, are refused.
The relays stay off: the services share the stack's outbox tables, whose rows belong to the stack.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import httpx
import pytest
from aiokafka.errors import KafkaConnectionError, TopicAuthorizationFailedError
from mnemo_events.audit_checkpoints import CHECKPOINTS
from mnemo_events.broker import create_broker
from mnemo_events.settings import KafkaSettings
from mnemo_events.topics import (
    AUDIT,
    DOCUMENT_PERSISTED,
    NAVIGATE_COMPLETED,
    NAVIGATE_REQUESTED,
    PERSIST,
    dead_letter_topic,
)

from tests.infrastructure import free_port
from tests.waiting import eventually

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "deploy" / "local" / "kafka-secure.sh"


@dataclass(frozen=True)
class Service:
    module: str
    user: str
    prefix: str
    consumes: str
    writes: tuple[str, ...]


SERVICES = {
    "ingest": Service(
        "mnemo_ingest",
        "mnemo-ingest",
        "MNEMO_INGEST_",
        PERSIST,
        (dead_letter_topic(PERSIST), DOCUMENT_PERSISTED, AUDIT),
    ),
    "edge-classifier": Service(
        "mnemo_edge_classifier",
        "mnemo-edge-classifier",
        "MNEMO_CLASSIFIER_",
        DOCUMENT_PERSISTED,
        (dead_letter_topic(DOCUMENT_PERSISTED), PERSIST),
    ),
    "navigator": Service(
        "mnemo_navigator",
        "mnemo-navigator",
        "MNEMO_NAVIGATOR_",
        NAVIGATE_REQUESTED,
        (dead_letter_topic(NAVIGATE_REQUESTED), NAVIGATE_COMPLETED, AUDIT, PERSIST),
    ),
    "audit": Service(
        "mnemo_audit",
        "mnemo-audit",
        "MNEMO_AUDIT_",
        AUDIT,
        (dead_letter_topic(AUDIT), CHECKPOINTS),
    ),
}


@dataclass
class SecureBroker:
    env: dict[str, str]

    def client_env(self, user: str) -> dict[str, str]:
        """The MNEMO_KAFKA_* settings of `user`, as the script prints them."""
        out = subprocess.run(
            ["bash", str(SCRIPT), "env", user],
            env=self.env,
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        ).stdout
        return dict(line.split("=", 1) for line in out.splitlines() if line)

    def settings(self, user: str, **changes: str | None) -> KafkaSettings:
        values: dict[str, str | None] = {
            name.removeprefix("MNEMO_KAFKA_").lower(): value
            for name, value in self.client_env(user).items()
        }
        values.update(changes)
        return KafkaSettings.model_validate({k: v for k, v in values.items() if v is not None})


@pytest.fixture(scope="module")
def secure_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureBroker]:
    home = tmp_path_factory.mktemp("kafka-secure")
    env = {
        **os.environ,
        "MNEMO_KAFKA_SECURE_HOME": str(home),
        "MNEMO_KAFKA_SECURE_PORT": str(free_port()),
        "MNEMO_KAFKA_SECURE_CONTROLLER_PORT": str(free_port()),
    }
    up = subprocess.run(
        ["bash", str(SCRIPT), "up"], env=env, capture_output=True, text=True, timeout=300
    )
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        assert "acls: 23 granted" in up.stdout, up.stdout
        yield SecureBroker(env)
    finally:
        subprocess.run(["bash", str(SCRIPT), "down"], env=env, timeout=60, check=False)


async def publish_once(settings: KafkaSettings, topic: str) -> None:
    broker = create_broker(settings, client_id="secured-kafka-test")
    try:
        await asyncio.wait_for(broker.start(), 30)
        await asyncio.wait_for(broker.publish(b"{}", topic=topic, key=b"k"), 30)
    finally:
        await broker.stop()


@pytest.mark.parametrize("name", list(SERVICES))
async def test_each_services_user_writes_every_topic_its_service_produces(
    secure_broker: SecureBroker, name: str
) -> None:
    service = SERVICES[name]
    for topic in service.writes:
        await publish_once(secure_broker.settings(service.user), topic)


@pytest.mark.parametrize(
    ("user", "topic"),
    [
        ("mnemo-audit", PERSIST),
        ("mnemo-ingest", NAVIGATE_COMPLETED),
        ("mnemo-edge-classifier", AUDIT),
        ("mnemo-navigator", DOCUMENT_PERSISTED),
    ],
)
async def test_a_producer_writing_a_topic_it_was_not_granted_is_refused(
    secure_broker: SecureBroker, user: str, topic: str
) -> None:
    with pytest.raises(TopicAuthorizationFailedError):
        await publish_once(secure_broker.settings(user), topic)


@pytest.mark.parametrize(
    "changes",
    [
        pytest.param(
            {"security_protocol": "PLAINTEXT", "sasl_username": None, "sasl_password": None}
            | {"ssl_ca_file": None},
            id="plaintext, no credentials",
        ),
        pytest.param(
            {"security_protocol": "SSL", "sasl_username": None, "sasl_password": None},
            id="TLS, no credentials",
        ),
        pytest.param({"sasl_password": "not-the-password"}, id="a wrong password"),
        pytest.param({"ssl_ca_file": None}, id="a broker certificate it cannot verify"),
    ],
)
async def test_a_client_without_valid_credentials_or_trust_is_refused(
    secure_broker: SecureBroker, changes: dict[str, str | None]
) -> None:
    settings = secure_broker.settings("mnemo-ingest", **changes)
    with pytest.raises(KafkaConnectionError):
        await publish_once(settings, dead_letter_topic(PERSIST))


def assigned(metrics_text: str, topic: str) -> int:
    found = re.search(
        r'^mnemo_consumer_partitions_assigned\{[^}]*topic="' + re.escape(topic) + r'"[^}]*\} (\S+)',
        metrics_text,
        re.MULTILINE,
    )
    return int(float(found.group(1))) if found else 0


def tail(log: Path) -> str:
    return log.read_text(errors="replace")[-3000:]


def start_service(
    broker: SecureBroker, name: str, folder: Path
) -> tuple[subprocess.Popen[bytes], int, Path]:
    """`python -m <service>` with only its own Kafka user's settings, on a free port, relay off."""
    service = SERVICES[name]
    port = free_port()
    log = folder / f"{name}.log"
    env = {
        **os.environ,
        **broker.client_env(service.user),
        f"{service.prefix}PORT": str(port),
        "MNEMO_EDGE_CLASSIFIER_PORT": str(port),
        f"{service.prefix}RELAY_OUTBOX": "false",
        "MNEMO_OTLP_ENDPOINT": "",
    }
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", service.module],
            cwd=ROOT,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    return process, port, log


async def test_every_service_runs_with_its_own_user_and_joins_its_own_consumer_group(
    secure_broker: SecureBroker, tmp_path: Path
) -> None:
    processes: dict[str, tuple[subprocess.Popen[bytes], int, Path]] = {}
    try:
        for name in SERVICES:
            processes[name] = start_service(secure_broker, name, tmp_path)

        async with httpx.AsyncClient(timeout=3) as client:

            async def joined(name: str) -> bool:
                process, port, log = processes[name]
                assert process.poll() is None, log.read_text(errors="replace")[-3000:]
                try:
                    ready = await client.get(f"http://127.0.0.1:{port}/readyz")
                    scraped = await client.get(f"http://127.0.0.1:{port}/metrics")
                except httpx.HTTPError:
                    return False
                return ready.status_code == 200 and (
                    assigned(scraped.text, SERVICES[name].consumes) > 0
                )

            for name in SERVICES:
                log = processes[name][2]
                await eventually(
                    partial(joined, name), within=120, every=0.5, what=partial(tail, log)
                )
    finally:
        for process, _, _ in processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process, _, _ in processes.values():
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
