"""`mnemo audit tail` prints text that callers chose (a token's `sub` and `client`, a producer's
name, an action, a trace): every control, format and separator character is shown escaped, so no
row can forge another line, rewrite the current one, colour the terminal or reverse its text."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mnemo_cli.commands.audit import _row_text
from mnemo_store.audit_chain import ChainRow
from mnemo_store.registry import shown_name
from mnemo_store.shown_text import shown_text

HOSTILE = ["\n", "\x1b[31m", "\r", "\u202e", "\u2028", "\x00", "\x7f", "\x9b", "\t", "\ud800"]


def row(
    *,
    producer: str = "navigator",
    principal: str = "agent",
    action: str = "corpus:D:query",
    trace: str | None = None,
) -> ChainRow:
    return ChainRow(
        tenant=uuid.uuid4(),
        seq=7,
        event_id=uuid.uuid4(),
        kind="query",
        occurred_at=datetime(2026, 12, 4, tzinfo=UTC),
        producer=producer,
        trace=trace,
        payload={"action": action, "principal": principal},
        prev_hash=bytes(32),
        hash=bytes(32),
    )


def assert_one_safe_line(line: str) -> None:
    assert line.isprintable(), repr(line)


@pytest.mark.parametrize("bad", HOSTILE, ids=repr)
def test_a_hostile_principal_is_printed_escaped_on_one_line(bad: str) -> None:
    line = _row_text(row(principal=f"alice{bad}     8  forged row (client tenant_id=x{bad})"))
    assert_one_safe_line(line)
    assert "by=alice" in line


@pytest.mark.parametrize("bad", HOSTILE, ids=repr)
def test_a_hostile_producer_action_or_trace_is_printed_escaped(bad: str) -> None:
    trace = f"00-{('1' + bad).ljust(32, '0')[:32]}-{'1' * 16}-01"
    line = _row_text(row(producer=f"p{bad}", action=f"corpus:{bad}:query", trace=trace))
    assert_one_safe_line(line)


def test_the_escapes_are_the_familiar_ones() -> None:
    assert shown_text("a\nb\rc\x1b[31md\u202ee\\f") == "a\\nb\\rc\\x1b[31md\\u202ee\\\\f"
    assert shown_text("été 😀 ok") == "été 😀 ok"
    assert shown_text("été", ascii_only=True) == "\\xe9t\\xe9"


@given(st.text())
def test_any_text_is_shown_as_one_printable_line(text: str) -> None:
    assert shown_text(text).isprintable()
    assert shown_text(text, ascii_only=True).isascii()


@given(st.text(), st.text())
def test_two_different_texts_are_never_shown_alike(first: str, second: str) -> None:
    if first != second:
        assert shown_text(first) != shown_text(second)


def test_tenant_names_use_the_same_escaping() -> None:
    assert shown_name("a\nb\u202e") == "'" + shown_text("a\nb\u202e", ascii_only=True) + "'"
