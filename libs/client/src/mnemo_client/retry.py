"""When to ask again: a 503 (the navigator's database is down for a moment) or a connection that
never reached the navigator is retried a bounded number of times, after exponential back-off with
full jitter (a random wait between 0 and the step's cap), or after the server's `Retry-After` when
it sends one (never longer than `max_delay`)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """`attempts` tries in all (1: never retry); the n-th wait is at most
    `min(max_delay, base_delay * 2**n)` seconds."""

    attempts: int = 4
    base_delay: float = 0.25
    max_delay: float = 4.0
    random: random.Random = field(default_factory=random.Random, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"attempts must be at least 1, got {self.attempts}")
        if self.base_delay < 0 or self.max_delay < 0:
            raise ValueError(
                f"delays must not be negative, got base_delay={self.base_delay}, "
                f"max_delay={self.max_delay}"
            )

    def delay(self, retry: int, retry_after: str | None = None) -> float:
        """The wait before retry number `retry` (0 for the first)."""
        if retry_after is not None:
            try:
                return min(max(float(retry_after), 0.0), self.max_delay)
            except ValueError:
                pass  # an HTTP date, or garbage: back off as if there were none
        cap = min(self.max_delay, self.base_delay * 2**retry)
        return self.random.uniform(0.0, cap)


NO_RETRY = RetryPolicy(attempts=1)
