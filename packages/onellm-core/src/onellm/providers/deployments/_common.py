"""What every deployment shares: the `Deployment` base a provider hands its calls to, access tokens and the cache that
refreshes them, and the checks that keep a configured name or address from sending a request to another host."""

from __future__ import annotations

import datetime as dt
import re
import threading
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Final

import anyio
import msgspec

from onellm._public import publish as _publish
from onellm.errors import AuthError, BadRequestError, ConfigurationError, OnellmError, ProviderError, Secret
from onellm.providers._http import Grant, Headers, HttpCall, _reference, _running_loop

if TYPE_CHECKING:
    from onellm.clock import Clock
    from onellm.providers._http import ErrorDetail, HttpTransport
    from onellm.providers._stream import FrameReader

__all__ = [
    "REFRESH_BEFORE_EXPIRY",
    "AccessToken",
    "Deployment",
    "TokenCache",
    "TokenSource",
    "checked_base_url",
    "plain_name",
]

REFRESH_BEFORE_EXPIRY: Final = dt.timedelta(minutes=5)
"""A cached token is replaced this long before it expires."""

_ENCODER = msgspec.json.Encoder(decimal_format="number")
Classifier = Callable[[ProviderError, "ErrorDetail | None"], ProviderError]


def encode_body(body: Mapping[str, Any] | bytes | None) -> bytes | None:
    """A request body as sent (the provider's one JSON encoder, money as JSON numbers)."""
    if body is None or isinstance(body, bytes):
        return body
    return _ENCODER.encode(body)


def chain(first: Classifier | None, second: Classifier) -> Classifier:
    """A codec's classifier, then a deployment's."""
    if first is None:
        return second

    def both(error: ProviderError, detail: ErrorDetail | None) -> ProviderError:
        return second(first(error, detail), detail)

    return both


# -- names and addresses ---------------------------------------------------------------------------------------------


def plain_name(value: object, what: str, pattern: re.Pattern[str]) -> str:
    """`value` when it is a plain name matching `pattern` (a region, a location, a project); anything else, which could
    change the host or the path a request goes to, is `ConfigurationError` naming the setting."""
    if not isinstance(value, str) or not pattern.fullmatch(value):
        shown = repr(value) if isinstance(value, str) and len(value) <= 80 else f"a {type(value).__name__}"
        raise ConfigurationError(f"{what} must be a plain name ({pattern.pattern}), not {shown}", setting=what)
    return value


def checked_base_url(url: str, what: str) -> str:
    """A base address: `https://` with a host and nothing after the path, or `http://` to a loopback host (for tests
    and local gateways). Returned without a trailing slash."""
    import httpx

    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError) as error:
        raise ConfigurationError(f"{what} is not a URL: {error}", setting=what) from None
    host = parsed.host
    if not host:
        raise ConfigurationError(f"{what} has no host", setting=what)
    if parsed.query or parsed.fragment or parsed.userinfo:
        raise ConfigurationError(f"{what} must not carry a query, a fragment or credentials", setting=what)
    if parsed.scheme != "https" and not (parsed.scheme == "http" and _loopback(host)):
        raise ConfigurationError(
            f"{what} must be https (plain http only to a loopback host), not {parsed.scheme}://{host}", setting=what
        )
    return str(parsed).rstrip("/")


def _loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


# -- the deployment base ---------------------------------------------------------------------------------------------


