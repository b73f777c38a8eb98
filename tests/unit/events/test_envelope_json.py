"""`envelope_json`, the envelope a writer emitting one event per row builds without pydantic, is
exactly the JSON of the model's envelope, and reads back as one."""

from __future__ import annotations

import uuid

import pytest
from mnemo_events import (
    DOCUMENT_PERSISTED,
    DocumentPersisted,
    Envelope,
    envelope_json,
    new_envelope,
)

KIND = DOCUMENT_PERSISTED
TRACE = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


@pytest.mark.parametrize("trace", [TRACE, None])
def test_a_persisted_document_envelope_equals_the_models_json_key_for_key(
    trace: str | None,
) -> None:
    t, e = uuid.uuid4(), uuid.uuid4()
    values = {"id": "a", "title": "Ünïcode", "n": 3, "x": 1.5, "tags": ["t"], "meta": {"k": None}}
    data = DocumentPersisted(corpus="Memory", store="Docs", id="a", values=values)
    fields = data.model_dump()
    mine = envelope_json(
        type(data), fields, tenant=t, producer="p", event_type=KIND, event_id=e, trace=trace
    )
    made = new_envelope(data, tenant=t, producer="p", event_type=KIND, event_id=e, trace=trace)
    model = made.model_dump(mode="json")
    assert str(mine.pop("occurred_at")).endswith("Z")
    model.pop("occurred_at")
    assert mine == model
    assert list(mine) == [k for k in Envelope[DocumentPersisted].model_fields if k != "occurred_at"]
    parsed = Envelope[DocumentPersisted].model_validate(
        {**mine, "occurred_at": "2026-01-02T03:04:05Z"}
    )
    assert (parsed.event_id, parsed.tenant, parsed.data) == (e, t, data)
