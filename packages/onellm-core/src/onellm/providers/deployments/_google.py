"""Google OAuth 2.0 for Vertex AI without google-auth: a service account's RS256-signed JWT exchanged for an access token
with the `urn:ietf:params:oauth:grant-type:jwt-bearer` grant (RFC 7523), tokens cached and refreshed five minutes
before they expire, or a token delegate of the caller's.

The JWT (RFC 7519, signed per RFC 7515): header `{"alg": "RS256", "typ": "JWT", "kid": private_key_id}`; claims `iss`
(the account's email), `scope`, `aud` (the token URI), `iat`, `exp` one hour later, and `sub` when acting for a user.
The token endpoint answers `{"access_token", "expires_in", "token_type"}`; a 5xx or 429 there is retried on the
provider's retry policy, and any failure is an `AuthError` that shows neither the assertion nor the key.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlencode

import msgspec

from onellm._public import publish as _publish
from onellm.errors import AuthError, BadDefinitionError, ConfigurationError, ProviderError, Secret
from onellm.providers._http import (
    ErrorDetail,
    Grant,
    Headers,
    HttpCall,
    RawExchange,
    capturing_raw_exchange,
)
from onellm.providers.deployments._common import AccessToken, TokenCache, checked_base_url
from onellm.providers.deployments._rsa import KeyFormatError, RsaPrivateKey, b64url, parse_private_key_pem, rs256_sign

if TYPE_CHECKING:
    from onellm.clock import Clock
    from onellm.providers._http import HttpTransport

__all__ = [
    "CLOUD_PLATFORM_SCOPE",
    "DEFAULT_TOKEN_URI",
    "JWT_BEARER_GRANT",
    "GoogleBearerAuth",
    "GoogleServiceAccount",
]

CLOUD_PLATFORM_SCOPE: Final = "https://www.googleapis.com/auth/cloud-platform"
DEFAULT_TOKEN_URI: Final = "https://oauth2.googleapis.com/token"
JWT_BEARER_GRANT: Final = "urn:ietf:params:oauth:grant-type:jwt-bearer"
ASSERTION_LIFETIME: Final = dt.timedelta(hours=1)
MAX_KEY_FILE_BYTES: Final = 1024 * 1024
_CLOCK_WORDS = ("iat", "exp", "timeframe", "clock", "not yet valid", "expired")
_ENCODER = msgspec.json.Encoder()


class _TokenAnswer(msgspec.Struct):
    access_token: str
    expires_in: int
    token_type: str = "Bearer"


_token_answer = msgspec.json.Decoder(_TokenAnswer)


def _oauth_error(body: bytes) -> ErrorDetail | None:
    """An OAuth error body (RFC 6749, section 5.2): `{"error": code, "error_description": text}`."""
    try:
        data = msgspec.json.decode(body)
    except msgspec.DecodeError:
        return None
    if not isinstance(data, dict):
        return None
    code = data.get("error")
    text = data.get("error_description")
    if isinstance(code, dict):  # a Google API error body
        message = code.get("message")
        return ErrorDetail(message if isinstance(message, str) else "", code.get("status"))
    if not isinstance(code, str):
        return None
    return ErrorDetail(text if isinstance(text, str) else code, code)


class GoogleServiceAccount:
    """A Google Cloud service account: its email, project and private key, from the JSON key file Google issues.

    <!-- skip: next "needs a service-account file; docs/deployments.md runs a whole Vertex call" -->

    ```python
    account = GoogleServiceAccount.from_file("service-account.json")
    auth = GoogleBearerAuth(account.token_cache())
    ```

    The key is parsed when the account is made, so a damaged file fails at once; it stays a `Secret`.
    """

    __slots__ = (
        "_key",
        "_private_key",
        "client_email",
        "private_key_id",
        "project_id",
        "scopes",
        "subject",
        "token_uri",
    )

    def __init__(
        self,
        *,
        client_email: str,
        private_key: Secret | str,
        project_id: str | None = None,
        private_key_id: str | None = None,
        token_uri: str = DEFAULT_TOKEN_URI,
        scopes: Sequence[str] = (CLOUD_PLATFORM_SCOPE,),
        subject: str | None = None,
    ) -> None:
        if not isinstance(client_email, str) or "@" not in client_email:
            raise ConfigurationError("client_email must be the service account's email address", setting="client_email")
        secret = private_key if isinstance(private_key, Secret) else Secret(private_key)
        try:
            self._key: RsaPrivateKey = parse_private_key_pem(secret.reveal())
        except KeyFormatError as error:
            raise ConfigurationError(f"private_key: {error}", setting="private_key") from None
        self._private_key = secret
        self.client_email = client_email
        """The account's email: the JWT's issuer."""
        self.project_id = project_id
        """The project the key file names (Vertex calls need a project)."""
        self.private_key_id = private_key_id
        """The key's id, sent as the JWT's `kid`."""
        self.token_uri = checked_base_url(token_uri, "token_uri")
        """Where the assertion is exchanged (`https://oauth2.googleapis.com/token`)."""
        if isinstance(scopes, str) or not scopes or not all(isinstance(s, str) and s for s in scopes):
            raise ConfigurationError("scopes must be a list of scope URLs", setting="scopes")
        self.scopes = tuple(scopes)
        self.subject = subject
        """The user the account acts for (domain-wide delegation), sent as `sub`."""

    def __repr__(self) -> str:
        return f"GoogleServiceAccount({self.client_email!r}, project_id={self.project_id!r})"

    @property
    def secrets(self) -> tuple[Secret, ...]:
        return (self._private_key,)

    @classmethod
    def from_file(
        cls,
        path: str | os.PathLike[str],
        *,
        scopes: Sequence[str] = (CLOUD_PLATFORM_SCOPE,),
        subject: str | None = None,
    ) -> GoogleServiceAccount:
        """The account in a service-account key file (`type: service_account`).

        Raises:
            BadDefinitionError: the file cannot be read, is not JSON (with its line and column), is not a service
                account's key, or lacks or damages `client_email` or `private_key`. No message shows key material.
        """
        file = str(path)
        try:
            with open(path, "rb") as handle:
                raw = handle.read(MAX_KEY_FILE_BYTES + 1)
        except OSError as error:
            raise BadDefinitionError(f"cannot read the service-account file: {error.strerror}", file=file) from None
        if len(raw) > MAX_KEY_FILE_BYTES:
            raise BadDefinitionError("the service-account file is larger than 1 MiB; it is not a key file", file=file)
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise BadDefinitionError("the service-account file is not UTF-8 text", file=file) from None
        try:
            info = json.loads(text)
        except json.JSONDecodeError as error:
            raise BadDefinitionError(
                f"the service-account file is not JSON: {error.msg}", file=file, line=error.lineno, column=error.colno
            ) from None
        except RecursionError:
            raise BadDefinitionError("the service-account file nests too deeply to be JSON", file=file) from None
        return cls.from_info(info, file=file, scopes=scopes, subject=subject)

    @classmethod
    def from_info(
        cls,
        info: Mapping[str, Any],
        *,
        file: str | None = None,
        scopes: Sequence[str] = (CLOUD_PLATFORM_SCOPE,),
        subject: str | None = None,
    ) -> GoogleServiceAccount:
        """The account in a decoded key file (the same checks as `from_file`)."""
        where = file or "<service account>"
        if not isinstance(info, Mapping):
            raise BadDefinitionError("the service-account file is not a JSON object", file=where)
        kind = info.get("type")
        if kind != "service_account":
            shown = repr(kind) if isinstance(kind, str) and len(kind) < 40 else "missing"
            raise BadDefinitionError(
                f"type is {shown}; a service-account key file (type 'service_account') is needed",
                file=where,
                path="type",
            )
        for name in ("client_email", "private_key"):
            if not isinstance(info.get(name), str) or not info[name]:
                raise BadDefinitionError(f"the service-account file has no {name}", file=where, path=name)
        optional: dict[str, str | None] = {}
        for name in ("project_id", "private_key_id", "token_uri"):
            value = info.get(name)
            if value is not None and not isinstance(value, str):
                raise BadDefinitionError(f"{name} must be a string", file=where, path=name)
            optional[name] = value
        try:
            return cls(
                client_email=info["client_email"],
                private_key=Secret(info["private_key"]),
                project_id=optional["project_id"],
                private_key_id=optional["private_key_id"],
                token_uri=optional["token_uri"] or DEFAULT_TOKEN_URI,
                scopes=scopes,
                subject=subject,
            )
        except ConfigurationError as error:
            raise BadDefinitionError(str(error), file=where, path=error.setting) from None

    # -- the assertion -----------------------------------------------------------------------------------------------

    def assertion(self, now: dt.datetime) -> Secret:
        """The signed JWT that asks the token endpoint for an access token, issued at `now`, valid for an hour."""
        issued = int(now.timestamp())
        header: dict[str, str] = {"alg": "RS256", "typ": "JWT"}
        if self.private_key_id:
            header["kid"] = self.private_key_id
        claims: dict[str, Any] = {
            "iss": self.client_email,
            "scope": " ".join(self.scopes),
            "aud": self.token_uri,
            "iat": issued,
            "exp": issued + int(ASSERTION_LIFETIME.total_seconds()),
        }
        if self.subject:
            claims["sub"] = self.subject
        signing_input = f"{b64url(_ENCODER.encode(header))}.{b64url(_ENCODER.encode(claims))}"
        signature = rs256_sign(self._key, signing_input.encode("ascii"))
        return Secret(f"{signing_input}.{b64url(signature)}")

    async def exchange(self, transport: HttpTransport, *, clock: Clock | None = None) -> AccessToken:
        """A fresh access token for a new assertion (the `TokenSource` of `token_cache`).

        Raises:
            AuthError: the endpoint refused the assertion or could not be reached (after the retry policy's retries on
                5xx and 429), or its answer is not a token.
        """
        now = (clock or transport.clock).now()
        assertion = self.assertion(now)
        body = urlencode({"grant_type": JWT_BEARER_GRANT, "assertion": assertion.reveal()}).encode("ascii")
        host = self.token_uri.split("/")[2]
        call = HttpCall(
            "POST",
            self.token_uri,
            host,
            headers=Headers({"content-type": "application/x-www-form-urlencoded", "accept": "application/json"}),
            body=body,
            secrets=(assertion, self._private_key),
            error_detail=_oauth_error,
        )
        try:
            with capturing_raw_exchange(RawExchange()):  # never recorded with a model call's raw exchange
                response = await transport.send(call)
        except ProviderError as error:
            hint = ""
            if any(word in error.message.lower() for word in _CLOCK_WORDS):
                hint = f" (the assertion was issued at {now.isoformat()} by this machine's clock: check the clock)"
            status = f" (HTTP {error.status})" if error.status is not None else ""
            # No status on the AuthError itself: the token endpoint's 5xx was already retried, and the call it was for
            # must not be retried for it again.
            raise AuthError(
                f"the token endpoint refused the service account's assertion{status}: {error.message}{hint}",
                provider=host,
                request_id=error.request_id,
            ) from error
        try:
            answer = _token_answer.decode(response.content)
        except (msgspec.DecodeError, msgspec.ValidationError):
            raise AuthError(
                "the token endpoint's answer has no access_token and integer expires_in", provider=host
            ) from None
        if answer.token_type.lower() != "bearer" or not answer.access_token or answer.expires_in <= 0:
            raise AuthError("the token endpoint's answer is not a bearer token with a lifetime", provider=host)
        return AccessToken(answer.access_token, now + dt.timedelta(seconds=answer.expires_in))

    def token_cache(self, *, clock: Clock | None = None) -> TokenCache:
        """A cache of this account's access tokens: one exchange per token, refreshed five minutes early."""

        async def source(transport: HttpTransport) -> AccessToken:
            return await self.exchange(transport, clock=clock)

        return TokenCache(source, clock=clock, what="access token")


