"""`EgressClient`: the HTTP client every tool that opens its own connections goes through.

Each request is checked against the network grant twice: the URL's host before anything is sent (so a refused name is
never even resolved), and the address when the connection is opened. The second check lives in the connection pool's
network backend: it resolves the name itself, checks each address with `Capabilities.allows_connection`, and dials the
checked address, so a name that resolves differently the second time (DNS rebinding) cannot slip through.

Redirects are followed by hand, each hop checked before it is requested. System proxy settings are ignored.
"""

from __future__ import annotations

import contextlib
import functools
import http.cookiejar
import inspect
import json as _json
import ssl
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar

import httpcore
import httpx

from onellm._public import publish as _publish
from onellm.capabilities._caps import Capabilities
from onellm.capabilities._network import NetworkGrant, normalize_host, parse_address, system_resolve, valid_port
from onellm.capabilities._refusal import denial

__all__ = ["EgressClient", "Resolver", "check_url"]

#: Resolves a host name to addresses, in preference order: `resolver(host, port)` or `resolver(host)`, returning the
#: address strings or an awaitable of them.
Resolver = Callable[..., Sequence[str] | Awaitable[Sequence[str]]]

_KEPT_ON_ORIGIN_CHANGE = frozenset({"accept", "accept-language", "accept-encoding", "content-type", "user-agent"})
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_DEFAULT_PORTS = {"http": 80, "https": 443}


class _GuardedBackend(httpcore.AsyncNetworkBackend):
    """Resolves, checks every address against the grant, and dials only an allowed address."""

    def __init__(self, grant: NetworkGrant, resolver: Resolver, inner: httpcore.AsyncNetworkBackend) -> None:
        self._grant = grant
        self._resolver = resolver
        self._inner = inner
        try:
            params = inspect.signature(resolver).parameters.values()
            positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
            varargs = any(p.kind is p.VAR_POSITIONAL for p in params)
            self._takes_port = varargs or len(positional) >= 2
        except (TypeError, ValueError):
            self._takes_port = True

    async def _resolve(self, host: str, port: int) -> list[str]:
        try:
            answer = self._resolver(host, port) if self._takes_port else self._resolver(host)
            if inspect.isawaitable(answer):
                answer = await answer
        except OSError as exc:  # socket.gaierror and friends: the name does not resolve
            # Reported as httpx reports a failed lookup of its own: a connection error, not a raw socket error.
            raise httpcore.ConnectError(f"cannot resolve {host}: {exc}") from exc
        return [str(a) for a in answer]

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        literal = parse_address(host)
        addresses = [str(literal)] if literal is not None else await self._resolve(host, port)
        allowed = [a for a in addresses if self._grant.allows_connection(host, port, a)]
        if not allowed:
            shown = ", ".join(addresses) or "no address"
            raise denial(
                f"Connection to {host}:{port} refused: it resolved to {shown}, which the network grant does not "
                "allow (names never reach loopback, private or link-local addresses).",
                target=f"{host}:{port}",
                rule="address-not-allowed",
            )
        last: Exception | None = None
        for address in allowed:
            try:
                return await self._inner.connect_tcp(
                    address, port, timeout=timeout, local_address=local_address, socket_options=socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last = exc
        assert last is not None
        raise last

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise denial("Unix sockets are not reachable through the egress client.", target=path, rule="uds")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


@functools.cache
def _ssl_context(http2: bool) -> ssl.SSLContext:
    # Loading the CA bundle takes a noticeable fraction of a second, so clients share one context. httpcore sets
    # the ALPN protocols on the context for every connection, hence one context per HTTP/2 setting.
    return httpx.create_ssl_context(verify=True, trust_env=False)


class _GuardedTransport(httpx.AsyncHTTPTransport):
    def __init__(self, backend: _GuardedBackend, *, verify: Any, http2: bool, limits: httpx.Limits) -> None:
        ssl_context = (
            _ssl_context(http2) if verify is True else httpx.create_ssl_context(verify=verify, trust_env=False)
        )
        super().__init__(verify=ssl_context, trust_env=False, http2=http2, limits=limits)
        # The pool httpx built has the default backend; rebuild it around the guarded one with the same settings.
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            http1=True,
            http2=http2,
            network_backend=backend,
        )


