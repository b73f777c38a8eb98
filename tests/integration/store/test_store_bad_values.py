"""Values Postgres cannot take are the store's own errors, naming the store, row, column and value,
before any SQL runs; a value it can take goes in, text for a typed column converted by the column's
rules. The same for an outbox payload."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from mnemo_store import Store
from mnemo_store.errors import InvalidValueError
from mnemo_store.outbox import OutboxEvent


@pytest.mark.parametrize(
    ("id_type", "column", "value", "message"),
    [
        ("Text", "title", "a\x00b", "column 'title' (Text): text cannot contain NUL characters"),
        ("Text", "title", "\ud800", "unpaired surrogate"),
        ("BigInt", "id", "abc", "column 'id' (BigInt): not a BigInt: 'abc'"),
        ("BigInt", "id", 2**64, "out of range for BigInt"),
        ("BigInt", "id", 1.5, "a Python float is not a BigInt value (give an int"),
        ("Uuid", "tenant_id", "not-a-uuid", "not a Uuid"),
        ("Text", "title", 42, "a Python int is not a Text value (give a str"),
    ],
)
async def test_a_value_postgres_cannot_take_is_an_error_naming_its_row_and_column(
    declare: Any,
    new_tenant: Any,
    store: Store,
    id_type: str,
    column: str,
    value: object,
    message: str,
) -> None:
    declared = await declare(id_type)
    tenant = await new_tenant()
    good = {"id": "7" if id_type != "Uuid" else str(uuid.uuid4()), "tenant_id": uuid.uuid4()}
    row = {**good, "title": "fine", column: value}
    async with store.tenant(tenant) as tx:
        with pytest.raises(InvalidValueError) as refused:
            await tx.insert_rows(declared.corpus.documents, [{**good, "title": "ok"}, row])
    text = str(refused.value)
    assert f"store '{declared.documents}', row 1, column" in text
    assert message in text
    assert "\x00" not in text


async def test_text_for_a_typed_column_is_converted_by_the_columns_rules(
    declare: Any, new_tenant: Any, store: Store
) -> None:
    declared = await declare("BigInt")
    tenant = await new_tenant()
    async with store.tenant(tenant) as tx:
        count = await tx.insert_rows(
            declared.corpus.documents,
            [{"id": "42", "tenant_id": str(uuid.uuid4()), "title": "forty-two"}],
        )
        stored = await tx.retrieve(declared.corpus, "forty", 5)
    assert count == 1
    assert [document.id for document in stored] == ["42"]  # ids come back as text


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"text": "a\x00b"}, "JSON string value: text cannot contain NUL characters"),
        ({"n": float("inf")}, "not JSON-encodable"),
        ({"deep": "x", "n": 10**5000}, "not JSON-encodable"),
    ],
)
async def test_an_outbox_payload_postgres_cannot_store_is_an_error_naming_the_event(
    new_tenant: Any, store: Store, payload: dict[str, object], message: str
) -> None:
    tenant = await new_tenant()
    event = OutboxEvent(uuid.uuid4(), "mnemo.test", b"k", payload)
    async with store.tenant(tenant) as tx:
        with pytest.raises(InvalidValueError, match=f"outbox event {event.event_id}"):
            await tx.append_outbox(event)
    with pytest.raises(InvalidValueError, match=message):
        async with store.tenant(tenant) as tx:
            await tx.append_outbox(event)


async def test_a_row_naming_an_undeclared_column_is_a_value_error_naming_the_store_columns(
    declare: Any, new_tenant: Any, store: Store
) -> None:
    declared = await declare("BigInt")
    tenant = await new_tenant()
    row = {"id": 1, "tenant_id": uuid.uuid4(), "title": "t", "colour": "red"}
    async with store.tenant(tenant) as tx:
        with pytest.raises(InvalidValueError) as refused:
            await tx.insert_rows(declared.corpus.documents, [row])
    assert f"store '{declared.documents}' has no column 'colour'; its columns are" in str(
        refused.value
    )
