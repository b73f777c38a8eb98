"""What `mnemo dlt` reads off a dead letter and how it selects them, without a broker: the tenant
from the key or the envelope, the time from the header or the record, the original headers a
replay sends (explanation and earlier replay marks off, the rest as they came)."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta

from mnemo_events.dead_letter_replay import REPLAY_OF, DeadLetterFilter, StoredDeadLetter
from mnemo_events.dead_letters import DEAD_LETTERED_AT, ORIGIN_TOPIC, REASON

TENANT = uuid.UUID("00000000-0000-4000-8000-00000000000a")
AT = datetime(2026, 12, 5, 8, 0, tzinfo=UTC)


def letter(
    *,
    key: bytes | None = str(TENANT).encode(),
    value: bytes = b"{}",
    headers: tuple[tuple[str, bytes], ...] = (),
    offset: int = 7,
) -> StoredDeadLetter:
    return StoredDeadLetter(
        topic="mnemo.persist.v1.dlt",
        partition=2,
        offset=offset,
        timestamp_ms=int((AT - timedelta(days=1)).timestamp() * 1000),
        key=key,
        value=value,
        headers=headers,
    )


def test_a_dead_letter_is_named_by_its_topic_partition_and_offset_and_knows_its_origin() -> None:
    plain = letter()
    assert plain.name == "mnemo.persist.v1.dlt:2:7"
    assert plain.origin_topic == "mnemo.persist.v1"
    moved = letter(headers=((ORIGIN_TOPIC, b"test.persist.x.v1"),))
    assert moved.origin_topic == "test.persist.x.v1"


def test_the_tenant_comes_from_the_key_else_from_the_envelope_else_none() -> None:
    assert letter().tenant == TENANT
    envelope = json.dumps({"tenant": str(TENANT), "event_id": "e-1"}).encode()
    keyless = letter(key=b"not a uuid", value=envelope)
    assert keyless.tenant == TENANT
    assert keyless.event_id == "e-1"
    assert letter(key=None, value=b"{broken").tenant is None
    assert letter(key=None, value=envelope).tenant == TENANT


def test_a_record_whose_key_and_envelope_disagree_names_both_tenants_key_first() -> None:
    other = uuid.uuid4()
    envelope = json.dumps({"tenant": str(other)}).encode()
    both = letter(value=envelope)
    assert both.tenant == TENANT
    assert both.named_tenants == (TENANT, other)
    assert letter(value=json.dumps({"tenant": str(TENANT)}).encode()).named_tenants == (TENANT,)
    assert letter(key=b"x", value=b"{broken").named_tenants == ()


def test_the_time_is_the_header_s_and_the_record_s_when_the_header_is_missing_or_bad() -> None:
    assert letter(headers=((DEAD_LETTERED_AT, AT.isoformat().encode()),)).dead_lettered_at == AT
    assert letter().dead_lettered_at == AT - timedelta(days=1)
    assert letter(headers=((DEAD_LETTERED_AT, b"yesterday"),)).dead_lettered_at == AT - timedelta(
        days=1
    )


def test_a_replay_sends_the_original_headers_only() -> None:
    headers = (
        ("traceparent", b"00-abc-def-01"),
        ("content-type", b"application/json"),
        (REASON, b"unknown tenant"),
        ("mnemo-dlt-attempts", b"1"),
        (REPLAY_OF, b"mnemo.persist.v1.dlt:0:1"),
    )
    assert letter(headers=headers).original_headers == [
        ("traceparent", b"00-abc-def-01"),
        ("content-type", b"application/json"),
    ]


def test_a_filter_takes_what_every_given_part_allows() -> None:
    unknown = letter(
        headers=((REASON, b"Unknown tenant x"), (DEAD_LETTERED_AT, AT.isoformat().encode()))
    )
    assert DeadLetterFilter().matches(unknown)
    assert DeadLetterFilter(tenant=TENANT, reason="unknown TENANT").matches(unknown)
    assert not DeadLetterFilter(tenant=uuid.uuid4()).matches(unknown)
    assert not DeadLetterFilter(reason="invalid envelope").matches(unknown)
    assert DeadLetterFilter(since=AT, until=AT).matches(unknown)
    assert not DeadLetterFilter(since=AT + timedelta(seconds=1)).matches(unknown)
    assert not DeadLetterFilter(until=AT - timedelta(seconds=1)).matches(unknown)
    assert DeadLetterFilter(names=frozenset({unknown.name})).matches(unknown)
    assert not DeadLetterFilter(names=frozenset({"mnemo.persist.v1.dlt:2:8"})).matches(unknown)