TokenDelegate = Callable[[], Awaitable[Any]]
"""An async function that returns a fresh `AccessToken` (or an object with `token` and `expires_on`/`expires_at`)."""


class GoogleBearerAuth:
    """Google OAuth bearer tokens for Vertex AI calls: from a service account's token cache, or from a delegate of
    yours (which then replaces the exchange; its tokens are cached and refreshed five minutes early too).

    <!-- skip: next "needs a service-account file and a token function of the host's" -->

    ```python
    auth = GoogleBearerAuth(GoogleServiceAccount.from_file("service-account.json").token_cache())
    auth = GoogleBearerAuth(my_token_function)  # async, returns AccessToken(token, expires_at)
    ```
    """

    __slots__ = ("_account", "cache")

    def __init__(
        self, source: TokenCache | GoogleServiceAccount | TokenDelegate, *, clock: Clock | None = None
    ) -> None:
        self._account: GoogleServiceAccount | None = None
        if isinstance(source, TokenCache):
            self.cache = source
        elif isinstance(source, GoogleServiceAccount):
            self._account = source
            self.cache = source.token_cache(clock=clock)
        elif callable(source):
            delegate = source

            async def fetch(transport: HttpTransport) -> object:
                return await delegate()

            self.cache = TokenCache(fetch, clock=clock, what="access token")
        else:
            raise ConfigurationError(
                "GoogleBearerAuth takes a token cache, a service account or an async token function", setting="auth"
            )

    def __repr__(self) -> str:
        return f"GoogleBearerAuth({self.cache!r})"

    @property
    def secrets(self) -> tuple[Secret, ...]:
        return self._account.secrets if self._account is not None else ()

    async def grant(self, call: HttpCall, transport: HttpTransport) -> Grant:
        """The `Authorization: Bearer` header for one attempt (an `Authorizer`)."""
        return await self.cache.grant(call, transport)


def bearer_auth(credentials: object, what: str) -> GoogleBearerAuth:
    """`credentials` as a `GoogleBearerAuth`: one already, a service account, or a token delegate."""
    if isinstance(credentials, GoogleBearerAuth):
        return credentials
    if isinstance(credentials, GoogleServiceAccount | TokenCache) or callable(credentials):
        return GoogleBearerAuth(credentials)
    raise ConfigurationError(
        f"{what} takes a GoogleServiceAccount, a GoogleBearerAuth or an async token function, "
        f"not {type(credentials).__name__}",
        setting="credentials",
    )


def project_of(credentials: object, given: str | None) -> str | None:
    if given is not None:
        return given
    if isinstance(credentials, GoogleServiceAccount):
        return credentials.project_id
    return None


_publish("onellm", GoogleBearerAuth, GoogleServiceAccount)
