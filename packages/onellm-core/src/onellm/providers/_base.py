"""`HttpProvider`: what every HTTP provider shares.

The key (the argument, else the first of the provider's variables that is set), the base URL (the argument, else the
SDK-compatible variable, else the vendor's default), the headers, the transport over a client pool, the per-model
profile a request carries, `aclose`, and the boundary every public call passes: an error that leaves `send`,
`count_tokens`, `embed`, `decide`, a batch or a media method has every form of the key removed (`_errors.scrub`), and an answer that
nests too deeply to read is `MalformedResponseError`, whichever code raised it. A stream holds to the same rule inside
`EventStream`.

A provider given a deployment (`deployment=`: Azure OpenAI, Amazon Bedrock, Vertex AI) reads no key and no base URL of
its own: it hands every call it builds to the deployment, which picks the address, signs each attempt and frames the
stream; its credentials join the secrets removed from every error.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Self, TypeVar

import msgspec

from onellm.catalog import ModelProfile
from onellm.errors import AuthError, ConfigurationError, MalformedResponseError, Secret
from onellm.providers._errors import clean
from onellm.providers._http import (
    MIN_SECRET_LENGTH,
    ClientPool,
    Headers,
    HttpCall,
    HttpTransport,
    is_sensitive_header,
)
from onellm.providers._stream import EventDecoder, EventStream

if TYPE_CHECKING:
    import httpx

    from onellm.clock import Clock
    from onellm.messages import CallWarning
    from onellm.providers._request import ChatRequest
    from onellm.providers._retry import RetryPolicy
    from onellm.providers.deployments import Deployment

__all__ = ["GUARDED_METHODS", "HttpProvider", "path_segment", "pick_base_url", "read_key"]

T = TypeVar("T")

GUARDED_METHODS = (
    "send",
    "count_tokens",
    "embed",
    "submit_batch",
    "get_batch",
    "batch_results",
    "generate_image",
    "synthesize",
    "transcribe",
    "moderate",
    "decide",
)
"""The public calls whose errors `HttpProvider` cleans at the boundary (in every subclass that defines them)."""

_ENCODER = msgspec.json.Encoder(decimal_format="number")


def read_key(given: Secret | str | None, variables: Sequence[str], environ: Mapping[str, str]) -> Secret | None:
    """The key to send: `given` when one is given (an empty one means none), else the first of `variables` set and not
    empty in `environ`. The one place a provider key is read."""
    if isinstance(given, Secret):
        return given if given else None
    if isinstance(given, str):
        return Secret(given) if given else None
    for variable in variables:
        value = environ.get(variable)
        if value:
            return Secret(value)
    return None


def pick_base_url(given: str | None, variable: str | None, default: str, environ: Mapping[str, str]) -> str:
    """The base URL: `given` (an argument, or the catalog's `baseUrl`), else the SDK-compatible `variable` when set
    and not empty, else `default`. Never ends in a slash. The one place a provider's base URL is chosen."""
    chosen = given or (environ.get(variable) if variable else None) or default
    return chosen.rstrip("/")


def _guard(method: Callable[..., Awaitable[T]]) -> Callable[..., Awaitable[T]]:
    @functools.wraps(method)
    async def guarded(self: HttpProvider, *args: Any, **kwargs: Any) -> T:
        failure: MalformedResponseError | None = None
        try:
            return await method(self, *args, **kwargs)
        except RecursionError:
            failure = MalformedResponseError("the answer nests too deeply to be read", provider=self.name)
        except Exception as error:
            raise clean(error, self.secrets)  # noqa: B904 - the same error, cleaned, without the frames it held
        raise failure

    guarded.__onellm_guarded__ = True  # type: ignore[attr-defined]
    return guarded


class HttpProvider:
    """The base of the HTTP providers. Subclasses set the class attributes and `_auth_headers`, and build calls with
    `_call`, send them with `_request` and stream them with `_events`.

    Keys are `Secret`s, read once here; the base URL is chosen once here; `http_client` is an `httpx.AsyncClient` of
    the caller's (used on every event loop, and the caller's to close) or a `ClientPool` shared with other providers
    (a runtime's); without one the provider keeps its own pool, one client per event loop, closed by `aclose()`.
    """

    default_base_url: ClassVar[str] = ""
    base_url_variable: ClassVar[str | None] = None
    key_variables: ClassVar[tuple[str, ...]] = ()
    key_required: ClassVar[bool] = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name in GUARDED_METHODS:
            method = cls.__dict__.get(name)
            if method is not None and not getattr(method, "__onellm_guarded__", False):
                setattr(cls, name, _guard(method))

    def __init__(
        self,
        *,
        name: str,
        api_key: Secret | str | None = None,
        base_url: str | None = None,
        http_client: httpx.AsyncClient | ClientPool | None = None,
        retry: RetryPolicy | None = None,
        clock: Clock | None = None,
        headers: Mapping[str, str] | None = None,
        header_timeout: float = 600.0,
        connect_timeout: float = 10.0,
        stream_timeout: float | None = 3600.0,
        stream_idle_timeout: float | None = 600.0,
        environ: Mapping[str, str] | None = None,
        deployment: Deployment | None = None,
    ) -> None:
        env = environ if environ is not None else os.environ
        self.name = name
        self._deployment = deployment
        self.deployment: str | None = deployment.name if deployment is not None else None
        """Where this provider's requests go: None for the vendor's own API, else `azure`, `bedrock` or `vertex`."""
        if deployment is not None:
            deployment.check_provider(self)
            if base_url or api_key:
                raise ConfigurationError(
                    f"{name}: give the base URL and credentials to the deployment, not the provider",
                    setting="base_url" if base_url else "api_key",
                )
            self._key: Secret | None = None
            self.base_url = deployment.base_url
        else:
            self._key = read_key(api_key, self.key_variables, env)
            self.base_url = pick_base_url(base_url, self.base_url_variable, self.default_base_url, env)
        if not self.base_url:
            raise ValueError(f"{name}: a base URL is required")
        self._transport = HttpTransport(
            http_client,
            retry=retry,
            clock=clock,
            header_timeout=header_timeout,
            connect_timeout=connect_timeout,
            stream_timeout=stream_timeout,
            stream_idle_timeout=stream_idle_timeout,
        )
        self._headers = Headers({"content-type": "application/json", "accept": "application/json"})
        self._headers.update(headers or {})
        secrets = [self._key] if self._key else []
        if deployment is not None:
            secrets.extend(deployment.secrets)
        secrets.extend(
            Secret(v) for k, v in self._headers.items() if len(v) >= MIN_SECRET_LENGTH and is_sensitive_header(k)
        )
        self.secrets: tuple[Secret, ...] = tuple(secrets)
        """Every secret this provider sends (its key, credential headers): removed from every error it raises."""
        self._default_profile = ModelProfile(provider=name)

    def __repr__(self) -> str:
        on = f", deployment={self.deployment!r}" if self.deployment else ""
        return f"{type(self).__name__}(name={self.name!r}, base_url={self.base_url!r}{on})"

    # -- what subclasses say ---------------------------------------------------------------------------------------

    def _auth_headers(self, key: Secret) -> dict[str, str]:
        """The headers that carry the key (the standard bearer token unless the provider says otherwise)."""
        return {"authorization": f"Bearer {key.reveal()}"}

    def _missing_key(self) -> AuthError:
        variables = " or ".join(self.key_variables)
        where = f"Set the environment variable {variables} or pass api_key=." if variables else "Pass api_key=."
        return AuthError(f"No API key. {where}", provider=self.name)

    # -- calls -----------------------------------------------------------------------------------------------------

    def _profile(self, request: ChatRequest) -> ModelProfile:
        """The request's model profile, or this provider's defaults when the request carries none."""
        return request.profile if request.profile is not None else self._default_profile

    def _call(
        self,
        method: str,
        path: str,
        body: Mapping[str, Any] | bytes | None = None,
        *,
        stream: bool = False,
        content_type: str | None = None,
        **options: Any,
    ) -> HttpCall:
        """A call to `base_url + path`, the key's headers added (a missing required key is `AuthError`, before
        anything is sent). With a deployment, the deployment builds the call for `path` as on the vendor's own API."""
        if self._deployment is not None:
            return self._deployment.http_call(
                self.name,
                method,
                path,
                body,
                headers=Headers(self._headers),
                stream=stream,
                content_type=content_type,
                secrets=self.secrets,
                **options,
            )
        key = self._key
        if not key and self.key_required:
            raise self._missing_key()
        headers = Headers(self._headers)
        if key:
            headers.update(self._auth_headers(key))
        if stream:
            headers["accept"] = "text/event-stream"
        if content_type is not None:
            headers["content-type"] = content_type
        if body is None:
            content = None
            headers.pop("content-type", None)
        elif isinstance(body, bytes):
            content = body
        else:
            content = _ENCODER.encode(body)
        return HttpCall(
            method, f"{self.base_url}{path}", self.name, headers=headers, body=content, secrets=self.secrets, **options
        )

    async def _request(self, call: HttpCall, read: Callable[[httpx.Response], T]) -> T:
        """Send a call and read its answer; errors leave without secrets."""
        return await self._transport.request(call, read)

    def _events(self, prepare: Callable[[], tuple[HttpCall, list[CallWarning]]], decoder: EventDecoder) -> EventStream:
        """A streamed call: `prepare` builds it when the stream is first read."""
        frames = self._deployment.frames(self.name) if self._deployment is not None else None
        return EventStream(self._transport, prepare, decoder, provider=self.name, frames=frames)

    # -- lifetime --------------------------------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close this provider's own clients (a client or pool given to it is the giver's to close)."""
        await self._transport.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def path_segment(value: str, what: str) -> str:
    """`value` as one segment of a URL path: an id a caller or a server gave that would change the path (a slash, a
    query, a fragment, an escape, a dot segment, a control character) is refused."""
    if (
        not isinstance(value, str)
        or not value
        or value in (".", "..")
        or any(c in value for c in "/?#%\\")
        or any(ord(c) < 33 or ord(c) == 127 for c in value)
    ):
        raise ValueError(f"not a {what}: {value!r}")
    return value
