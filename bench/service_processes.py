"""The service processes a benchmark starts from this checkout (`python -m mnemo_<service>` on free
loopback ports), on Kafka topics and consumer groups named after the run, so neither the services
`make up` runs nor anyone else's events take part. Used by `quality_service.py` and `load_test.py`.

Topics are `<prefix>.<suffix>.persist.v1`, `….document.persisted.v1` and `….audit.v1`; groups are
`<prefix>.<suffix>.<ingest|classifier|audit>`. The database URLs come from the environment (the
Makefile's `MNEMO_*_DATABASE_URL`, else each service's local default).
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from mnemo_auth import DEVELOPMENT_SECRET
from mnemo_events.provisioning import ensure_topics
from mnemo_events.settings import KafkaSettings

ROOT = Path(__file__).resolve().parents[1]
MODULES = {
    "ingest": "mnemo_ingest",
    "edge-classifier": "mnemo_edge_classifier",
    "navigator": "mnemo_navigator",
    "audit": "mnemo_audit",
}
READY_SECONDS = 90.0


def graph_declarations(name: str, *, adaptive: bool) -> str:
    """A store corpus `name` over stores `<name>Docs` (id, title, body) and `<name>Edges`, both
    Text-keyed: the declarations the service benchmarks apply."""
    return f"""
