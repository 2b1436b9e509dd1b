"""Retries: which failures are tried again, how long to wait, and the loop that does it on an injectable clock."""

from __future__ import annotations

import datetime as dt
import email.utils
import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from onellm.clock import Clock, SystemClock
from onellm.errors import OverloadedError, ProviderError, RateLimitError, TransportError

__all__ = ["RETRIED_STATUSES", "RetryPolicy", "parse_retry_after", "with_retries"]

RETRIED_STATUSES = frozenset({408, 429, 500, 502, 503, 504, 529})

T = TypeVar("T")


def parse_retry_after(headers: Mapping[str, str], *, now: dt.datetime) -> dt.timedelta | None:
    """The wait a response asks for: `retry-after-ms`, else `Retry-After` in seconds or as an HTTP date.

    Unreadable or negative values are ignored (None); a date in the past means no wait.
    """
    lowered = {k.lower(): v for k, v in headers.items()}
    milliseconds = lowered.get("retry-after-ms")
    if milliseconds is not None:
        try:
            value = float(milliseconds.strip())
        except ValueError:
            value = -1.0
        if value >= 0 and value == value and value != float("inf"):
            return dt.timedelta(milliseconds=value)
    header = lowered.get("retry-after")
    if header is None:
        return None
    header = header.strip()
    if header.isdigit():
        return dt.timedelta(seconds=int(header))
    try:
        seconds = float(header)
    except ValueError:
        pass
    else:
        return dt.timedelta(seconds=seconds) if 0 <= seconds < float("inf") else None
    try:
        when = email.utils.parsedate_to_datetime(header)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return max(dt.timedelta(0), when - now)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How a provider call is retried. Defaults: 2 retries, 500 ms base doubling per attempt, 30 s cap, up to 25 %
    added jitter, and a provider's `Retry-After` honoured up to 60 s (a longer one fails at once instead)."""

    max_retries: int = 2
    base_delay: float = 0.5
    max_delay: float = 30.0
    jitter: float = 0.25
    max_retry_after: float = 60.0

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError("max_retries must be 0 or more")
        if self.base_delay < 0 or self.max_delay < 0 or self.max_retry_after < 0:
            raise ValueError("delays must be 0 or more")
        if not 0 <= self.jitter <= 1:
            raise ValueError("jitter is a fraction between 0 and 1")

    @staticmethod
    def is_retryable(error: BaseException) -> bool:
        """Transport failures and the statuses 408, 429, 500, 502, 503, 504, 529; never a 429 for an exhausted quota."""
        if isinstance(error, RateLimitError) and error.quota_exhausted:
            return False
        if isinstance(error, TransportError):
            return True
        if isinstance(error, ProviderError):
            return error.status in RETRIED_STATUSES
        return False

    def backoff(self, retry: int, *, rand: Callable[[], float] = random.random) -> float:
        """Seconds to wait before retry number `retry` (0 for the first retry), jitter included."""
        delay = min(self.max_delay, self.base_delay * (2.0**retry))
        return delay + delay * self.jitter * rand()

    def delay(
        self, retry: int, retry_after: dt.timedelta | None, *, rand: Callable[[], float] = random.random
    ) -> float | None:
        """Seconds to wait before retry `retry`, or None when the call must not be retried (no retries left, or the
        provider asked for a longer wait than the policy accepts)."""
        if retry >= self.max_retries:
            return None
        wait = self.backoff(retry, rand=rand)
        if retry_after is not None:
            asked = retry_after.total_seconds()
            if asked > self.max_retry_after:
                return None
            wait = max(wait, asked)
        return wait


async def with_retries(
    attempt: Callable[[], Awaitable[T]],
    policy: RetryPolicy | None = None,
    *,
    clock: Clock | None = None,
    on_retry: Callable[[int, BaseException, float], None] | None = None,
    rand: Callable[[], float] = random.random,
) -> T:
    """Run `attempt` until it succeeds, fails for good, or the policy runs out; waits happen on `clock`.

    `on_retry(retry, error, seconds)` is told about each retry before its wait (for logging and records: every
    attempt's spend is the caller's to keep). Cancellation interrupts a wait at once.
    """
    policy = policy or RetryPolicy()
    clock = clock or SystemClock()
    retry = 0
    while True:
        try:
            return await attempt()
        except (ProviderError, TransportError) as error:
            if not policy.is_retryable(error):
                raise
            after = error.retry_after if isinstance(error, RateLimitError | OverloadedError) else None
            wait = policy.delay(retry, after, rand=rand)
            if wait is None:
                raise
            if on_retry is not None:
                on_retry(retry, error, wait)
            await clock.sleep(wait)
            retry += 1
