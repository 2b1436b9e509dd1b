"""The HTTP transport every provider shares.

One `httpx.AsyncClient` per event loop, held by a `ClientPool` that a runtime shares between its providers (or the
caller's own client, so tests and applications can route traffic); redirects never followed (a redirect could carry a
key to another host, so it is an error); a per-attempt timeout that runs until the response headers arrive; failures
mapped to typed errors with every key removed; retries on the policy's terms. A stream is retried only while nothing of
it has reached the caller.

An `httpx.AsyncClient` belongs to the event loop that first used it: its connections and locks cannot be used from
another loop. A pool therefore keeps one client per running loop (a thread that runs its own loop, each
`asyncio.run`), made on first use there and closed with the pool.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import httpx
import msgspec

from onellm._public import publish as _publish
from onellm.clock import Clock, SystemClock
from onellm.errors import MalformedResponseError, ProviderError, Secret, TransportError
from onellm.providers._errors import Redactor, error_from_status, scrub
from onellm.providers._retry import RetryPolicy, parse_retry_after, with_retries

if TYPE_CHECKING:
    from types import TracebackType

__all__ = [
    "MIN_SECRET_LENGTH",
    "Authorizer",
    "ClientPool",
    "ErrorDetail",
    "Grant",
    "HttpCall",
    "HttpTransport",
    "RawExchange",
    "capturing_raw_exchange",
    "decode_json",
    "default_error_detail",
    "is_sensitive_header",
]

T = TypeVar("T")

_log = logging.getLogger("onellm.providers")

MAX_ERROR_BODY = 1024 * 1024
MIN_SECRET_LENGTH = 8
"""A credential header's value shorter than this is not treated as a secret (masking every `1` in a message would hide
more than it protects); a provider's key always is."""

_SENSITIVE_WORDS = ("auth", "key", "token", "secret", "cookie", "signature", "credential", "password")


def is_sensitive_header(name: str) -> bool:
    """Whether a header's value is a credential (`authorization`, `x-api-key`, `x-goog-api-key`, cookies, tokens, ...):
    its value is masked in every repr and removed from every error."""
    lowered = name.lower()
    return any(word in lowered for word in _SENSITIVE_WORDS)


class Headers(dict[str, str]):
    """Request headers whose repr masks credentials, so a traceback that shows local variables never shows a key."""

    __slots__ = ()

    def __repr__(self) -> str:
        shown = {name: "****" if is_sensitive_header(name) else value for name, value in self.items()}
        return f"Headers({shown!r})"


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
    except (msgspec.DecodeError, RecursionError):
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


@dataclass(frozen=True, slots=True, repr=False)
class Grant:
    """What authorizes one attempt of a call (a deployment's signature or fresh access token): the headers to add and
    the secrets they carry, which join the call's secrets so no error shows them."""

    headers: Mapping[str, str]
    secrets: tuple[Secret, ...] = ()

    def __repr__(self) -> str:
        return f"Grant(headers={sorted(self.headers)!r})"


Authorizer = Callable[["HttpCall", "HttpTransport"], Awaitable[Grant]]
"""Called before each attempt of a call, with the transport that sends it (whose clock, retries and clients a token
exchange may use): the `Grant` for that attempt."""


