"""Every provider error is built and cleaned here.

From an HTTP failure to the typed error (`error_from_status`): the status decides first, then causes only the body
reports. And the one rule that makes a leaked key impossible to forget (`scrub`): every error that leaves a provider
call passes through it with the call's secrets, which removes each secret, in every form a server may echo it (as
sent, JSON-escaped, percent-encoded), from the error's message, body, arguments, notes and every attribute that holds
text, and from the errors it was raised from. Providers apply it at their boundary, so an error a codec builds from
a streamed error event, a `status: failed` body or a redirect's `Location` is cleaned like any other. A provider
error also leaves without the frames it was raised through (`clean`), so an error tracker that records local
variables does not find the server's echo of a key in a decoder's buffer.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote, quote_plus

import msgspec

from onellm.errors import (
    AuthError,
    BadRequestError,
    ContentFilterError,
    ContextOverflowError,
    OnellmError,
    OverloadedError,
    ProviderError,
    RateLimitError,
    Secret,
    SpendLimitReachedError,
)

__all__ = ["Redactor", "clean", "error_from_status", "redact", "scrub"]

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


_MASK = "****"


def _forms(value: str) -> set[str]:
    """The spellings of a secret a server may echo: as sent, JSON-escaped, and percent-encoded."""
    forms = {value, quote(value, safe=""), quote(value), quote_plus(value)}
    forms.add(msgspec.json.encode(value).decode("utf-8")[1:-1])
    forms.add(msgspec.json.encode(value).decode("utf-8")[1:-1].replace("/", "\\/"))
    return {form for form in forms if form}


class Redactor:
    """Removes the secrets of one call from text, in every form `_forms` lists (longest first, so no form is left
    half-masked by a shorter one)."""

    __slots__ = ("_forms",)

    def __init__(self, secrets: Iterable[Secret | str]) -> None:
        found: set[str] = set()
        for secret in secrets:
            value = secret.reveal() if isinstance(secret, Secret) else secret
            if value:
                found |= _forms(value)
        self._forms = tuple(sorted(found, key=len, reverse=True))

    def __bool__(self) -> bool:
        return bool(self._forms)

    def __repr__(self) -> str:
        return f"Redactor({len(self._forms)} forms)"

    def __call__(self, text: str) -> str:
        for form in self._forms:
            if form in text:
                text = text.replace(form, _MASK)
        return text


def redact(text: str, secrets: Iterable[Secret | str]) -> str:
    """`text` without any form of any of `secrets`."""
    return Redactor(secrets)(text)


def _clean(value: Any, redactor: Redactor) -> Any:
    if isinstance(value, str):
        return redactor(value)
    if isinstance(value, bytes | bytearray):
        text = bytes(value).decode("utf-8", "replace")
        cleaned = redactor(text)
        return cleaned.encode("utf-8") if cleaned != text else value
    return value


def scrub(error: BaseException, secrets: Iterable[Secret | str] | Redactor) -> BaseException:
    """Remove every form of every secret from `error` in place: its arguments, notes and text attributes (`message`,
    `body`, ...), and the same for each error in its `__cause__` and `__context__` chain and inside exception groups.
    Returns `error`."""
    redactor = secrets if isinstance(secrets, Redactor) else Redactor(secrets)
    if not redactor:
        return error
    pending = [error]
    seen: set[int] = set()
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        with contextlib.suppress(AttributeError, TypeError):  # an exception type that will not take new arguments
            current.args = tuple(_clean(arg, redactor) for arg in current.args)
        notes = getattr(current, "__notes__", None)
        if isinstance(notes, list):
            notes[:] = [_clean(note, redactor) for note in notes]
        attributes = getattr(current, "__dict__", None)
        if isinstance(attributes, dict):
            for name, value in list(attributes.items()):
                if isinstance(value, str | bytes | bytearray):
                    cleaned = _clean(value, redactor)
                    if cleaned is not value:
                        with contextlib.suppress(AttributeError):  # a read-only property of the exception's type
                            setattr(current, name, cleaned)
        pending.extend(linked for linked in (current.__cause__, current.__context__) if linked is not None)
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
    return error


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


def clean(error: BaseException, secrets: Iterable[Secret | str] | Redactor) -> BaseException:
    """`scrub` the error; a provider error (`OnellmError`) also drops the frames it and the errors it was raised from
    passed through, so it starts again where it is re-raised. Other errors (bugs) keep their frames. Returns
    `error`, to be raised again."""
    scrub(error, secrets)
    if isinstance(error, OnellmError):
        pending: list[BaseException] = [error]
        seen: set[int] = set()
        while pending:
            current = pending.pop()
            if id(current) in seen:
                continue
            seen.add(id(current))
            current.__traceback__ = None
            pending.extend(linked for linked in (current.__cause__, current.__context__) if linked is not None)
    return error