axonstore {name}Docs {{
    backend: postgresql
    schema {{ id: Text primary_key  title: Text not_null  body: Text }}
}}
axonstore {name}Edges {{
    backend: postgresql
    schema {{ from_id: Text not_null  to_id: Text not_null  etype: Text not_null
             weight: Float not_null }}
}}
corpus {name} from axonstore {{
    documents: {name}Docs(id, title, body)
    relations: {name}Edges(from_id, to_id, etype, weight)
    adaptive: {"true" if adaptive else "false"}
}}
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def spawn(module: str, env: Mapping[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as sink:
        return subprocess.Popen(
            [sys.executable, "-m", module],
            cwd=ROOT,
            env=dict(env),
            stdout=sink,
            stderr=subprocess.STDOUT,
        )


def rss_bytes(pid: int) -> int | None:
    """The resident set size of process `pid` (`VmRSS` of /proc/<pid>/status), None once gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return None


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time process `pid` has used (/proc/<pid>/stat), None once gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Services:
    """The processes of one run (any of `MODULES`), on topics and groups named after its suffix."""

    suffix: str
    bootstrap: str
    logs: Path
    prefix: str = "bench.quality"
    names: Sequence[str] = ("ingest", "edge-classifier", "navigator")
    extra_env: Mapping[str, str] = field(default_factory=dict)
    """Added to every process's environment (e.g. `MNEMO_CLASSIFIER_INDEX_MAX_BYTES`)."""
    ports: dict[str, int] = field(default_factory=dict)
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def _name(self, part: str) -> str:
        return f"{self.prefix}.{self.suffix}.{part}"

    @property
    def persist(self) -> str:
        return self._name("persist.v1")

    @property
    def forget(self) -> str:
        return self._name("forget.v1")

    @property
    def persisted(self) -> str:
        return self._name("document.persisted.v1")

    @property
    def audit(self) -> str:
        return self._name("audit.v1")

    @property
    def groups(self) -> dict[str, str]:
        """Consumer group → the topic it reads, for the consumers of this run."""
        groups = {
            self._name("classifier"): self.persisted,
            self._name("ingest"): self.persist,
        }
        if "audit" in self.names:
            groups[self._name("audit")] = self.audit
        return groups

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.ports[name]}"

    def environment(self) -> dict[str, str]:
        self.ports = {name: free_port() for name in self.names}
        ports = {name: str(self.ports.get(name, 0)) for name in MODULES}
        return {
            **os.environ,
            "MNEMO_KAFKA_BOOTSTRAP": self.bootstrap,
            "MNEMO_INGEST_PORT": ports["ingest"],
            "MNEMO_INGEST_TOPIC": self.persist,
            "MNEMO_INGEST_PERSISTED_TOPIC": self.persisted,
            # Its own forget topic: the shared one holds other runs' commands for gone tenants.
            "MNEMO_INGEST_FORGET_TOPIC": self.forget,
            "MNEMO_INGEST_AUDIT_TOPIC": self.audit,
            "MNEMO_INGEST_GROUP": self._name("ingest"),
            "MNEMO_CLASSIFIER_PORT": ports["edge-classifier"],
            "MNEMO_EDGE_CLASSIFIER_PORT": ports["edge-classifier"],
            "MNEMO_CLASSIFIER_TOPIC": self.persisted,
            "MNEMO_CLASSIFIER_PERSIST_TOPIC": self.persist,
            "MNEMO_CLASSIFIER_GROUP": self._name("classifier"),
            "MNEMO_NAVIGATOR_PORT": ports["navigator"],
            "MNEMO_NAVIGATOR_TOKEN_SECRET": DEVELOPMENT_SECRET,
            "MNEMO_NAVIGATOR_CONSUME_REQUESTS": "false",
            "MNEMO_NAVIGATOR_AUDIT_TOPIC": self.audit,
            "MNEMO_AUDIT_PORT": ports["audit"],
            "MNEMO_AUDIT_TOPIC": self.audit,
            "MNEMO_AUDIT_GROUP": self._name("audit"),
            "MNEMO_AUDIT_TOKEN_SECRET": DEVELOPMENT_SECRET,
            **self.extra_env,
        }

    async def start(self) -> None:
        """Creates the topics, starts the processes and waits until each answers `/readyz`."""
        await ensure_topics(
            KafkaSettings(bootstrap=self.bootstrap),
            [self.persist, self.persisted, self.audit, self.forget],
        )
        env = self.environment()
        self.logs.mkdir(parents=True, exist_ok=True)
        for name in self.names:
            self.processes[name] = spawn(
                MODULES[name], env, self.logs / f"{name}-{self.suffix}.log"
            )
        async with httpx.AsyncClient(timeout=2) as http:
            for name in self.names:
                deadline = time.monotonic() + READY_SECONDS
                while True:
                    if self.processes[name].poll() is not None:
                        raise SystemExit(f"{name} exited (log in {self.logs})")
                    try:
                        if (await http.get(f"{self.url(name)}/readyz")).status_code == 200:
                            break
                    except httpx.HTTPError:
                        pass
                    if time.monotonic() > deadline:
                        raise SystemExit(
                            f"{name} not ready in {READY_SECONDS:.0f} s (log in {self.logs})"
                        )
                    await asyncio.sleep(0.3)

    def pids(self) -> dict[str, int]:
        return {name: process.pid for name, process in self.processes.items()}

    def exited(self) -> dict[str, int]:
        """Name → exit code of the processes that have exited."""
        codes = {name: process.poll() for name, process in self.processes.items()}
        return {name: code for name, code in codes.items() if code is not None}

    def stop(self) -> dict[str, int]:
        """SIGTERM to each, then waits (SIGKILL after 20 s): name → exit code."""
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        codes = {}
        for name, process in self.processes.items():
            try:
                codes[name] = process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
                codes[name] = process.wait(10)
        return codes


async def lag_by_group(bootstrap: str, groups: Mapping[str, str]) -> dict[str, int]:
    """Group → records of its topic it has not committed yet (end offset − committed offset)."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    # Subscribed (without a group, never polled) only so that it fetches the topics' metadata.
    consumer = AIOKafkaConsumer(*groups.values(), bootstrap_servers=bootstrap, group_id=None)
    await admin.start()
    await consumer.start()
    try:
        behind = {}
        for group, topic in groups.items():
            partitions = [
                TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or ()
            ]
            if not partitions:
                raise SystemExit(f"topic {topic} has no partitions (make up)")
            ends = await consumer.end_offsets(partitions)
            committed = await admin.list_consumer_group_offsets(group, partitions=partitions)
            behind[group] = 0
            for partition in partitions:
                done = committed.get(partition)
                behind[group] += ends[partition] - (done.offset if done and done.offset >= 0 else 0)
        return behind
    finally:
        await consumer.stop()
        await admin.close()


async def lag(bootstrap: str, groups: Mapping[str, str]) -> int:
    """Records the groups have not committed yet, over their topics."""
    return sum((await lag_by_group(bootstrap, groups)).values())


def metric_total(text: str, name: str) -> float:
    """The sum of every sample of `name` in a Prometheus text exposition."""
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name) and line[len(name) : len(name) + 1] in ("{", " "):
            total += float(line.rsplit(" ", 1)[1])
    return total
