"""`mnemo tenant erase --help` says what an erase does not reach (records on Kafka) and how an
operator deals with them."""

from __future__ import annotations

import pytest
from mnemo_cli.main import main


def test_the_erase_help_names_what_stays_on_kafka_and_how_to_be_rid_of_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["tenant", "erase", "--help"])
    assert stopped.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for said in (
        "Not reached: records already on Kafka",
        "MNEMO_KAFKA_DEAD_LETTER_RETENTION_MS",
        "`mnemo dlt list --tenant T`",
        "`mnemo dlt replay` refuses to publish the tenant's dead letters again",
        "retention.ms",
    ):
        assert said in text