@dataclass(slots=True, repr=False)
class HttpCall:
    """One request to a provider: what to send and how to read a failure. Its repr names the headers without their
    values and masks every secret in the URL."""

    method: str
    url: str
    provider: str
    headers: Mapping[str, str] = field(default_factory=Headers)
    body: bytes | None = None
    secrets: tuple[Secret, ...] = ()
    error_detail: Callable[[bytes], ErrorDetail | None] = default_error_detail
    classify: Callable[[ProviderError, ErrorDetail | None], ProviderError] | None = None
    """A codec's last word on a failure, for causes only its provider reports (e.g. a key error sent as a 400)."""
    authorize: Authorizer | None = None
    """Signs or authorizes each attempt (a deployment's SigV4 signature or bearer token), just before it is sent."""

    def __post_init__(self) -> None:
        if not isinstance(self.headers, Headers):
            self.headers = Headers(self.headers)
        sensitive = tuple(
            Secret(value)
            for name, value in self.headers.items()
            if len(value) >= MIN_SECRET_LENGTH and is_sensitive_header(name)
        )
        if sensitive:
            self.secrets = (*self.secrets, *(s for s in sensitive if s not in self.secrets))

    def __repr__(self) -> str:
        url = Redactor(self.secrets)(self.url)
        return f"HttpCall({self.method} {url}, provider={self.provider!r}, headers={sorted(self.headers)!r})"

    @property
    def redactor(self) -> Redactor:
        """Removes this call's secrets from text."""
        return Redactor(self.secrets)

    def keep_secrets(self, secrets: tuple[Secret, ...]) -> None:
        """Add secrets learnt while sending (a fresh token) to those removed from this call's errors."""
        new = tuple(secret for secret in secrets if secret and secret not in self.secrets)
        if new:
            self.secrets = (*self.secrets, *new)


# -- clients ---------------------------------------------------------------------------------------------------------


