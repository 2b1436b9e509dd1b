"""From an HTTP failure to the typed error: the status decides first, then causes only the body reports."""

from __future__ import annotations

import datetime as dt
from typing import Any

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
)

__all__ = ["error_from_status", "redact"]

_CONTEXT_OVERFLOW = (
    "context_length_exceeded",
    "maximum context length",
    "context window",
    "prompt is too long",
    "input is too long",
    "exceeds the maximum number of tokens",
    "input token count",
    "too many tokens",
)
_CONTENT_FILTER = ("content_filter", "content_policy_violation", "content management policy", "safety")
_SPEND_LIMIT = "you have reached your specified api usage limits"
_QUOTA_EXHAUSTED = ("insufficient_quota", "exceeded your current quota", "billing")


def redact(text: str, secrets: tuple[Secret, ...]) -> str:
    for secret in secrets:
        text = secret.redact(text)
    return text


def error_from_status(
    status: int,
    message: str,
    *,
    provider: str,
    body: str | None = None,
    code: str | None = None,
    retry_after: dt.timedelta | None = None,
    request_id: str | None = None,
    secrets: tuple[Secret, ...] = (),
) -> ProviderError:
    """The typed error for an HTTP failure. `message` and `code` come from the provider's error body when it has one.

    Status decides the family (401/403 auth, 429 rate, 503/529 overloaded, 400/404/409/413/422 bad request); the body
    then names causes a status cannot: a context overflow or content filter arriving as a plain 400, Anthropic's
    account spend limit, and a 429 that means an exhausted quota (never retried). Keys in `secrets` are removed from
    every text the error carries.
    """
    message = redact(message, secrets) or f"HTTP {status}"
    body = redact(body, secrets) if body is not None else None
    haystack = f"{code or ''} {message}".lower()

    def make(kind: type[ProviderError], **extra: Any) -> ProviderError:
        return kind(message, provider=provider, status=status, body=body, request_id=request_id, **extra)

    if status in (401, 403):
        return make(AuthError)
    if status == 429:
        exhausted = any(marker in haystack for marker in _QUOTA_EXHAUSTED)
        return make(RateLimitError, retry_after=retry_after, quota_exhausted=exhausted)
    if status in (503, 529):
        return make(OverloadedError, retry_after=retry_after)
    if status in (400, 404, 409, 413, 422):
        if haystack.strip().startswith(_SPEND_LIMIT) or message.lower().startswith(_SPEND_LIMIT):
            return make(SpendLimitReachedError)
        if status in (400, 413, 422) and any(marker in haystack for marker in _CONTEXT_OVERFLOW):
            return make(ContextOverflowError)
        if status == 400 and any(marker in haystack for marker in _CONTENT_FILTER):
            return make(ContentFilterError)
        return make(BadRequestError)
    return make(ProviderError)
