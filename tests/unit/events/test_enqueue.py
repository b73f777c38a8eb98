"""`mnemo_events.broker.enqueue` queues a record straight to the Kafka client the broker holds,
keyed by the envelope's tenant, with the content type, the trace context and the event id as its
correlation id, and hands back what settles when the broker has it."""

from __future__ import annotations

import asyncio
import re
import uuid
from types import SimpleNamespace
from typing import Any

from mnemo_events import PersistRow, new_envelope
from mnemo_events.broker import CORRELATION_ID, encode, enqueue

TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


class Client:
    """What `enqueue` uses of aiokafka's producer: `send` queues and returns the delivery."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, bytes, bytes | None, dict[str, bytes]]] = []
        self.deliveries: list[asyncio.Future[object]] = []

    async def send(
        self, topic: str, value: bytes, key: bytes | None = None, *, headers: Any = None
    ) -> asyncio.Future[object]:
        self.sent.append((topic, value, key, dict(headers)))
        self.deliveries.append(asyncio.get_running_loop().create_future())
        return self.deliveries[-1]


async def test_a_record_is_queued_with_its_headers_and_its_delivery_awaited_apart() -> None:
    client = Client()
    broker: Any = SimpleNamespace(
        config=SimpleNamespace(producer=SimpleNamespace(_producer=SimpleNamespace(producer=client)))
    )
    tenant = uuid.uuid4()
    envelope = new_envelope(
        PersistRow(store="notes", values={"id": "n1"}),
        tenant=tenant,
        producer="test",
        event_type="mnemo.persist.v1",
        trace=TRACEPARENT,
    )
    delivered = await enqueue(broker, "mnemo.persist.v1", envelope)  # type: ignore[arg-type]
    [(topic, value, key, headers)] = client.sent
    assert (topic, key, value) == ("mnemo.persist.v1", *encode(envelope))  # type: ignore[arg-type]
    assert key == str(tenant).encode()
    assert headers["content-type"] == b"application/json"
    assert headers[CORRELATION_ID] == str(envelope.event_id).encode()
    # The current span's context when there is one (a producer span), else the envelope's.
    assert re.fullmatch(
        r"00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}", headers["traceparent"].decode()
    )
    assert delivered is client.deliveries[0]
    assert not client.deliveries[0].done()  # queued, not yet delivered: the caller awaits it