class Deployment:
    """Where a provider's requests go and how they are signed. A provider given one (`deployment=`) hands it every call
    it builds: the deployment picks the address, adapts the body where the cloud's wire differs from the vendor's,
    refuses before sending what the cloud does not offer, and authorizes each attempt. The codec is the provider's own.
    """

    name: ClassVar[str] = ""
    """`azure`, `bedrock` or `vertex`: what `provider.deployment` says."""
    serves: ClassVar[str] = ""
    """The provider class this deployment is for (`AnthropicProvider`, `OpenAIProvider`, `GeminiProvider`)."""

    base_url: str

    @property
    def secrets(self) -> tuple[Secret, ...]:
        """Every credential this deployment holds: removed from every error of the provider it serves."""
        return ()

    def check_provider(self, provider: object) -> None:
        """Refuse a provider this deployment cannot serve (an Anthropic deployment given to the Gemini provider)."""
        names = {cls.__name__ for cls in type(provider).__mro__}
        if self.serves not in names:
            raise ConfigurationError(
                f"{type(self).__name__} serves {self.serves}, not {type(provider).__name__}", setting="deployment"
            )

    def http_call(
        self,
        provider: str,
        method: str,
        path: str,
        body: Mapping[str, Any] | bytes | None,
        *,
        headers: Headers,
        stream: bool,
        content_type: str | None,
        secrets: tuple[Secret, ...],
        **options: Any,
    ) -> HttpCall:
        """The call for what the provider asked (`path` as on the vendor's own API); `BadRequestError` for what this
        cloud does not offer, raised before anything is sent."""
        raise NotImplementedError

    def frames(self, provider: str) -> FrameReader | None:
        """The reader that cuts a streamed body into events (None: server-sent events)."""
        return None

    def refuse(self, provider: str, what: str, instead: str = "") -> BadRequestError:
        """The error for a feature this cloud does not offer, raised before anything is sent."""
        hint = f"; {instead}" if instead else ""
        return BadRequestError(f"{self.title} does not offer {what}{hint}", provider=provider)

    def claude_messages(
        self, provider: str, method: str, path: str, body: Mapping[str, Any] | bytes | None, *, label: str, batches: str
    ) -> tuple[str, dict[str, Any]]:
        """The model and the rest of the body of a Claude Messages call on a cloud that hosts Claude (the model goes
        in the address there); every other Anthropic route is refused, token counting and batches with what to use
        instead (`label` names the feature as this cloud says it, `batches` the cloud's own batch service)."""
        if path.startswith("/v1/messages/count_tokens"):
            raise self.refuse(provider, f"{label}token counting", "the token counter falls back to its local estimate")
        if path.startswith("/v1/messages/batches"):
            raise self.refuse(provider, f"{label}message batches", f"use {batches}")
        if method != "POST" or path != "/v1/messages" or not isinstance(body, Mapping):
            raise self.refuse(provider, f"{method} {path}")
        data = dict(body)
        model = data.pop("model", None)
        if not isinstance(model, str):
            raise BadRequestError("the request names no model", provider=provider)
        return model, data

    @property
    def title(self) -> str:
        return {"azure": "Azure OpenAI", "bedrock": "Amazon Bedrock", "vertex": "Vertex AI"}.get(self.name, self.name)

    def _build(
        self,
        provider: str,
        method: str,
        url: str,
        body: Mapping[str, Any] | bytes | None,
        headers: Headers,
        content_type: str | None,
        secrets: tuple[Secret, ...],
        authorize: Any,
        **options: Any,
    ) -> HttpCall:
        if content_type is not None:
            headers["content-type"] = content_type
        content = encode_body(body)
        if content is None:
            headers.pop("content-type", None)
        known = (*secrets, *(s for s in self.secrets if s not in secrets))
        return HttpCall(
            method, url, provider, headers=headers, body=content, secrets=known, authorize=authorize, **options
        )


# -- access tokens ---------------------------------------------------------------------------------------------------


class AccessToken:
    """A bearer token and when it expires.

    ```python
    async def entra_token() -> AccessToken:
        token = await credential.get_token("https://cognitiveservices.azure.com/.default")
        return AccessToken(token.token, expires_on=token.expires_on)
    ```
    """

    __slots__ = ("expires_at", "token")

    def __init__(
        self, token: Secret | str, expires_at: dt.datetime | None = None, *, expires_on: float | None = None
    ) -> None:
        secret = token if isinstance(token, Secret) else Secret(token)
        if not secret:
            raise ValueError("an access token cannot be empty")
        if expires_at is None:
            if expires_on is None:
                raise ValueError("an access token needs expires_at (a datetime) or expires_on (seconds since 1970)")
            expires_at = dt.datetime.fromtimestamp(float(expires_on), dt.UTC)
        if expires_at.tzinfo is None:
            raise ValueError("expires_at must be timezone-aware")
        self.token: Secret = secret
        """The token, sent as `Authorization: Bearer ...`."""
        self.expires_at: dt.datetime = expires_at
        """When the token stops being accepted."""

    def __repr__(self) -> str:
        return f"AccessToken(****, expires_at={self.expires_at.isoformat()})"

    @classmethod
    def of(cls, value: object) -> AccessToken:
        """An `AccessToken`, or what a credential library returns: an object with `token` and `expires_on` (seconds
        since 1970, as azure-identity's) or `expires_at` (a datetime)."""
        if isinstance(value, AccessToken):
            return value
        token = getattr(value, "token", None)
        if isinstance(token, str | Secret):
            expires_at = getattr(value, "expires_at", None)
            if isinstance(expires_at, dt.datetime):
                return cls(token, expires_at)
            expires_on = getattr(value, "expires_on", None)
            if isinstance(expires_on, int | float):
                return cls(token, expires_on=expires_on)
        raise TypeError(f"a token delegate must return an AccessToken, not {type(value).__name__}")


