"""`mnemo dlt list|show|replay`: the dead letters of Mnemo's topics, and replaying them.

- `list` prints one line per dead letter (name, origin topic, tenant, when, reason), filtered by
  `--topic` (origin topics; default every Mnemo topic), `--tenant`, `--reason` (a substring) and
  `--since`/`--until` (when it was dead-lettered, ISO 8601); `--json` prints objects instead.
- `show NAME` prints one dead letter with its headers and its value (the record's bytes as text).
- `replay` republishes the dead letters named, or those the filters select, to their origin topic
  with their original bytes and headers (`mnemo_events.dead_letter_replay`): each once (a dead
  letter replayed before is skipped unless `--again`; a consumer's inbox processes a replayed
  event at most once anyway), then waits `--wait` seconds for the ones that fail again and counts
  them with their new reason. Exit 1 when any failed again or was not taken by the broker.
  A dead letter naming an erased tenant by its key or its envelope (`mnemo.erased_tenants`,
  read as the owner role through `MNEMO_OWNER_DATABASE_URL` when a selected letter names a
  tenant) is refused, never republished: its data would be on the topics again (exit 1, naming
  it). It leaves the dead-letter topic only with that topic's retention.

Every text shown is escaped (`mnemo_store.shown_text`): a dead letter is whatever a producer sent.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import uuid
from datetime import UTC, datetime
from typing import Any

import asyncpg
from mnemo_events.dead_letter_replay import (
    DeadLetterFilter,
    StoredDeadLetter,
    read_dead_letters,
    replay,
)
from mnemo_events.settings import KafkaSettings
from mnemo_events.topics import DEAD_LETTER_SUFFIX, TOPICS
from mnemo_store.erasure import erased_among
from mnemo_store.shown_text import shown_text

from mnemo_cli.errors import CliError
from mnemo_cli.owner_connection import with_owner

MAX_VALUE_CHARS = 20_000


def register(subparsers: Any) -> None:  # argparse's subparsers action has no public type
    parser = subparsers.add_parser("dlt", help="list, show and replay dead letters")
    commands = parser.add_subparsers(dest="dlt_command", metavar="ACTION", required=True)

    listing = commands.add_parser("list", help="dead letters, one line each")
    _filters(listing)
    listing.add_argument("--json", action="store_true", help="one JSON object per line")
    listing.set_defaults(func=list_command)

    show = commands.add_parser("show", help="one dead letter: headers and value")
    show.add_argument("name", help="TOPIC.dlt:PARTITION:OFFSET, as `mnemo dlt list` prints it")
    show.add_argument("--json", action="store_true", help="as one JSON object")
    show.set_defaults(func=show_command)

    again = commands.add_parser("replay", help="republish dead letters to their origin topic")
    again.add_argument("names", nargs="*", help="dead letters by name (else the filters select)")
    _filters(again)
    again.add_argument("--all", action="store_true", help="with no name or filter: every one")
    again.add_argument(
        "--again", action="store_true", help="also those replayed before (skipped otherwise)"
    )
    again.add_argument(
        "--wait",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="how long to watch for the replayed ones that fail again (default 10)",
    )
    again.add_argument("--dry-run", action="store_true", help="print what would be replayed")
    again.set_defaults(func=replay_command)


def _filters(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--topic",
        action="append",
        default=[],
        metavar="TOPIC",
        help="an origin topic (repeatable; default: every Mnemo topic)",
    )
    parser.add_argument("--tenant", help="only this tenant's (uuid)")
    parser.add_argument("--reason", help="only those whose reason holds this text (any case)")
    parser.add_argument("--since", help="dead-lettered at or after (ISO 8601)")
    parser.add_argument("--until", help="dead-lettered at or before (ISO 8601)")
    parser.add_argument("--limit", type=int, help="at most this many")


def _moment(text: str | None, option: str) -> datetime | None:
    if text is None:
        return None
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise CliError(
            f"{option} {shown_text(text[:80])!r} is not an ISO 8601 time (e.g. 2026-12-05T08:00Z)"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _selection(args: argparse.Namespace, names: frozenset[str] = frozenset()) -> DeadLetterFilter:
    tenant = None
    if args.tenant is not None:
        try:
            tenant = uuid.UUID(args.tenant.strip())
        except ValueError:
            raise CliError(f"--tenant {shown_text(args.tenant[:80])!r} is not a uuid") from None
    if args.limit is not None and args.limit < 1:
        raise CliError("--limit must be at least 1")
    return DeadLetterFilter(
        tenant=tenant,
        reason=args.reason,
        since=_moment(args.since, "--since"),
        until=_moment(args.until, "--until"),
        names=names,
    )


def _topics(args: argparse.Namespace, names: frozenset[str] = frozenset()) -> list[str]:
    given = [t.removesuffix(DEAD_LETTER_SUFFIX) for t in args.topic]
    from_names = [name.rsplit(":", 2)[0].removesuffix(DEAD_LETTER_SUFFIX) for name in names]
    return list(dict.fromkeys(given + from_names)) or list(TOPICS)


def _read(
    topics: list[str], selection: DeadLetterFilter, limit: int | None
) -> list[StoredDeadLetter]:
    try:
        return asyncio.run(read_dead_letters(KafkaSettings(), topics, selection, limit=limit))
    except Exception as error:  # the broker unreachable or refusing: one line, exit 1
        raise CliError(
            f"could not read the dead letters: {type(error).__name__}: {error}", 1
        ) from None


def _line(letter: StoredDeadLetter) -> str:
    tenant = str(letter.tenant) if letter.tenant else "-"
    reason = shown_text(letter.reason[:300])
    at = letter.dead_lettered_at.isoformat(timespec="seconds")
    return f"{letter.name}  {letter.origin_topic}  {tenant}  {at}  {reason}"


def list_command(args: argparse.Namespace) -> int:
    letters = _read(_topics(args), _selection(args), args.limit)
    for letter in letters:
        if args.json:
            print(json.dumps(letter.summary(), ensure_ascii=True))
        else:
            print(_line(letter))
    if not args.json:
        print(f"{len(letters)} dead letter(s)", file=sys.stderr)
    return 0


def _check_name(name: str) -> None:
    parts = name.rsplit(":", 2)
    if len(parts) != 3 or not parts[1].isdigit() or not parts[2].isdigit():
        raise CliError(
            f"{shown_text(name[:120])!r} is not a dead letter's name: TOPIC.dlt:PARTITION:OFFSET, "
            "as `mnemo dlt list` prints it"
        )


def show_command(args: argparse.Namespace) -> int:
    _check_name(args.name)
    names = frozenset({args.name})
    found = _read(_topics(argparse.Namespace(topic=[]), names), DeadLetterFilter(names=names), 1)
    if not found:
        raise CliError(f"no dead letter {shown_text(args.name[:120])!r}", 1)
    letter = found[0]
    value = letter.value.decode("utf-8", "replace")
    if args.json:
        document = {
            **letter.summary(),
            "key": None if letter.key is None else letter.key.decode("utf-8", "replace"),
            "headers": {n: v.decode("utf-8", "replace") for n, v in letter.headers},
            "value": value,
        }
        print(json.dumps(document, ensure_ascii=True))
        return 0
    for field, shown in letter.summary().items():
        print(f"{field}: {shown_text('-' if shown is None else str(shown))}")
    key = "-" if letter.key is None else letter.key.decode("utf-8", "replace")
    print(f"key: {shown_text(key)}")
    for name, header in letter.headers:
        print(f"header {shown_text(name)}: {shown_text(header.decode('utf-8', 'replace'))}")
    cut = "" if len(value) <= MAX_VALUE_CHARS else f" … ({len(value)} characters)"
    print(f"value: {shown_text(value[:MAX_VALUE_CHARS])}{cut}")
    return 0


def replay_command(args: argparse.Namespace) -> int:
    for name in args.names:
        _check_name(name)
    names = frozenset(args.names)
    selection = _selection(args, names)
    chosen = names or args.topic or args.tenant or args.reason or args.since or args.until
    if not chosen and not args.all:
        raise CliError(
            "name the dead letters to replay, or select them with --topic, --tenant, --reason, "
            "--since or --until (--all replays every one)"
        )
    if args.wait < 0:
        raise CliError("--wait must be 0 or more seconds")
    letters = _read(_topics(args, names), selection, args.limit)
    missing = sorted(names - {letter.name for letter in letters})
    for name in missing:
        print(f"no dead letter {shown_text(name)}", file=sys.stderr)
    erased = _erased(letters)
    withheld = [letter for letter in letters if erased.intersection(letter.named_tenants)]
    letters = [letter for letter in letters if letter not in withheld]
    for letter in withheld:
        gone = ", ".join(str(t) for t in letter.named_tenants if t in erased)
        print(
            f"not replayed {shown_text(letter.name)}: tenant {gone} was erased, so its"
            " dead letters are never published again (they leave the topic with its retention)",
            file=sys.stderr,
        )
    if args.dry_run:
        for letter in letters:
            print(f"would replay {_line(letter)}")
        print(
            f"replay: {len(letters)} would be replayed, {len(withheld)} refused (tenant erased)"
            " (dry run)"
        )
        return 0 if not withheld else 1
    try:
        result = asyncio.run(
            replay(KafkaSettings(), letters, again=args.again, wait_seconds=args.wait)
        )
    except Exception as error:  # the broker unreachable or refusing: one line, exit 1
        raise CliError(f"could not replay: {type(error).__name__}: {error}", 1) from None
    for name in result.replayed:
        print(f"replayed {shown_text(name)}")
    for letter in result.failed_again:
        origin = letter.header("mnemo-replay-of") or "?"
        print(f"failed again {shown_text(origin)}: {shown_text(letter.reason[:300])}")
    for refused in result.errors:
        print(f"not replayed {shown_text(refused[:300])}", file=sys.stderr)
    print(
        f"replay: {len(result.replayed)} replayed, {len(result.failed_again)} failed again within "
        f"{args.wait:g} s, {len(result.skipped)} skipped (replayed before; --again replays them), "
        f"{len(result.errors) + len(missing)} not found or not taken, {len(withheld)} refused"
        " (tenant erased)"
    )
    return 0 if not (result.failed_again or result.errors or missing or withheld) else 1


def _erased(letters: list[StoredDeadLetter]) -> frozenset[uuid.UUID]:
    """The tenants of `letters` that were erased (read as the owner role, only when a letter
    names a tenant): replaying their records would put their data on the topics again."""
    tenants = {tenant for letter in letters for tenant in letter.named_tenants}
    if not tenants:
        return frozenset()

    async def work(connection: asyncpg.Connection) -> frozenset[uuid.UUID]:
        return await erased_among(connection, tenants)

    return with_owner(work)
