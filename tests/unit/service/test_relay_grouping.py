"""The relay's Kafka publisher takes a claimed batch at once: a record the client refuses fails
with every record after it (their acknowledgements raise), while the ones before it stand, so the
relay marks each tenant's events before its first failure, as with one record at a time."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import pytest
from mnemo_service.relay import KafkaPublisher
from mnemo_store import OutboxMessage
from mnemo_telemetry import tracing
from opentelemetry.sdk.trace.sampling import DEFAULT_ON


class Client:
    """What the relay uses of aiokafka's producer; refuses the `refuse`-th record (from 0)."""

    def __init__(self, refuse: int) -> None:
        self.refuse = refuse
        self.sent: list[tuple[str, bytes, Sequence[tuple[str, bytes]]]] = []

    async def send(
        self, topic: str, value: bytes, key: bytes | None = None, *, headers: Any = None
    ) -> asyncio.Future[object]:
        if len(self.sent) == self.refuse:
            raise ConnectionError("the client refused the record")
        self.sent.append((topic, value, headers))
        done: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        done.set_result("acknowledged")
        return done


def broker_over(client: Client) -> Any:
    return SimpleNamespace(
        config=SimpleNamespace(producer=SimpleNamespace(_producer=client_state(client)))
    )


def client_state(client: Client) -> Any:
    return SimpleNamespace(producer=client)


def message(n: int, traceparent: str) -> OutboxMessage:
    tenant = uuid.UUID(int=1)
    return OutboxMessage(
        tenant_id=tenant,
        seq=n,
        event_id=uuid.uuid4(),
        topic="mnemo.test.v1",
        key=str(tenant).encode(),
        payload=f'{{"n":{n}}}',
        headers={"content-type": "application/json", "traceparent": traceparent},
    )


async def test_a_refused_record_fails_itself_and_every_later_one_and_the_earlier_ones_stand() -> (
    None
):
    tracing.configure_tracing("test", None, sampler=DEFAULT_ON)
    dropped = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-02"
    other = "00-4bf92f3577b34da6a3ce929d0e0e4737-00f067aa0ba902b7-02"
    batch = [message(0, dropped), message(1, dropped), message(2, other), message(3, other)]
    client = Client(refuse=2)
    acks = await KafkaPublisher(broker_over(client)).enqueue_all(batch)
    assert len(acks) == 4
    results = await asyncio.gather(*acks, return_exceptions=True)
    assert results[:2] == ["acknowledged", "acknowledged"]
    assert all(isinstance(r, ConnectionError) for r in results[2:])
    assert [value for _, value, _ in client.sent] == [b'{"n":0}', b'{"n":1}']
    # An unsampled trace's stored headers go as they are, with the event id as correlation id.
    assert dict(client.sent[0][2]) == {
        "content-type": b"application/json",
        "traceparent": dropped.encode(),
        "correlation_id": str(batch[0].event_id).encode(),
    }


@pytest.mark.parametrize("refuse", [0, 3])
async def test_the_acknowledgements_line_up_with_the_batch(refuse: int) -> None:
    tracing.configure_tracing("test", None, sampler=DEFAULT_ON)
    batch = [
        message(n, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00") for n in range(4)
    ]
    acks = await KafkaPublisher(broker_over(Client(refuse))).enqueue_all(batch)
    results = await asyncio.gather(*acks, return_exceptions=True)
    assert [isinstance(r, ConnectionError) for r in results] == [n >= refuse for n in range(4)]
