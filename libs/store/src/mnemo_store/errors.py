"""The errors of the storage layer: each says what was wrong and what would be right."""

from __future__ import annotations


class StoreError(Exception):
    """Base of every error raised by mnemo_store."""


class TenantTransactionClosedError(StoreError):
    """A tenant unit of work was used after its `async with` block ended."""

    def __init__(self) -> None:
        super().__init__(
            "this tenant transaction has ended: open a new one with `async with store.tenant(id)`"
        )


class NotAStoreCorpusError(StoreError):
    """A corpus that is not store-sourced (form (d)) was asked for store rows."""


class UnknownStoreError(StoreError):
    """A store name that the declarations do not define."""


class InvalidValueError(StoreError, ValueError):
    """A row naming a column its store does not declare, a value Postgres cannot take for its
    column (or an outbox payload it cannot store); the message names the store, row and column,
    the value, and what the column takes."""


class RowLimitExceededError(StoreError):
    """A graph load met more rows than the configured limit allows, and the policy is to fail."""

    def __init__(self, corpus: str, what: str, limit: int) -> None:
        super().__init__(
            f"corpus {corpus!r}: more than {limit} {what} in scope; narrow the `where:` scope, raise "
            "the row limit, or load with on_limit='flag' to accept a truncated graph"
        )
        self.corpus = corpus
        self.what = what
        self.limit = limit


class LockTimeoutError(StoreError):
    """`mnemo apply` waited its lock timeout for a lock and changed nothing; names who held it."""

    def __init__(self, seconds: float, holders: list[str]) -> None:
        if holders:
            who = "; ".join(holders)
            pids = ", ".join(holder.split(",")[0].removeprefix("pid ") for holder in holders)
            advice = (
                f"held by {who}. Retry when that transaction ends, or end it with "
                f"SELECT pg_terminate_backend(pid) for pid {pids}"
            )
        else:
            advice = "the transaction that held it has ended since: retry"
        super().__init__(
            f"apply waited {seconds:g} s for a lock and changed nothing (so it does not queue the "
            f"stores' readers behind it); {advice}"
        )
        self.seconds = seconds
        self.holders = tuple(holders)


class DestructiveChangeError(StoreError):
    """`mnemo apply` would need a destructive change; nothing was applied."""

    def __init__(self, changes: tuple[str, ...]) -> None:
        listing = "\n".join(f"  {change}" for change in changes)
        super().__init__(
            "refusing a destructive change to existing stores (apply makes additive changes only); "
            f"an operator would have to run:\n{listing}"
        )
        self.changes = changes


class UnknownTenantError(StoreError):
    """A tenant id that is not a row of mnemo.tenants."""


class DuplicateTenantError(StoreError):
    """A tenant name that is already taken (names are unique ignoring case)."""


class InvalidTenantNameError(StoreError, ValueError):
    """A tenant name that breaks the rule `mnemo_store.registry.TENANT_NAME_PATTERN` states."""


class UnknownCorpusError(StoreError):
    """A corpus id that is not in the registry."""


class CorpusStatusError(StoreError):
    """A lifecycle transition the registry does not allow (e.g. publishing a deprecated corpus)."""


class CorpusInUseError(CorpusStatusError):
    """Deprecating a corpus that active routes still scope (their lint would then fail)."""

    def __init__(self, corpus_id: str, routes: tuple[str, ...]) -> None:
        super().__init__(
            f"corpus {corpus_id!r} is in the scope of active route"
            f"{'s' if len(routes) != 1 else ''} {', '.join(routes)}; deprecating it would make "
            f"{'them' if len(routes) != 1 else 'it'} fail lint (corpus not published): take it out "
            "of their scope or deactivate them first, or deprecate with --force"
        )
        self.corpus_id = corpus_id
        self.routes = routes


class InvalidRouteError(StoreError, ValueError):
    """A route document that is not a list of well-formed routes; the message says what is wrong
    and where. Nothing was written."""


class RouteLintError(StoreError):
    """Routes whose scope names a corpus that does not exist or is not published (CORPUS.md A);
    `findings` names route, version and corpus for each. Nothing was written."""

    def __init__(self, findings: list[str]) -> None:
        super().__init__("route lint failed, nothing was written: " + "; ".join(findings))
        self.findings = tuple(findings)


class DeclarationRuleError(StoreError, ValueError):
    """The IR breaks a rule of `mnemo_axon.rules` (a reserved column, a name Postgres could generate
    for another store, too many columns, a corpus id too long); nothing was planned. The checker
    reports the same rules, so this only happens to an IR that did not come through it."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = tuple(problems)


# The name this error had when its only rule was the reserved column prefix.
ReservedColumnError = DeclarationRuleError
