"""Running the real audit service (`python -m mnemo_audit`) on its own topic, and feeding it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx
from aiokafka import AIOKafkaProducer
from mnemo_events import (
    AuditRecorded,
    Envelope,
    PersistAudited,
    QueryAudited,
    new_envelope,
)

from tests.infrastructure import free_port
from tests.waiting import eventually_sync


@dataclass
class AuditProcess:
    topic: str
    group: str
    port: int
    env: dict[str, str]
    log_path: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60) -> None:
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mnemo_audit"], env=self.env, stdout=log, stderr=log
        )
        process = self.process

        def answers_ready() -> bool:
            if process.poll() is not None:
                raise RuntimeError(f"audit service exited: {self.log_path.read_text()[-2000:]}")
            try:
                return httpx.get(f"{self.url}/readyz", timeout=1).status_code == 200
            except httpx.HTTPError:
                return False

        eventually_sync(
            answers_ready,
            within=timeout,
            every=0.2,
            what=lambda: f"audit service not ready: {self.log_path.read_text()[-2000:]}",
        )

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)

    def terminate(self) -> int | None:
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                return self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()
        return self.process.returncode


def audit_process(audit_dsn: str, bootstrap: str, log_dir: Path, **extra: str) -> AuditProcess:
    suffix = uuid.uuid4().hex[:10]
    topic, group, port = f"mnemo.audit.test-{suffix}", f"mnemo.audit.test-{suffix}", free_port()
    env = {
        **os.environ,
        "MNEMO_AUDIT_DATABASE_URL": audit_dsn,
        "MNEMO_KAFKA_BOOTSTRAP": bootstrap,
        "MNEMO_AUDIT_TOPIC": topic,
        "MNEMO_AUDIT_GROUP": group,
        "MNEMO_AUDIT_PORT": str(port),
        "MNEMO_KAFKA_PARTITIONS": "3",
        "MNEMO_KAFKA_RETRY_BACKOFF_SECONDS": "0.05",
        **extra,
    }
    return AuditProcess(topic, group, port, env, log_dir / f"audit-{suffix}.log")


def query_event(tenant: uuid.UUID, n: int, corpus: str = "Docs") -> Envelope[AuditRecorded]:
    record = QueryAudited(
        action=f"corpus:{corpus}:query",
        corpus=corpus,
        operation="navigate",
        query=f"question {n} é😀",
        query_digest=f"sha256:{n:064x}",
        k_returned=n % 7,
        latency_ms=1.5 + n / 1000,
        top_similarity=0.25 if n % 2 else None,
        returned_ids=(f"doc-{n}", f"doc-{n + 1}"),
        scope_digest="sha256:scope",
        principal="agent-1",
        trace_id=f"{n:032x}",
        revision=n,
    )
    return new_envelope(
        AuditRecorded(record=record),
        tenant=tenant,
        producer="mnemo.navigator",
        event_type="mnemo.audit.v1",
        trace=f"00-{n + 1:032x}-{n + 1:016x}-01",
    )


def persist_event(tenant: uuid.UUID, n: int) -> Envelope[AuditRecorded]:
    record = PersistAudited(
        action="store:Docs:persist",
        store="Docs",
        row_ids=(f"doc-{n}",),
        source_event_ids=(uuid.uuid4(),),
        principal="ingest",
        trace_id=None,
    )
    return new_envelope(
        AuditRecorded(record=record),
        tenant=tenant,
        producer="mnemo.ingest",
        event_type="mnemo.audit.v1",
    )


async def produce(
    bootstrap: str, topic: str, records: Sequence[Envelope[AuditRecorded] | tuple[bytes, bytes]]
) -> None:
    """Send envelopes (keyed by tenant) or raw (key, value) pairs, in order per key."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, acks="all")
    await producer.start()
    try:
        futures = []
        for record in records:
            if isinstance(record, tuple):
                key, value = record
            else:
                key, value = str(record.tenant).encode(), record.model_dump_json().encode()
            futures.append(await producer.send(topic, value=value, key=key))
        await producer.flush()
        for future in futures:
            await future
    finally:
        await producer.stop()


def now() -> datetime:
    return datetime.now(UTC)