def check_url(grant: NetworkGrant, url: httpx.URL | str) -> httpx.URL:
    """The check made before a request or a redirect hop is sent: an http(s) URL with a host, a port from 1 to 65535
    (the scheme's default when none is written) and a host the grant allows. Returns the parsed URL.

    Raises:
        CapabilityDeniedError: `bad-url` (not a URL, or a port outside 1-65535), `network-off`, `scheme` (not http or
            https, or no host) or `host-not-granted`.
    """
    try:
        parsed = url if isinstance(url, httpx.URL) else httpx.URL(url)
        # The host is decoded from IDNA on first use, and the codec's own errors (`xn--a.com`) are ValueErrors that
        # httpx lets through, at construction or here.
        url_host = parsed.host
    except (httpx.InvalidURL, ValueError) as exc:
        raise denial(f"Request to {url!r} refused: {exc}.", target=str(url), rule="bad-url") from None
    text = str(parsed)
    if not grant.enabled:
        raise denial(f"Request to {text} refused: no network grant.", target=text, rule="network-off")
    if parsed.scheme not in ("http", "https"):
        raise denial(f"Request to {text} refused: only http and https URLs are allowed.", target=text, rule="scheme")
    if not url_host:
        raise denial(f"Request to {text} refused: the URL has no host.", target=text, rule="scheme")
    # httpx keeps any number as the port (0, 70000, even -1); the socket layer would fail on it only when the
    # connection opens, untyped. Port 0 must not be read as "no port" either: it would be checked as 80 or 443.
    port = parsed.port if parsed.port is not None else _DEFAULT_PORTS[parsed.scheme]
    if not valid_port(port):
        raise denial(f"Request to {text} refused: port {port} is outside 1-65535.", target=text, rule="bad-url")
    try:
        host = normalize_host(url_host)
    except ValueError:
        raise denial(
            f"Request to {text} refused: the host is not valid.", target=text, rule="host-not-granted"
        ) from None
    if not grant.allows_host(host, port):
        raise denial(
            f"Request to {text} refused: host {host}:{port} is not in the network grant.",
            target=f"{host}:{port}",
            rule="host-not-granted",
        )
    return parsed


_LOCATION = "onellm.redirect_location"


async def _take_location(response: httpx.Response) -> None:
    """Take a redirect's `Location` off the response before httpx reads it.

    httpx builds the next request of a redirect even when it does not follow it, and decoding a hostile location there
    (an IDNA host such as `xn--a.com`) raises the codec's own error from inside `send`, untyped. The hops are followed
    here by hand, so the location is kept aside for `_send` to check.
    """
    if response.status_code in _REDIRECTS and "location" in response.headers:
        response.extensions[_LOCATION] = response.headers["location"]
        del response.headers["location"]


def _origin(url: httpx.URL) -> tuple[str, str, int]:
    port = url.port or _DEFAULT_PORTS.get(url.scheme, 0)
    return (url.scheme, normalize_host(url.host), port)


