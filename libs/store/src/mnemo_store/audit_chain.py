"""The audit chain's arithmetic, in Python: what the database computes, and how to check it.

Each tenant's audit rows form a chain: row `seq` stores `prev_hash` (the hash of row `seq - 1`, or
32 zero bytes for row 1) and `hash = sha256(prev_hash || JCS(document))`, where JCS is RFC 8785
canonical JSON and the document is `chain_document(row)`. The document names the payload by its
digest only (`payload_sha256`, the SHA-256 of the payload's canonical JSON, chain version 2), so a
payload can be redacted (replaced by `{}`, the digest kept) and the row keeps its place and link.
The database computes every link itself (migrations 0007 and 0014, `mnemo.audit_chain_link`); this
module recomputes them with the `rfc8785` package to verify a chain, and checks that a payload
holds only values the chain can carry.

Pure: no I/O. `mnemo_store.audit_log` reads the rows; `verify_chain` judges them.
"""

from __future__ import annotations

import hashlib
import math
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

import rfc8785

from mnemo_store.errors import StoreError

GENESIS_HASH = bytes(32)
"""`prev_hash` of a tenant's first row."""

CHAIN_VERSION = 2
MAX_SAFE_INTEGER = 2**53 - 1
REORDER_PROBE = 64
"""How far from its position a row's original seq is searched for when its hash does not match."""


class AuditValueError(StoreError):
    """A payload value the chain cannot carry (the database would refuse it too)."""


Problem = Literal["missing", "reordered", "altered", "truncated", "rewritten"]


@dataclass(frozen=True, slots=True)
class ChainRow:
    """One row of `mnemo.audit_log`, as read back."""

    tenant: uuid.UUID
    seq: int
    event_id: uuid.UUID
    kind: str
    occurred_at: datetime
    producer: str
    trace: str | None
    payload: Mapping[str, Any]
    prev_hash: bytes
    hash: bytes
    recorded_at: datetime | None = None
    payload_digest: bytes | None = None
    """The digest stored with the row; the verifier trusts it only for a redacted row."""
    redacted_at: datetime | None = None
    """When the payload was redacted (it is then `{}`), else None."""

    @property
    def redacted(self) -> bool:
        return self.redacted_at is not None


@dataclass(frozen=True, slots=True)
class ChainBreak:
    """The first row at which a chain stops verifying."""

    seq: int
    problem: Problem
    detail: str


@dataclass(frozen=True, slots=True)
class ChainReport:
    """What `verify_chain` found: rows checked, the last good seq, and the first break if any."""

    rows: int
    head_seq: int
    head_hash: bytes
    broken: ChainBreak | None = field(default=None)
    redacted: int = 0
    """Rows among those checked whose payload was redacted (their links verified, not their
    content)."""

    @property
    def ok(self) -> bool:
        return self.broken is None


def _timestamp(moment: datetime) -> str:
    if moment.tzinfo is None:
        raise AuditValueError("occurred_at must carry a time zone")
    m = moment.astimezone(UTC)
    return (
        f"{m.year:04d}-{m.month:02d}-{m.day:02d}T{m.hour:02d}:{m.minute:02d}:{m.second:02d}"
        f".{m.microsecond:06d}Z"
    )


def payload_digest(payload: Mapping[str, Any]) -> bytes:
    """SHA-256 of the payload's canonical JSON (`mnemo.audit_payload_digest` in the database)."""
    return hashlib.sha256(rfc8785.dumps(dict(payload))).digest()


def row_payload_digest(row: ChainRow) -> bytes:
    """The digest a row's link covers: the stored one for a redacted row, else its payload's."""
    if row.redacted:
        if row.payload_digest is None:
            raise AuditValueError(f"seq {row.seq} is redacted but carries no payload digest")
        return row.payload_digest
    return payload_digest(row.payload)


def chain_document(row: ChainRow, *, seq: int | None = None) -> dict[str, Any]:
    """The JSON document a row's hash covers (`mnemo.audit_chain_document_v2` in the database)."""
    return {
        "v": CHAIN_VERSION,
        "tenant": str(row.tenant),
        "seq": row.seq if seq is None else seq,
        "event_id": str(row.event_id),
        "kind": row.kind,
        "occurred_at": _timestamp(row.occurred_at),
        "producer": row.producer,
        "trace": row.trace,
        "payload_sha256": row_payload_digest(row).hex(),
    }


def link_hash(prev_hash: bytes, document: Mapping[str, Any]) -> bytes:
    """sha256(prev_hash || RFC 8785 canonical JSON of `document`)."""
    return hashlib.sha256(prev_hash + rfc8785.dumps(dict(document))).digest()


def check_chain_value(value: object, path: str = "$") -> None:
    """Raise `AuditValueError` unless `value` is JSON the chain can carry and read back unchanged.

    Accepted: null, booleans, strings without NUL, integers within ±(2^53−1), finite floats that
    are not integers beyond that range, and arrays and string-keyed objects of these.
    """
    if value is None or isinstance(value, bool):
        return
    if isinstance(value, int):
        if abs(value) > MAX_SAFE_INTEGER:
            raise AuditValueError(
                f"{path}: integer {value} is outside ±(2^53−1), the integers JSON numbers hold "
                "exactly; send it as a string"
            )
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise AuditValueError(f"{path}: {value} is not a finite number")
        if value.is_integer() and abs(value) > MAX_SAFE_INTEGER:
            raise AuditValueError(f"{path}: {value!r} is an integer outside ±(2^53−1)")
        return
    if isinstance(value, str):
        _check_text(value, path)
        return
    if isinstance(value, list | tuple):
        for index, item in enumerate(value):
            check_chain_value(item, f"{path}[{index}]")
        return
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise AuditValueError(f"{path}: object keys must be strings, got {key!r}")
            _check_text(key, f"{path} key {key!r}")
            check_chain_value(item, f"{path}.{key}")
        return
    raise AuditValueError(f"{path}: {type(value).__name__} is not a JSON value")


