from __future__ import annotations

import datetime as dt

import anyio
import pytest

from onellm.clock import FakeClock
from onellm.errors import (
    AuthError,
    BadRequestError,
    ContentFilterError,
    ContextOverflowError,
    OverloadedError,
    ProviderError,
    RateLimitError,
    Secret,
    SpendLimitReachedError,
    TransportError,
)
from onellm.providers import RetryPolicy, parse_retry_after, with_retries
from onellm.providers._errors import error_from_status

NOW = dt.datetime(2026, 11, 5, 12, 0, 0, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"Retry-After": "7"}, dt.timedelta(seconds=7)),
        ({"retry-after": "1.5"}, dt.timedelta(seconds=1.5)),
        ({"Retry-After": "Thu, 05 Nov 2026 12:00:30 GMT"}, dt.timedelta(seconds=30)),
        ({"Retry-After": "Thu, 05 Nov 2026 11:59:00 GMT"}, dt.timedelta(0)),
        ({"retry-after-ms": "250", "Retry-After": "9"}, dt.timedelta(milliseconds=250)),
        ({"retry-after-ms": "soon", "Retry-After": "9"}, dt.timedelta(seconds=9)),
        ({"Retry-After": "tomorrow"}, None),
        ({"Retry-After": "-3"}, None),
        ({}, None),
    ],
)
def test_parse_retry_after(headers: dict[str, str], expected: dt.timedelta | None) -> None:
    assert parse_retry_after(headers, now=NOW) == expected


def test_backoff_doubles_from_the_base_up_to_the_cap_plus_jitter() -> None:
    policy = RetryPolicy(max_retries=10)
    assert [policy.backoff(n, rand=lambda: 0.0) for n in range(8)] == [0.5, 1, 2, 4, 8, 16, 30, 30]
    assert policy.backoff(0, rand=lambda: 1.0) == 0.625  # 25 % jitter at most


def test_delay_uses_a_longer_retry_after_and_refuses_one_beyond_the_limit() -> None:
    policy = RetryPolicy()
    assert policy.delay(0, dt.timedelta(seconds=10), rand=lambda: 0.0) == 10
    assert policy.delay(0, dt.timedelta(seconds=0.1), rand=lambda: 0.0) == 0.5
    assert policy.delay(0, dt.timedelta(seconds=61), rand=lambda: 0.0) is None
    assert policy.delay(2, None) is None  # two retries, then no more


@pytest.mark.parametrize(
    ("error", "retried"),
    [
        (ProviderError("x", status=408), True),
        (RateLimitError("x", status=429), True),
        (ProviderError("x", status=500), True),
        (ProviderError("x", status=502), True),
        (OverloadedError("x", status=503), True),
        (ProviderError("x", status=504), True),
        (OverloadedError("x", status=529), True),
        (TransportError("connection reset"), True),
        (RateLimitError("x", status=429, quota_exhausted=True), False),
        (BadRequestError("x", status=400), False),
        (AuthError("x", status=401), False),
        (ProviderError("x", status=418), False),
        (SpendLimitReachedError("x", status=400), False),
    ],
)
def test_which_failures_are_retried(error: ProviderError, retried: bool) -> None:
    assert RetryPolicy.is_retryable(error) is retried


def test_with_retries_waits_on_the_clock_and_succeeds() -> None:
    clock = FakeClock(NOW)
    calls: list[int] = []

    async def attempt() -> str:
        calls.append(1)
        if len(calls) == 1:
            raise RateLimitError("busy", status=429, retry_after=dt.timedelta(seconds=3))
        if len(calls) == 2:
            raise TransportError("reset")
        return "ok"

    result = anyio.run(lambda: with_retries(attempt, clock=clock, rand=lambda: 0.0))
    assert result == "ok"
    assert clock.sleeps == [3.0, 1.0]
    assert clock.now() == NOW + dt.timedelta(seconds=4)


def test_with_retries_gives_up_after_the_last_retry() -> None:
    clock = FakeClock(NOW)
    seen: list[tuple[int, float]] = []

    async def attempt() -> str:
        raise OverloadedError("overloaded", status=529)

    with pytest.raises(OverloadedError):
        anyio.run(
            lambda: with_retries(attempt, clock=clock, rand=lambda: 0.0, on_retry=lambda n, e, s: seen.append((n, s)))
        )
    assert seen == [(0, 0.5), (1, 1.0)]


def test_with_retries_returns_a_too_long_retry_after_at_once() -> None:
    clock = FakeClock(NOW)

    async def attempt() -> str:
        raise RateLimitError("later", status=429, retry_after=dt.timedelta(seconds=600))

    with pytest.raises(RateLimitError):
        anyio.run(lambda: with_retries(attempt, clock=clock))
    assert clock.sleeps == []


def test_with_retries_never_retries_a_bad_request() -> None:
    count = 0

    async def attempt() -> str:
        nonlocal count
        count += 1
        raise BadRequestError("bad", status=400)

    with pytest.raises(BadRequestError):
        anyio.run(lambda: with_retries(attempt, clock=FakeClock()))
    assert count == 1


def test_cancellation_ends_a_wait_at_once() -> None:
    async def attempt() -> str:
        raise OverloadedError("overloaded", status=503, retry_after=dt.timedelta(seconds=50))

    async def main() -> float:
        started = anyio.current_time()
        with anyio.move_on_after(0.05):
            await with_retries(attempt)
        return anyio.current_time() - started

    assert anyio.run(main) < 5


@pytest.mark.parametrize(
    ("status", "message", "code", "kind"),
    [
        (401, "invalid x-api-key", None, AuthError),
        (403, "not allowed", None, AuthError),
        (429, "rate limited", None, RateLimitError),
        (503, "busy", None, OverloadedError),
        (529, "Overloaded", None, OverloadedError),
        (400, "bad field", None, BadRequestError),
        (404, "no such model", None, BadRequestError),
        (409, "conflict", None, BadRequestError),
        (413, "too large", None, BadRequestError),
        (422, "unprocessable", None, BadRequestError),
        (400, "This model's maximum context length is 128000 tokens", "context_length_exceeded", ContextOverflowError),
        (400, "prompt is too long: 210000 tokens > 200000 maximum", None, ContextOverflowError),
        (400, "flagged", "content_filter", ContentFilterError),
        (
            400,
            "You have reached your specified API usage limits. You will regain access on 2026-12-01",
            None,
            SpendLimitReachedError,
        ),
        (500, "internal", None, ProviderError),
    ],
)
def test_error_from_status(status: int, message: str, code: str | None, kind: type[ProviderError]) -> None:
    error = error_from_status(status, message, provider="p", code=code)
    assert type(error) is kind
    assert (error.provider, error.status) == ("p", status)


def test_quota_exhausted_429_is_marked() -> None:
    error = error_from_status(429, "You exceeded your current quota", provider="openai", code="insufficient_quota")
    assert isinstance(error, RateLimitError)
    assert error.quota_exhausted


def test_keys_never_appear_in_error_texts() -> None:
    key = Secret("sk-test-0123456789abcdef")
    error = error_from_status(
        401,
        "Incorrect API key provided: sk-test-0123456789abcdef",
        provider="openai",
        body='{"error":{"message":"Incorrect API key provided: sk-test-0123456789abcdef"}}',
        secrets=(key,),
    )
    for text in (str(error), repr(error), error.message, error.body or "", str(error.args)):
        assert "sk-test-0123456789abcdef" not in text
