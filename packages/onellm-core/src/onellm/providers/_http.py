"""The HTTP transport every provider shares.

One `httpx.AsyncClient` per runtime (or the caller's own, so tests and applications can route traffic), redirects never
followed (a redirect could carry a key to another host, so it is an error), a per-attempt timeout that runs until the
response headers arrive, failures mapped to typed errors with every key removed, and retries on the policy's terms. A
stream is retried only while nothing of it has reached the caller.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
import httpx
import msgspec

from onellm.clock import Clock, SystemClock
from onellm.errors import MalformedResponseError, ProviderError, Secret, TransportError
from onellm.providers._errors import error_from_status, redact
from onellm.providers._retry import RetryPolicy, parse_retry_after, with_retries

if TYPE_CHECKING:
    from types import TracebackType

__all__ = [
    "ErrorDetail",
    "HttpCall",
    "HttpTransport",
    "RawExchange",
    "base_url",
    "capturing_raw_exchange",
    "decode_json",
    "default_error_detail",
]

MAX_ERROR_BODY = 1024 * 1024


@dataclass(slots=True)
class RawExchange:
    """The request and response bodies of the last provider call sent while capturing (`capturing_raw_exchange`),
    with the call's secrets, so whoever keeps them can mask them. Headers are never kept."""

    request: bytes | None = None
    response: bytearray = field(default_factory=bytearray)
    secrets: tuple[Secret, ...] = ()


_RAW: ContextVar[RawExchange | None] = ContextVar("onellm_raw_exchange", default=None)


@contextmanager
def capturing_raw_exchange(exchange: RawExchange) -> Iterator[RawExchange]:
    """Keep the bodies of the calls sent in this context in `exchange` (for `rawTurn` records)."""
    token = _RAW.set(exchange)
    try:
        yield exchange
    finally:
        _RAW.reset(token)


def _capture_request(call: HttpCall) -> RawExchange | None:
    raw = _RAW.get()
    if raw is not None:
        raw.request = call.body
        raw.secrets = call.secrets
        raw.response.clear()
    return raw


@dataclass(frozen=True, slots=True)
class ErrorDetail:
    """What a provider's error body says: its message and its machine-readable code or type."""

    message: str
    code: str | None = None


def default_error_detail(body: bytes) -> ErrorDetail | None:
    """Read the common error shapes: `{"error": {"message", "code"|"type"|"status"}}` (OpenAI, Gemini) and
    `{"type": "error", "error": {"type", "message"}}` (Anthropic). None when the body is not one of them."""
    try:
        data = msgspec.json.decode(body)
    except msgspec.DecodeError:
        return None
    if isinstance(data, list) and data and isinstance(data[0], dict):
        data = data[0]  # some gateways wrap the error in a list
    if not isinstance(data, dict):
        return None
    error = data.get("error")
    if isinstance(error, str):
        return ErrorDetail(error)
    if not isinstance(error, dict):
        message = data.get("message")
        return ErrorDetail(message) if isinstance(message, str) else None
    message = error.get("message")
    code = error.get("code")
    if not isinstance(code, str):
        code = error.get("type") if isinstance(error.get("type"), str) else error.get("status")
    return ErrorDetail(
        message if isinstance(message, str) else "",
        code if isinstance(code, str) else None,
    )


@dataclass(slots=True)
class HttpCall:
    """One request to a provider: what to send and how to read a failure."""

    method: str
    url: str
    provider: str
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes | None = None
    secrets: tuple[Secret, ...] = ()
    error_detail: Callable[[bytes], ErrorDetail | None] = default_error_detail
    classify: Callable[[ProviderError, ErrorDetail | None], ProviderError] | None = None
    """A codec's last word on a failure, for causes only its provider reports (e.g. a key error sent as a 400)."""


def base_url(default: str, *, variable: str | None = None, configured: str | None = None) -> str:
    """The base URL to use: the catalog's `baseUrl` when set, else the SDK-compatible variable (`OPENAI_BASE_URL`,
    `ANTHROPIC_BASE_URL`, ...) when set and not empty, else the provider's default. Never ends in a slash."""
    chosen = configured or (os.environ.get(variable) if variable else None) or default
    return chosen.rstrip("/")


