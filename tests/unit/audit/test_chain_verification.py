"""verify_chain, the pure judge of a chain: the first missing, reordered or altered seq."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import UTC, datetime

from mnemo_store.audit_chain import (
    GENESIS_HASH,
    ChainRow,
    chain_document,
    link_hash,
    payload_digest,
    verify_chain,
)

TENANT = uuid.uuid4()


def chain(length: int) -> list[ChainRow]:
    rows: list[ChainRow] = []
    prev = GENESIS_HASH
    for seq in range(1, length + 1):
        row = ChainRow(
            tenant=TENANT,
            seq=seq,
            event_id=uuid.uuid4(),
            kind="persist",
            occurred_at=datetime(2026, 1, 1, tzinfo=UTC),
            producer="ingest",
            trace=None,
            payload={"row_ids": [str(seq)], "weight": seq / 3},
            prev_hash=prev,
            hash=b"",
        )
        row = dataclasses.replace(row, hash=link_hash(prev, chain_document(row)))
        rows.append(row)
        prev = row.hash
    return rows


def test_an_intact_chain_verifies_and_reports_its_head() -> None:
    rows = chain(6)
    report = verify_chain(rows)
    assert report.ok
    assert (report.rows, report.head_seq, report.head_hash) == (6, 6, rows[-1].hash)
    assert verify_chain([]).ok


def test_an_altered_row_is_named() -> None:
    rows = chain(6)
    rows[3] = dataclasses.replace(rows[3], payload={"row_ids": ["forged"]})
    broken = verify_chain(rows).broken
    assert broken is not None
    assert (broken.seq, broken.problem) == (4, "altered")


def test_a_missing_row_is_named_by_the_seq_that_is_gone() -> None:
    rows = chain(6)
    del rows[1]
    broken = verify_chain(rows).broken
    assert broken is not None
    assert (broken.seq, broken.problem) == (2, "missing")


def test_two_swapped_rows_are_named_by_the_first_position() -> None:
    rows = chain(6)
    third, fourth = rows[2], rows[3]
    rows[2], rows[3] = dataclasses.replace(fourth, seq=3), dataclasses.replace(third, seq=4)
    broken = verify_chain(rows).broken
    assert broken is not None
    assert (broken.seq, broken.problem) == (3, "reordered")
    assert "appended as seq 4" in broken.detail


def test_a_rehashed_row_that_no_longer_links_is_named() -> None:
    rows = chain(4)
    forged = dataclasses.replace(rows[2], payload={"row_ids": ["forged"]})
    rows[2] = dataclasses.replace(forged, hash=link_hash(forged.prev_hash, chain_document(forged)))
    broken = verify_chain(rows).broken
    assert broken is not None
    assert (broken.seq, broken.problem) == (4, "reordered")


def test_a_redacted_row_verifies_by_its_stored_digest_and_is_counted() -> None:
    rows = chain(5)
    rows[1] = dataclasses.replace(
        rows[1],
        payload={},
        payload_digest=payload_digest(rows[1].payload),
        redacted_at=datetime(2026, 2, 1, tzinfo=UTC),
    )
    report = verify_chain(rows)
    assert (report.ok, report.rows, report.redacted, report.head_hash) == (
        True,
        5,
        1,
        rows[-1].hash,
    )


def test_a_redacted_row_with_another_digest_is_named_as_altered() -> None:
    rows = chain(5)
    rows[1] = dataclasses.replace(
        rows[1],
        payload={},
        payload_digest=payload_digest({"row_ids": ["forged"]}),
        redacted_at=datetime(2026, 2, 1, tzinfo=UTC),
    )
    broken = verify_chain(rows).broken
    assert broken is not None
    assert (broken.seq, broken.problem) == (2, "altered")


def test_a_payload_emptied_without_the_redaction_mark_is_named_as_altered() -> None:
    rows = chain(5)
    rows[1] = dataclasses.replace(rows[1], payload={}, payload_digest=payload_digest({}))
    broken = verify_chain(rows).broken
    assert broken is not None
    assert (broken.seq, broken.problem) == (2, "altered")
