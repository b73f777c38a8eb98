"""The `document.persisted` event ingest builds as a plain dict is exactly what the event model
would produce, and a consumer reads it as one."""

from __future__ import annotations

import uuid

from mnemo_events import DOCUMENT_PERSISTED, DocumentPersisted, Envelope, new_envelope
from mnemo_ingest.use_cases import PRODUCER, persisted_event


def test_the_plain_dict_event_equals_the_models_json_and_validates_back() -> None:
    tenant, event_id = uuid.uuid4(), uuid.uuid4()
    values = {"id": "a", "title": "Ünïcode", "n": 3, "x": 1.5, "tags": ["t"], "meta": {"k": None}}
    trace = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    event = persisted_event(
        "topic.v1",
        tenant,
        corpus="Memory",
        store="Docs",
        doc_id="a",
        values=values,
        event_id=event_id,
        trace=trace,
    )
    model = new_envelope(
        DocumentPersisted(corpus="Memory", store="Docs", id="a", values=values),
        tenant=tenant,
        producer=PRODUCER,
        event_type=DOCUMENT_PERSISTED,
        event_id=event_id,
        trace=trace,
    ).model_dump(mode="json")
    mine = dict(event.payload)
    assert mine.pop("occurred_at").endswith("Z")
    model.pop("occurred_at")
    assert mine == model
    assert list(event.payload) == list(Envelope[DocumentPersisted].model_fields)
    parsed = Envelope[DocumentPersisted].model_validate(event.payload)
    assert (parsed.event_id, parsed.tenant, parsed.data.values) == (event_id, tenant, values)
    assert (event.key, event.headers["traceparent"]) == (str(tenant).encode(), trace)