class HttpTransport:
    """Sends provider calls. Close with `aclose()` or use `async with`; a client passed in is the caller's to close."""

    def __init__(
        self,
        client: httpx.AsyncClient | None = None,
        *,
        retry: RetryPolicy | None = None,
        clock: Clock | None = None,
        header_timeout: float = 600.0,
        connect_timeout: float = 10.0,
    ) -> None:
        self._owns_client = client is None
        self._client = client or httpx.AsyncClient(
            follow_redirects=False,
            timeout=httpx.Timeout(header_timeout, connect=connect_timeout),
            limits=httpx.Limits(max_connections=100, max_keepalive_connections=20),
        )
        self.retry = retry or RetryPolicy()
        self.clock = clock or SystemClock()
        self.header_timeout = header_timeout

    @property
    def client(self) -> httpx.AsyncClient:
        return self._client

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.aclose()

    async def __aenter__(self) -> HttpTransport:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        await self.aclose()

    async def send(self, call: HttpCall) -> httpx.Response:
        """Send a call and read the whole answer; retried on the policy's terms. Returns a 2xx response, body read."""

        async def attempt() -> httpx.Response:
            response = await self._open(call)
            try:
                await response.aread()
            except httpx.HTTPError as error:
                raise self._transport_error(call, error) from error
            finally:
                await response.aclose()
            return response

        response = await with_retries(attempt, self.retry, clock=self.clock)
        raw = _capture_request(call)
        if raw is not None:
            raw.response += response.content
        return response

    @asynccontextmanager
    async def stream(self, call: HttpCall) -> AsyncIterator[httpx.Response]:
        """Open a streamed call: retried until a 2xx response arrives, then handed over and never retried again."""
        response = await with_retries(lambda: self._open(call), self.retry, clock=self.clock)
        _capture_request(call)
        try:
            yield response
        except httpx.HTTPError as error:
            raise self._transport_error(call, error) from error
        finally:
            await response.aclose()

    async def aiter_bytes(self, call: HttpCall, response: httpx.Response) -> AsyncIterator[bytes]:
        """The raw body of a streamed response, with transport failures typed."""
        raw = _RAW.get()
        try:
            try:
                body = response.content
            except httpx.ResponseNotRead:
                pass
            else:
                if raw is not None:
                    raw.response += body
                yield body
                return
            async for chunk in response.aiter_raw():
                if raw is not None:
                    raw.response += chunk
                yield chunk
        except httpx.HTTPError as error:
            raise self._transport_error(call, error) from error

    async def _open(self, call: HttpCall) -> httpx.Response:
        request = self._client.build_request(call.method, call.url, headers=dict(call.headers), content=call.body)
        try:
            with anyio.fail_after(self.header_timeout):
                response = await self._client.send(request, stream=True, follow_redirects=False)
        except TimeoutError as error:
            raise TransportError(
                f"no response headers within {self.header_timeout:g} s", provider=call.provider
            ) from error
        except httpx.HTTPError as error:
            raise self._transport_error(call, error) from error
        if response.status_code < 300:
            return response
        try:
            raise await self._failure(call, response)
        finally:
            await response.aclose()

    async def _failure(self, call: HttpCall, response: httpx.Response) -> ProviderError:
        status = response.status_code
        request_id = response.headers.get("x-request-id") or response.headers.get("request-id")
        if 300 <= status < 400:
            return ProviderError(
                f"the provider answered with a redirect (to {response.headers.get('location', 'nowhere')!r}); "
                "provider calls never follow redirects",
                provider=call.provider,
                status=status,
                request_id=request_id,
            )
        body = await self._read_bounded(call, response)
        detail = call.error_detail(body) if body else None
        text = body.decode("utf-8", errors="replace")
        message = (detail.message if detail and detail.message else text.strip()[:500]) or f"HTTP {status}"
        error = error_from_status(
            status,
            message,
            provider=call.provider,
            body=text,
            code=detail.code if detail else None,
            retry_after=parse_retry_after(response.headers, now=self.clock.now()),
            request_id=request_id,
            secrets=call.secrets,
        )
        if call.classify is not None:
            error = call.classify(error, detail)
        return error

    async def _read_bounded(self, call: HttpCall, response: httpx.Response) -> bytes:
        try:
            return response.content[:MAX_ERROR_BODY]  # already read (a transport that buffers)
        except httpx.ResponseNotRead:
            pass
        chunks: list[bytes] = []
        size = 0
        try:
            async for chunk in response.aiter_raw():
                size += len(chunk)
                if size > MAX_ERROR_BODY:
                    break
                chunks.append(chunk)
        except httpx.HTTPError:
            pass  # the status says enough; a broken error body is not a second failure
        return b"".join(chunks)

    @staticmethod
    def _transport_error(call: HttpCall, error: httpx.HTTPError) -> TransportError:
        kind = type(error).__name__
        return TransportError(redact(f"{kind}: {error}" if str(error) else kind, call.secrets), provider=call.provider)


def decode_json(data: bytes, *, provider: str, what: str = "response") -> Any:
    """Decode a JSON body, or fail with `MalformedResponseError` naming the provider."""
    try:
        return msgspec.json.decode(data)
    except msgspec.DecodeError as error:
        raise MalformedResponseError(f"the {what} is not valid JSON: {error}", provider=provider) from error