class EgressClient:
    """An httpx-based client that honours a network grant: hosts checked before sending, addresses checked when each
    connection opens, redirects followed by hand with every hop checked, no system proxies.

    One client keeps one connection pool, for one network policy. `EgressClient.shared(capabilities)` returns the
    client for that policy in the running event loop, so equal grants share a pool and different grants never do.
    """

    def __init__(
        self,
        capabilities: Capabilities,
        *,
        resolver: Resolver | None = None,
        timeout: float | httpx.Timeout = 30.0,
        max_redirects: int = 10,
        verify: Any = True,
        http2: bool = False,
        limits: httpx.Limits | None = None,
        network_backend: httpcore.AsyncNetworkBackend | None = None,
        user_agent: str | None = None,
    ) -> None:
        """Create a client for the network grant of `capabilities`.

        Args:
            capabilities: The grants; only the network part is used.
            resolver: How names become addresses (the system resolver by default); tests pass a fake one.
            timeout: The httpx timeout for every request.
            max_redirects: Hops followed before giving up.
            verify: TLS verification, as httpx takes it.
            http2: Offer HTTP/2.
            limits: Pool limits.
            network_backend: The backend that dials the checked address (httpcore's by default).
            user_agent: The User-Agent header sent unless a request sets one.
        """
        self.capabilities = capabilities
        self.grant = capabilities.network_grant
        self.max_redirects = max_redirects
        backend = _GuardedBackend(self.grant, resolver or system_resolve, network_backend or httpcore.AnyIOBackend())
        transport = _GuardedTransport(backend, verify=verify, http2=http2, limits=limits or httpx.Limits())
        headers = {"User-Agent": user_agent} if user_agent else None
        # No cookie is ever stored: the pool is shared by every caller with the same grant.
        jar = http.cookiejar.CookieJar(policy=http.cookiejar.DefaultCookiePolicy(allowed_domains=[]))
        self._client = httpx.AsyncClient(
            transport=transport,
            trust_env=False,
            follow_redirects=False,
            timeout=timeout,
            headers=headers,
            cookies=jar,
            event_hooks={"response": [_take_location]},
        )

    _shared: ClassVar[weakref.WeakKeyDictionary[Any, dict[Any, EgressClient]]] = weakref.WeakKeyDictionary()

    @classmethod
    def shared(cls, capabilities: Capabilities) -> EgressClient:
        """The client for this network policy in the running event loop (created on first use)."""
        import asyncio

        loop = asyncio.get_running_loop()
        per_loop = cls._shared.setdefault(loop, {})
        key = capabilities.network_grant.key
        client = per_loop.get(key)
        if client is None or client._client.is_closed:
            client = cls(capabilities)
            per_loop[key] = client
        return client

    @property
    def is_closed(self) -> bool:
        return self._client.is_closed

    async def aclose(self) -> None:
        await self._client.aclose()

    async def __aenter__(self) -> EgressClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def check_url(self, url: httpx.URL | str) -> httpx.URL:
        """The check made before a request or a redirect hop is sent (see `check_url`). Returns the parsed URL.

        Raises:
            CapabilityDeniedError: not a URL or a port outside 1-65535, no network grant, a scheme other than http or
                https, or a host the grant lacks.
        """
        return check_url(self.grant, url)

    @contextlib.asynccontextmanager
    async def stream(
        self,
        method: str,
        url: httpx.URL | str,
        *,
        headers: Mapping[str, str] | None = None,
        params: Mapping[str, str] | None = None,
        content: bytes | str | None = None,
        json: Any = None,
        timeout: float | httpx.Timeout | None = None,  # noqa: ASYNC109 (handed to httpx)
    ) -> AsyncIterator[httpx.Response]:
        """Send a request and yield the final response unread (its body streams); the response is closed on exit."""
        response = await self._send(
            method, url, headers=headers, params=params, content=content, json=json, timeout=timeout
        )
        try:
            yield response
        finally:
            await response.aclose()

    async def request(
        self,
        method: str,
        url: httpx.URL | str,
        *,
        headers: Mapping[str, str] | None = None,
        params: Mapping[str, str] | None = None,
        content: bytes | str | None = None,
        json: Any = None,
        timeout: float | httpx.Timeout | None = None,  # noqa: ASYNC109 (handed to httpx)
    ) -> httpx.Response:
        """Send a request, follow redirects by hand, and return the final response with its body read."""
        async with self.stream(
            method, url, headers=headers, params=params, content=content, json=json, timeout=timeout
        ) as response:
            await response.aread()
        return response

    async def get(self, url: httpx.URL | str, **kwargs: Any) -> httpx.Response:
        return await self.request("GET", url, **kwargs)

    async def post(self, url: httpx.URL | str, **kwargs: Any) -> httpx.Response:
        return await self.request("POST", url, **kwargs)

    async def _send(
        self,
        method: str,
        url: httpx.URL | str,
        *,
        headers: Mapping[str, str] | None,
        params: Mapping[str, str] | None,
        content: bytes | str | None,
        json: Any,
        timeout: float | httpx.Timeout | None,  # noqa: ASYNC109 (handed to httpx)
    ) -> httpx.Response:
        method = method.upper()
        current = self.check_url(url)
        if params:
            current = current.copy_merge_params(params)
        body: bytes | None
        hdrs = httpx.Headers(headers or {})
        # The Host header always names the URL's host; a caller's own would pick another site on the same address.
        hdrs.pop("host", None)
        if json is not None:
            if content is not None:
                raise ValueError("pass either content or json, not both")
            body = _json.dumps(json, separators=(",", ":"), ensure_ascii=False).encode()
            hdrs.setdefault("Content-Type", "application/json")
        elif isinstance(content, str):
            body = content.encode()
        else:
            body = content
        extra: dict[str, Any] = {}
        if timeout is not None:
            extra["timeout"] = timeout
        for _hop in range(self.max_redirects + 1):
            request = self._client.build_request(method, current, headers=hdrs, content=body, **extra)
            response = await self._client.send(request, stream=True)
            location = response.extensions.get(_LOCATION)
            if response.status_code not in _REDIRECTS or location is None:
                return response
            await response.aclose()
            try:
                target = current.join(location)
                target.host  # noqa: B018 (decoding the host is what may fail)
            except (httpx.InvalidURL, ValueError) as exc:
                raise denial(
                    f"Redirect from {current} to an invalid location {location!r}.", target=location, rule="redirect"
                ) from exc
            target = self.check_url(target)
            cross_origin = _origin(target) != _origin(current)
            status = response.status_code
            if (status == 303 and method != "HEAD") or (status in (301, 302) and method == "POST"):
                method = "GET"
                body = None
                for name in ("content-type", "content-length", "transfer-encoding"):
                    hdrs.pop(name, None)
            elif status in (307, 308) and cross_origin and body:
                raise denial(
                    f"Redirect {status} from {current} to {target} would resend the request body to another origin; "
                    "refused.",
                    target=str(target),
                    rule="redirect-body",
                )
            if cross_origin:
                hdrs = httpx.Headers({k: v for k, v in hdrs.items() if k.lower() in _KEPT_ON_ORIGIN_CHANGE})
            current = target
        raise httpx.TooManyRedirects(f"more than {self.max_redirects} redirects", request=request)


_publish("onellm", EgressClient)
