"""`mnemo token --tenant T [--client k=v …] [--scope …]`: mint a development bearer token.

Signed with HS256 by `--secret`, else `MNEMO_TOKEN_SECRET`, else the local stack's public
development key (`mnemo_auth.DEVELOPMENT_SECRET`, what the services verify with in development
mode when they have no key). Production tokens come from the deployment's identity provider, not from here.
"""

from __future__ import annotations

import argparse
import os
import uuid
from datetime import timedelta
from typing import Any

from mnemo_auth import DEVELOPMENT_SECRET, mint_token

from mnemo_cli.errors import CliError


def register(subparsers: Any) -> None:  # argparse's subparsers action has no public type
    parser = subparsers.add_parser("token", help="mint a development bearer token (JWT)")
    parser.add_argument("--tenant", required=True, help="the tenant id (uuid) the token speaks for")
    parser.add_argument(
        "--client",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a 'client' claim entry (repeatable): confines the token to a corpus's pinned scope",
    )
    parser.add_argument(
        "--scope",
        action="append",
        default=[],
        choices=("read", "write", "admin"),
        help="a scope to grant (repeatable; default: read)",
    )
    parser.add_argument("--subject", default="developer", help="the 'sub' claim")
    parser.add_argument("--ttl", type=int, default=3600, help="lifetime in seconds (default 3600)")
    parser.add_argument(
        "--secret", help="HS256 signing key (default: MNEMO_TOKEN_SECRET or dev key)"
    )
    parser.set_defaults(func=run)


def parse_pairs(pairs: list[str], what: str) -> dict[str, str]:
    result: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise CliError(f"{what} {pair!r} must be KEY=VALUE, e.g. tenant_id=acme")
        result[key] = value
    return result


def run(args: argparse.Namespace) -> int:
    try:
        tenant = uuid.UUID(args.tenant)
    except ValueError:
        raise CliError(
            f"--tenant {args.tenant!r} is not a uuid (see `mnemo tenant list`)"
        ) from None
    if args.ttl < 1:
        raise CliError("--ttl must be at least 1 second")
    secret = args.secret or os.environ.get("MNEMO_TOKEN_SECRET") or DEVELOPMENT_SECRET
    print(
        mint_token(
            tenant=tenant,
            secret=secret,
            subject=args.subject,
            scopes=args.scope or ["read"],
            client=parse_pairs(args.client, "--client") or None,
            ttl=timedelta(seconds=args.ttl),
        )
    )
    return 0