def _check_text(text: str, path: str) -> None:
    if "\x00" in text:
        raise AuditValueError(
            f"{path}: text holds a NUL character, which Postgres JSON cannot store"
        )
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise AuditValueError(f"{path}: text holds a lone surrogate, not Unicode text") from error


class ChainVerifier:
    """Checks rows one at a time, in seq order, so a long chain can be streamed page by page."""

    def __init__(self) -> None:
        self._expected = 1
        self._prev = GENESIS_HASH
        self._count = 0
        self._redacted = 0
        self._broken: ChainBreak | None = None

    @property
    def broken(self) -> ChainBreak | None:
        return self._broken

    def feed(self, row: ChainRow) -> ChainBreak | None:
        """Check the next row; once a break is found, it stays the answer."""
        if self._broken is not None:
            return self._broken
        self._count += 1
        self._broken = _check_row(row, self._expected, self._prev)
        if self._broken is None:
            self._prev = row.hash
            self._expected += 1
            self._redacted += row.redacted
        return self._broken

    def report(self) -> ChainReport:
        return ChainReport(
            rows=self._count,
            head_seq=self._expected - 1,
            head_hash=self._prev,
            broken=self._broken,
            redacted=self._redacted,
        )


def verify_chain(rows: Iterable[ChainRow]) -> ChainReport:
    """Check a tenant's rows, given in seq order; report the first seq missing, reordered or altered.

    - missing: the next row's seq skips this one (a row was deleted);
    - reordered: the row's content hashes correctly only under another seq, or it does not link
      to the row before it (rows were moved or renumbered);
    - altered: the row's content no longer matches its hash.
    A redacted row is checked by its stored payload digest and counted in `redacted`.
    A chain cut at its end cannot be seen from the rows alone: compare `head_seq` with a head
    recorded elsewhere.
    """
    verifier = ChainVerifier()
    for row in rows:
        if verifier.feed(row) is not None:
            break
    return verifier.report()


def _check_row(row: ChainRow, expected: int, prev: bytes) -> ChainBreak | None:
    if row.seq > expected:
        return ChainBreak(
            expected,
            "missing",
            f"seq {expected} is missing: the row after seq {expected - 1} is seq {row.seq}",
        )
    if row.seq < expected:
        return ChainBreak(
            row.seq, "reordered", f"seq {row.seq} appears again after seq {expected - 1}"
        )
    try:
        computed = link_hash(row.prev_hash, chain_document(row))
    except (rfc8785.CanonicalizationError, AuditValueError) as error:
        return ChainBreak(
            row.seq, "altered", f"seq {row.seq}: its content is not canonical JSON: {error}"
        )
    if computed != row.hash:
        original = _original_seq(row)
        if original is not None:
            return ChainBreak(
                row.seq, "reordered", f"seq {row.seq} holds the event appended as seq {original}"
            )
        return ChainBreak(
            row.seq, "altered", f"seq {row.seq}: its content no longer matches its hash"
        )
    if row.prev_hash != prev:
        return ChainBreak(
            row.seq,
            "reordered",
            f"seq {row.seq} does not link to seq {row.seq - 1}: its prev_hash is not that row's hash",
        )
    return None


def _original_seq(row: ChainRow) -> int | None:
    low = max(1, row.seq - REORDER_PROBE)
    for candidate in range(low, row.seq + REORDER_PROBE + 1):
        if (
            candidate != row.seq
            and link_hash(row.prev_hash, chain_document(row, seq=candidate)) == row.hash
        ):
            return candidate
    return None


def check_against_checkpoint(
    report: ChainReport, checkpoint_seq: int, checkpoint_hash: bytes, hash_at_seq: bytes | None
) -> ChainBreak | None:
    """Compare a verified chain with a head recorded elsewhere (a checkpoint): the break when the
    chain ends before the checkpoint's seq (its tail was cut) or its row at that seq has another
    hash (the chain was rewritten up to there), else None. `hash_at_seq`: the chain's hash at
    `checkpoint_seq` (None when it has no such row). A chain already broken is not judged again."""
    if report.broken is not None:
        return report.broken
    if report.head_seq < checkpoint_seq:
        return ChainBreak(
            report.head_seq + 1,
            "truncated",
            f"the chain ends at seq {report.head_seq}, but a checkpoint recorded seq"
            f" {checkpoint_seq}: rows {report.head_seq + 1}..{checkpoint_seq} were cut off",
        )
    if hash_at_seq != checkpoint_hash:
        return ChainBreak(
            checkpoint_seq,
            "rewritten",
            f"seq {checkpoint_seq} has another hash than the checkpoint recorded: the chain was"
            f" rewritten up to seq {checkpoint_seq} and relinked",
        )
    return None
