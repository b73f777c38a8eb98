"""The `--tenant` option of the commands that act for one tenant (`persist`, `forget`)."""

from __future__ import annotations

import uuid

from mnemo_cli.errors import CliError


def tenant_id(text: str) -> uuid.UUID:
    """`--tenant TEXT` as a tenant id, or a CliError saying which uuid to give."""
    try:
        return uuid.UUID(text.strip())
    except ValueError:
        raise CliError(
            f"--tenant {text[:80]!r} is not a tenant id: give the uuid `mnemo tenant create` "
            "printed (`mnemo tenant list` shows them)"
        ) from None