TokenSource = Callable[["HttpTransport"], Awaitable[object]]
"""Fetches a fresh token, with the transport of the call that needs it (for an exchange over the network): an
`AccessToken`, or what a credential library returns (see `AccessToken.of`)."""


class TokenCache:
    """One token at a time, fetched on first use and again `REFRESH_BEFORE_EXPIRY` before it expires. Concurrent
    callers on one event loop share a single fetch. A failed fetch is `AuthError`, and so is a source that gives back a
    token that has already expired (it was asked because the old one was about to).

    `clock` is the cache's time; without one, the clock of the transport that asks (the provider's).
    """

    __slots__ = ("_clock", "_guard", "_locks", "_seen", "_source", "_token", "fetches", "what")

    def __init__(self, source: TokenSource, *, clock: Clock | None = None, what: str = "access token") -> None:
        self._source = source
        self._clock = clock
        self._token: AccessToken | None = None
        self._locks: dict[int, tuple[Callable[[], Any], anyio.Lock]] = {}
        self._guard = threading.Lock()
        self._seen: list[Secret] = []
        self.what = what
        self.fetches = 0
        """How many tokens were fetched (a cache that works fetches once per token lifetime)."""

    def __repr__(self) -> str:
        state = f"expires_at={self._token.expires_at.isoformat()}" if self._token else "empty"
        return f"TokenCache({self.what}, {state})"

    @property
    def secrets(self) -> tuple[Secret, ...]:
        """The tokens this cache handed out (the last few), for removal from error text."""
        return tuple(self._seen)

    def _fresh(self, token: AccessToken | None, now: dt.datetime) -> bool:
        return token is not None and now < token.expires_at - REFRESH_BEFORE_EXPIRY

    def _lock(self) -> anyio.Lock:
        loop = _running_loop()
        with self._guard:
            entry = self._locks.get(id(loop))
            if entry is None or entry[0]() is not loop:
                for key, (ref, _) in list(self._locks.items()):
                    if ref() is None:
                        del self._locks[key]
                entry = (_reference(loop), anyio.Lock())
                self._locks[id(loop)] = entry
            return entry[1]

    async def get(self, transport: HttpTransport) -> AccessToken:
        """A token good for at least five more minutes (or until its own expiry, when the source gives shorter ones)."""
        clock = self._clock or transport.clock
        token = self._token
        if self._fresh(token, clock.now()):
            assert token is not None
            return token
        async with self._lock():
            token = self._token
            if self._fresh(token, clock.now()):
                assert token is not None
                return token
            fresh = await self._fetch(transport)
            now = clock.now()
            if fresh.expires_at <= now:
                raise AuthError(
                    f"the {self.what} source gave back a token that expired at {fresh.expires_at.isoformat()} "
                    f"(now {now.isoformat()}); it must give a fresh one"
                )
            self._token = fresh
            with self._guard:
                self._seen = [*self._seen[-3:], fresh.token]
            return fresh

    async def _fetch(self, transport: HttpTransport) -> AccessToken:
        self.fetches += 1
        try:
            value = await self._source(transport)
        except AuthError:
            raise
        except OnellmError as error:
            raise AuthError(f"could not get an {self.what}: {error}") from error
        except Exception as error:
            raise AuthError(f"the {self.what} source failed: {type(error).__name__}: {error}") from error
        try:
            return AccessToken.of(value)
        except (TypeError, ValueError, OverflowError) as error:
            raise AuthError(f"the {self.what} source gave back no usable token: {error}") from None

    async def grant(self, call: HttpCall, transport: HttpTransport) -> Grant:
        """The bearer header for one attempt of `call` (an `Authorizer`)."""
        token = await self.get(transport)
        return Grant({"authorization": f"Bearer {token.token.reveal()}"}, (token.token,))

    def clear(self) -> None:
        """Forget the token (the next call fetches a new one)."""
        self._token = None


_publish("onellm", AccessToken)
_publish("onellm.providers.deployments", Deployment, TokenCache)