def _running_loop() -> Any:
    """The event loop this code runs on: the asyncio loop, or trio's token under trio."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        pass
    trio = sys.modules.get("trio")
    if trio is not None:
        try:
            return trio.lowlevel.current_trio_token()
        except RuntimeError:
            pass
    raise RuntimeError("a provider call needs a running event loop (await it inside async code)")


def _reference(loop: Any) -> Callable[[], Any]:
    try:
        return weakref.ref(loop)
    except TypeError:  # a token that takes no weak reference: held for the pool's life
        return lambda: loop


def _loop_closed(loop: Any) -> bool:
    closed = getattr(loop, "is_closed", None)
    return bool(closed()) if callable(closed) else False


class ClientPool:
    """One `httpx.AsyncClient` per event loop, made on first use on that loop, for every provider that shares the pool
    (a runtime's providers share one). `client` given: that client, for every loop, and the caller closes it.

    Clients follow no redirects and keep up to 20 idle connections (100 in all) per loop.
    """

    __slots__ = ("_clients", "_given", "_lock", "connect_timeout", "max_connections", "max_keepalive")

    def __init__(
        self,
        client: httpx.AsyncClient | None = None,
        *,
        connect_timeout: float = 10.0,
        max_connections: int = 100,
        max_keepalive: int = 20,
    ) -> None:
        self._given = client
        self._clients: dict[int, tuple[Callable[[], Any], httpx.AsyncClient]] = {}
        self._lock = threading.Lock()
        self.connect_timeout = connect_timeout
        self.max_connections = max_connections
        self.max_keepalive = max_keepalive

    def __repr__(self) -> str:
        return "ClientPool(given client)" if self._given is not None else f"ClientPool({len(self._clients)} loops)"

    @property
    def given(self) -> httpx.AsyncClient | None:
        """The caller's own client, when one was given."""
        return self._given

    def get(self) -> httpx.AsyncClient:
        """The client for the running event loop."""
        if self._given is not None:
            return self._given
        loop = _running_loop()
        entry = self._clients.get(id(loop))
        if entry is not None and entry[0]() is loop:
            return entry[1]
        with self._lock:
            entry = self._clients.get(id(loop))
            if entry is not None and entry[0]() is loop:
                return entry[1]
            self._prune()
            client = httpx.AsyncClient(
                follow_redirects=False,
                timeout=httpx.Timeout(600.0, connect=self.connect_timeout),
                limits=httpx.Limits(max_connections=self.max_connections, max_keepalive_connections=self.max_keepalive),
            )
            self._clients[id(loop)] = (_reference(loop), client)
            return client

    def _prune(self) -> None:
        """Forget the clients of loops that are gone or closed (their connections went with the loop)."""
        for key, (ref, _client) in list(self._clients.items()):
            loop = ref()
            if loop is None or _loop_closed(loop):
                del self._clients[key]

    async def aclose(self) -> None:
        """Close the clients this pool made: the running loop's here, another running loop's on that loop; those of
        loops that are gone or idle are forgotten. A given client is the caller's to close."""
        if self._given is not None:
            return
        with self._lock:
            entries = list(self._clients.values())
            self._clients.clear()
        try:
            current = _running_loop()
        except RuntimeError:
            current = None
        for ref, client in entries:
            loop = ref()
            if loop is current:
                await client.aclose()
            elif isinstance(loop, asyncio.AbstractEventLoop) and loop.is_running() and not loop.is_closed():
                asyncio.run_coroutine_threadsafe(client.aclose(), loop)


# -- the transport ---------------------------------------------------------------------------------------------------


class HttpTransport:
    """Sends provider calls. Close with `aclose()` or use `async with`; a client or pool passed in is the caller's
    to close.

    `header_timeout` bounds each attempt until its response headers arrive. A stream ends in a `TransportError` when
    no event arrived for `stream_idle_timeout` seconds (comments and partial events do not count) or when it ran longer
    than `stream_timeout` seconds; None turns a bound off.
    """

    def __init__(
        self,
        client: httpx.AsyncClient | ClientPool | None = None,
        *,
        retry: RetryPolicy | None = None,
        clock: Clock | None = None,
        header_timeout: float = 600.0,
        connect_timeout: float = 10.0,
        stream_timeout: float | None = 3600.0,
        stream_idle_timeout: float | None = 600.0,
    ) -> None:
        for name, value in (
            ("header_timeout", header_timeout),
            ("connect_timeout", connect_timeout),
            ("stream_timeout", stream_timeout),
            ("stream_idle_timeout", stream_idle_timeout),
        ):
            if value is not None and not value > 0:
                raise ValueError(f"{name} must be more than 0 seconds")
        self._owns_pool = not isinstance(client, ClientPool)
        self._pool = client if isinstance(client, ClientPool) else ClientPool(client, connect_timeout=connect_timeout)
        self.retry = retry or RetryPolicy()
        self.clock = clock or SystemClock()
        self.header_timeout = header_timeout
        self.connect_timeout = connect_timeout
        self.stream_timeout = stream_timeout
        self.stream_idle_timeout = stream_idle_timeout
        self._timeout = httpx.Timeout(header_timeout, connect=connect_timeout)

    def __repr__(self) -> str:
        return f"HttpTransport({self._pool!r})"

    @property
    def client(self) -> httpx.AsyncClient:
        """The client for the running event loop."""
        return self._pool.get()

    @property
    def pool(self) -> ClientPool:
        return self._pool

    async def aclose(self) -> None:
        if self._owns_pool:
            await self._pool.aclose()

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
            failure: TransportError | None = None
            try:
                await response.aread()
            except httpx.HTTPError as error:
                failure = self._transport_error(call, error)
            finally:
                await response.aclose()
            if failure is not None:
                raise failure
            return response

        try:
            response = await with_retries(attempt, self.retry, clock=self.clock, on_retry=_retrying(call))
        except Exception as error:
            scrub(error, call.secrets)
            raise
        raw = _capture_request(call)
        if raw is not None:
            raw.response += response.content
        return response

    async def request(self, call: HttpCall, read: Callable[[httpx.Response], T]) -> T:
        """Send a call and read its answer with `read`; every error either raises, the decoder's included, leaves
        without the call's secrets, and an answer that nests too deeply to decode is `MalformedResponseError`."""
        response = await self.send(call)
        try:
            return read(response)
        except RecursionError:
            failure: BaseException = MalformedResponseError(
                "the answer nests too deeply to be read", provider=call.provider
            )
        except Exception as error:
            scrub(error, call.secrets)
            raise
        raise failure

    async def open(self, call: HttpCall) -> httpx.Response:
        """Open a streamed call: retried until a 2xx response arrives, then handed over (the caller closes it) and never
        retried again."""
        try:
            response = await with_retries(
                lambda: self._open(call), self.retry, clock=self.clock, on_retry=_retrying(call)
            )
        except Exception as error:
            scrub(error, call.secrets)
            raise
        _capture_request(call)
        return response

    @asynccontextmanager
    async def stream(self, call: HttpCall) -> AsyncIterator[httpx.Response]:
        """`open` as a context manager that closes the response."""
        response = await self.open(call)
        try:
            yield response
        except httpx.HTTPError as error:
            raise self._transport_error(call, error) from None
        finally:
            await response.aclose()

    async def aiter_bytes(self, call: HttpCall, response: httpx.Response) -> AsyncIterator[bytes]:
        """The raw body of a streamed response, with transport failures typed. The response is closed when the
        iterator is: at the end, when it is closed, and when a reader drops it unclosed (the event loop then closes
        the iterator, so the connection is not held forever)."""
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
            raise self._transport_error(call, error) from None
        finally:
            await response.aclose()

    async def _open(self, call: HttpCall) -> httpx.Response:
        client = self._pool.get()
        headers = dict(call.headers)
        if call.authorize is not None:
            grant = await call.authorize(call, self)
            call.keep_secrets(
                (
                    *grant.secrets,
                    *(
                        Secret(value)
                        for name, value in grant.headers.items()
                        if len(value) >= MIN_SECRET_LENGTH and is_sensitive_header(name)
                    ),
                )
            )
            headers.update(grant.headers)
        request = client.build_request(
            call.method,
            call.url,
            headers=headers,
            content=call.body,
            timeout=self._timeout,
        )
        failure: BaseException
        try:
            with anyio.fail_after(self.header_timeout):
                response = await client.send(request, stream=True, follow_redirects=False)
        except TimeoutError:
            failure = TransportError(f"no response headers within {self.header_timeout:g} s", provider=call.provider)
        except httpx.HTTPError as error:
            # Raised outside the handler, so the error does not carry httpcore's frames (whose local variables hold
            # the headers as sent) as its context.
            failure = self._transport_error(call, error)
        else:
            if response.status_code < 300:
                return response
            try:
                failure = await self._failure(call, response)
            finally:
                await response.aclose()
        raise failure

    async def _failure(self, call: HttpCall, response: httpx.Response) -> ProviderError:
        status = response.status_code
        request_id = (
            response.headers.get("x-request-id")
            or response.headers.get("request-id")
            or response.headers.get("x-amzn-requestid")
        )
        if 300 <= status < 400:
            return scrub(  # type: ignore[return-value]
                ProviderError(
                    f"the provider answered with a redirect (to {response.headers.get('location', 'nowhere')!r}); "
                    "provider calls never follow redirects",
                    provider=call.provider,
                    status=status,
                    request_id=request_id,
                ),
                call.secrets,
            )
        body = await self._read_bounded(response)
        detail = call.error_detail(body) if body else None
        aws_type = response.headers.get("x-amzn-errortype")
        if aws_type and (detail is None or detail.code is None):
            # AWS's REST services name the error in a header (`ThrottlingException:http://...`), not the body.
            detail = ErrorDetail(detail.message if detail else "", aws_type.split(":", 1)[0].strip() or None)
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
        return scrub(error, call.secrets)  # type: ignore[return-value]

    @staticmethod
    async def _read_bounded(response: httpx.Response) -> bytes:
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
        text = f"{kind}: {error}" if str(error) else kind
        return TransportError(call.redactor(text), provider=call.provider)


def _retrying(call: HttpCall) -> Callable[[int, BaseException, float], None]:
    """Logs each retry (at INFO on `onellm.providers`), its error text without the call's secrets."""

    def log(retry: int, error: BaseException, wait: float) -> None:
        if _log.isEnabledFor(logging.INFO):
            _log.info(
                "%s: retry %d of %s %s in %.2f s after %s",
                call.provider,
                retry + 1,
                call.method,
                call.redactor(call.url),
                wait,
                call.redactor(f"{type(error).__name__}: {error}"),
            )

    return log


def decode_json(data: bytes, *, provider: str, what: str = "response") -> Any:
    """Decode a JSON body, or fail with `MalformedResponseError` naming the provider."""
    try:
        return msgspec.json.decode(data)
    except msgspec.DecodeError as error:
        raise MalformedResponseError(f"the {what} is not valid JSON: {error}", provider=provider) from error
    except RecursionError:
        failure = MalformedResponseError(f"the {what} nests too deeply to be read", provider=provider)
    raise failure


_publish("onellm.providers", ClientPool, RawExchange)
