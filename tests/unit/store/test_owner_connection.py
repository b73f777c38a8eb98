"""The operator commands' owner connection: a server that accepts and never answers, or a bad
MNEMO_CONNECT_TIMEOUT, is one line on stderr, never a hang or a traceback."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest
from mnemo_cli.main import main
from mnemo_cli.owner_connection import (
    CONNECT_TIMEOUT_VARIABLE,
    DEFAULT_CONNECT_TIMEOUT,
    OWNER_URL_VARIABLE,
    connect_timeout,
)


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A port that accepts TCP connections (the kernel's backlog) and never says a word."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        yield server.getsockname()[1]


def test_a_server_that_never_answers_is_one_line_after_the_connect_timeout(
    silent_server: int, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(OWNER_URL_VARIABLE, f"postgresql://o:secret@127.0.0.1:{silent_server}/m")
    monkeypatch.setenv(CONNECT_TIMEOUT_VARIABLE, "0.5")
    started = time.monotonic()
    assert main(["tenant", "list"]) == 1
    assert time.monotonic() - started < 5
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"did not answer within 0.5 s ({CONNECT_TIMEOUT_VARIABLE})" in err
    assert "secret" not in err


def test_the_connect_timeout_defaults_to_ten_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CONNECT_TIMEOUT_VARIABLE, raising=False)
    assert connect_timeout() == DEFAULT_CONNECT_TIMEOUT == 10.0


@pytest.mark.parametrize("value", ["ten", "0", "-1", "nan", "inf", "1e9"])
def test_a_connect_timeout_that_is_not_a_sensible_number_is_a_usage_error(
    value: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(OWNER_URL_VARIABLE, "postgresql://o:p@127.0.0.1:1/m")
    monkeypatch.setenv(CONNECT_TIMEOUT_VARIABLE, value)
    assert main(["corpus", "list"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "is not a number of seconds" in err
