"""`--tenant` of `mnemo persist` and `mnemo forget`: one parser, one message."""

from __future__ import annotations

import uuid

import pytest
from mnemo_cli.errors import CliError
from mnemo_cli.tenant_option import tenant_id


def test_a_tenant_uuid_with_surrounding_spaces_is_read_as_that_tenant() -> None:
    tenant = uuid.uuid4()
    assert tenant_id(f"  {tenant}\n") == tenant


@pytest.mark.parametrize("text", ["", "nope", "1234", "x" * 500])
def test_text_that_is_not_a_uuid_is_a_usage_error_naming_the_option(text: str) -> None:
    with pytest.raises(CliError) as caught:
        tenant_id(text)
    assert caught.value.exit_code == 2
    assert str(caught.value).startswith("--tenant ")
    assert "`mnemo tenant list`" in str(caught.value)
    assert len(str(caught.value)) < 300
