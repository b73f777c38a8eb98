"""The empty-query rule shared by every command that navigates or retrieves.

A blank query is a request only with a seed document (`--from`: explore the graph from it, the
seed's `from:` field); without one it is a usage error, exit status 2. The navigator's HTTP API
applies the same rule (a 422 naming it).
"""

from __future__ import annotations

from mnemo_cli.errors import CliError


def check_query(query: str, seed: str | None = None) -> None:
    """Raise a usage error for a blank `query` unless a `seed` document is given."""
    if not query.strip() and not seed:
        raise CliError(
            "--query is empty: give the text to look for (e.g. --query 'refunds'), "
            "or a seed document with --from to explore from it"
        )
