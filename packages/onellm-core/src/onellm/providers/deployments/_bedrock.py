"""`BedrockDeployment`: Claude through Amazon Bedrock Runtime, signed with SigV4 (or a Bedrock API key), no AWS SDK.

The wire (Bedrock Runtime's service model, botocore `bedrock-runtime/2023-09-30/service-2.json`): `POST
/model/{modelId}/invoke` and `/model/{modelId}/invoke-with-response-stream` on `bedrock-runtime.{region}.amazonaws.com`,
the body the Anthropic Messages body with `anthropic_version` added and no `model` or `stream` member (betas move from
the `anthropic-beta` header to an `anthropic_beta` list). The model id is percent-encoded in the path (`:` is `%3A`)
and signed encoded once more. The stream is the AWS binary event stream (`_eventstream`), whose `chunk` events carry
the Messages stream events, so a streamed answer builds the same message as a whole one.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import quote

from onellm._public import publish as _publish
from onellm.errors import AuthError, BadRequestError, ConfigurationError, ProviderError, Secret
from onellm.providers._http import Grant, Headers, HttpCall
from onellm.providers.deployments._common import Deployment, chain, checked_base_url, plain_name
from onellm.providers.deployments._eventstream import BedrockFrames
from onellm.providers.deployments._sigv4 import AwsCredentials, sign

if TYPE_CHECKING:
    from onellm.clock import Clock
    from onellm.providers._http import ErrorDetail, HttpTransport
    from onellm.providers._stream import FrameReader

__all__ = ["BEDROCK_MODEL_IDS", "DEFAULT_BEDROCK_VERSION", "BedrockDeployment"]

DEFAULT_BEDROCK_VERSION: Final = "bedrock-2023-05-31"
"""The `anthropic_version` Bedrock's Messages body carries."""

BEDROCK_MODEL_IDS: Final[Mapping[str, str]] = {
    "claude-3-haiku-20240307": "anthropic.claude-3-haiku-20240307-v1:0",
    "claude-3-sonnet-20240229": "anthropic.claude-3-sonnet-20240229-v1:0",
    "claude-3-opus-20240229": "anthropic.claude-3-opus-20240229-v1:0",
    "claude-3-5-sonnet-20240620": "anthropic.claude-3-5-sonnet-20240620-v1:0",
    "claude-3-5-sonnet-20241022": "anthropic.claude-3-5-sonnet-20241022-v2:0",
    "claude-3-5-haiku-20241022": "anthropic.claude-3-5-haiku-20241022-v1:0",
    "claude-3-7-sonnet-20250219": "anthropic.claude-3-7-sonnet-20250219-v1:0",
    "claude-sonnet-4-20250514": "anthropic.claude-sonnet-4-20250514-v1:0",
    "claude-opus-4-20250514": "anthropic.claude-opus-4-20250514-v1:0",
    "claude-opus-4-1-20250805": "anthropic.claude-opus-4-1-20250805-v1:0",
    "claude-sonnet-4-5-20250929": "anthropic.claude-sonnet-4-5-20250929-v1:0",
    "claude-haiku-4-5-20251001": "anthropic.claude-haiku-4-5-20251001-v1:0",
    "claude-opus-4-5-20251101": "anthropic.claude-opus-4-5-20251101-v1:0",
}
"""Anthropic's model names and the Bedrock base model ids that serve them; a name not listed maps to
`anthropic.<name>`."""

ENVIRONMENT_VARIABLES: Final = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_BEARER_TOKEN_BEDROCK",
)
"""The only variables `from_environment` reads: no config or credentials file, no instance metadata service."""

_REGION = re.compile(r"[a-z]{2}(?:-[a-z]+)+-[0-9]{1,2}")
_PROFILE = re.compile(r"[a-z]{2,8}(?:-[a-z]{2,8})?")
_MODEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,199}")
_EXACT = re.compile(
    r"[A-Za-z0-9][A-Za-z0-9._:-]{0,199}"
    r"|arn:aws(?:-[a-z]+)*:bedrock:[a-z0-9-]{1,20}:[0-9]{0,12}:[a-z-]{1,40}/[A-Za-z0-9._:-]{1,200}"
)
_PREFIXED = re.compile(r"(?:[a-z]{2,8}(?:-[a-z]{2,8})?\.)?anthropic\..+")
_CLOCK_MARKERS = ("signature expired", "signature not yet current", "request has expired")
_STREAM_ACCEPT = "application/vnd.amazon.eventstream"


class BedrockDeployment(Deployment):
    """Claude on Amazon Bedrock, for `AnthropicProvider(deployment=...)`.

    <!-- skip: next "reads AWS credentials from the environment; docs/deployments.md runs a whole Bedrock call" -->

    ```python
    bedrock = BedrockDeployment.from_environment("us-east-1", inference_profile="us")
    claude = AnthropicProvider(deployment=bedrock)
    ```

    Args:
        region: The AWS region (`us-east-1`), a plain name: it picks the host and the signing scope.
        credentials: An access key pair (and session token) to sign with (SigV4, service `bedrock`).
        api_key: A Bedrock API key, sent as `Authorization: Bearer` instead of a signature.
        inference_profile: `us`, `eu`, `apac`, `global`, ...: prefixes each model id for cross-region inference.
        model_ids: Model names mapped to exact model ids or ARNs (used as given, no profile prefix).
        anthropic_version: The `anthropic_version` the body carries.
        base_url: Another address for Bedrock Runtime (a VPC endpoint); https, or http to a loopback host.
        clock: The time signatures are made at; the provider's clock when not given.

    A model name maps to its id through `model_ids`, then the built-in `BEDROCK_MODEL_IDS`, then `anthropic.<name>`;
    an id already in Bedrock's form (`anthropic.`..., `us.anthropic.`...) is used as given. Message batches and token
    counting are refused before sending (`BadRequestError`). The provider's `api_version` still decides whether
    sampling parameters are sent (from 2026-10-21 on they are dropped; give an earlier one, such as `2023-06-01`, to keep
    them): Bedrock reads its own `anthropic_version` from the body, not the header.
    """

    name = "bedrock"
    serves = "AnthropicProvider"

    def __init__(
        self,
        region: str,
        *,
        credentials: AwsCredentials | None = None,
        api_key: Secret | str | None = None,
        inference_profile: str | None = None,
        model_ids: Mapping[str, str] | None = None,
        anthropic_version: str = DEFAULT_BEDROCK_VERSION,
        base_url: str | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.region = plain_name(region, "region", _REGION)
        key = api_key if isinstance(api_key, Secret) or api_key is None else Secret(api_key)
        if credentials is None and not key:
            raise ConfigurationError(
                "Bedrock needs AWS credentials or a Bedrock API key (or use BedrockDeployment.from_environment)",
                setting="credentials",
            )
        if credentials is not None and key:
            raise ConfigurationError("give AWS credentials or a Bedrock API key, not both", setting="api_key")
        self.credentials = credentials
        self._api_key: Secret | None = key or None
        self.inference_profile = (
            plain_name(inference_profile, "inference_profile", _PROFILE) if inference_profile is not None else None
        )
        exact: dict[str, str] = {}
        for name, value in (model_ids or {}).items():
            exact[name] = plain_name(value, f"model_ids[{name!r}]", _EXACT)
        self.model_ids: Mapping[str, str] = exact
        if not isinstance(anthropic_version, str) or not anthropic_version:
            raise ConfigurationError("anthropic_version must be a non-empty string", setting="anthropic_version")
        self.anthropic_version = anthropic_version
        suffix = "amazonaws.com.cn" if self.region.startswith("cn-") else "amazonaws.com"
        self.base_url = (
            checked_base_url(base_url, "base_url")
            if base_url is not None
            else f"https://bedrock-runtime.{self.region}.{suffix}"
        )
        self._clock = clock

    @classmethod
    def from_environment(
        cls, region: str, *, environ: Mapping[str, str] | None = None, **options: Any
    ) -> BedrockDeployment:
        """A deployment with the credentials of the standard AWS variables, and only those: `AWS_BEARER_TOKEN_BEDROCK`
        (a Bedrock API key, used when set), else `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY` with
        `AWS_SESSION_TOKEN` when set. No credentials file, profile or instance metadata is read.

        Raises:
            AuthError: neither an API key nor a whole key pair is set (the message names what is missing).
        """
        env = environ if environ is not None else os.environ
        bearer = env.get("AWS_BEARER_TOKEN_BEDROCK")
        if bearer:
            return cls(region, api_key=Secret(bearer), **options)
        access, secret = env.get("AWS_ACCESS_KEY_ID"), env.get("AWS_SECRET_ACCESS_KEY")
        if access and secret:
            token = env.get("AWS_SESSION_TOKEN") or None
            return cls(region, credentials=AwsCredentials(access, secret, token), **options)
        half = ""
        if access or secret:
            given, lacking = (
                ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
                if access
                else ("AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID")
            )
            half = f" ({given} is set but {lacking} is not)"
        raise AuthError(
            "No AWS credentials for Bedrock: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (with AWS_SESSION_TOKEN "
            f"for temporary credentials), or AWS_BEARER_TOKEN_BEDROCK for a Bedrock API key{half}."
        )

    def __repr__(self) -> str:
        auth = "api key" if self._api_key else "sigv4"
        return f"BedrockDeployment({self.region!r}, {auth}, inference_profile={self.inference_profile!r})"

    @property
    def secrets(self) -> tuple[Secret, ...]:
        if self._api_key:
            return (self._api_key,)
        return self.credentials.secrets if self.credentials is not None else ()

    # -- model ids ---------------------------------------------------------------------------------------------------

    def model_id(self, model: str) -> str:
        """The Bedrock model id (or ARN) a model name is sent as.

        Raises:
            BadRequestError: the name is not a plain model id (a `/`, a space, an escape): it would change the path.
        """
        exact = self.model_ids.get(model)
        if exact is not None:
            return exact
        if not isinstance(model, str) or not _MODEL.fullmatch(model):
            shown = repr(model)[:120]
            raise BadRequestError(
                f"{shown} is not a Bedrock model id (letters, digits and . _ : @ - only); to send an ARN or another "
                "exact id, map a name to it with model_ids=",
                provider="anthropic",
            )
        if _PREFIXED.fullmatch(model):
            found = model
            if self.inference_profile and model.startswith("anthropic."):
                found = f"{self.inference_profile}.{model}"
            return found
        found = BEDROCK_MODEL_IDS.get(model) or f"anthropic.{model}"
        return f"{self.inference_profile}.{found}" if self.inference_profile else found

    # -- calls -------------------------------------------------------------------------------------------------------

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
        model, data = self.claude_messages(
            provider, method, path, body, label="", batches="Bedrock batch inference jobs"
        )
        streamed = bool(data.pop("stream", False)) or stream
        wire = {"anthropic_version": self.anthropic_version, **data}
        headers.pop("anthropic-version", None)
        betas = headers.pop("anthropic-beta", None)
        if betas:
            wire["anthropic_beta"] = [beta.strip() for beta in betas.split(",") if beta.strip()]
        if streamed:
            headers["accept"] = _STREAM_ACCEPT
            headers["x-amzn-bedrock-accept"] = "application/json"
        else:
            headers["accept"] = "application/json"
        action = "invoke-with-response-stream" if streamed else "invoke"
        url = f"{self.base_url}/model/{quote(self.model_id(model), safe='')}/{action}"
        options["classify"] = chain(options.get("classify"), _classify)
        return self._build(
            provider,
            "POST",
            url,
            wire,
            headers,
            content_type,
            secrets,
            self._authorizer(streamed),
            **options,
        )

    def frames(self, provider: str) -> FrameReader:
        return BedrockFrames(provider=provider)

    def _authorizer(self, streamed: bool) -> Any:
        async def authorize(call: HttpCall, transport: HttpTransport) -> Grant:
            if self._api_key:
                return Grant({"authorization": f"Bearer {self._api_key.reveal()}"}, (self._api_key,))
            return self.sign(call, (self._clock or transport.clock).now(), streamed=streamed)

        return authorize

    def sign(self, call: HttpCall, when: Any, *, streamed: bool = False) -> Grant:
        """The SigV4 headers for `call` at `when`: `host`, `content-type`, `accept` (whole calls) and every `x-amz-*`
        header signed, with the body's hash."""
        import httpx

        assert self.credentials is not None
        url = httpx.URL(call.url)
        raw_path, _, raw_query = url.raw_path.decode("ascii").partition("?")
        headers = [("host", url.netloc.decode("ascii")), *call.headers.items()]
        signed = ["host", "content-type"]
        if not streamed:
            signed.append("accept")
        signed.extend(name for name in call.headers if name.lower().startswith("x-amz-"))
        result = sign(
            call.method,
            raw_path,
            raw_query,
            headers,
            call.body,
            credentials=self.credentials,
            region=self.region,
            service="bedrock",
            when=when,
            signed=[name for name in signed if any(name == h.lower() for h, _ in headers)],
        )
        return Grant(result.headers, self.credentials.secrets)


def _classify(error: ProviderError, detail: ErrorDetail | None) -> ProviderError:
    """A signature AWS refuses for its time is a clock that is off: say so."""
    if isinstance(error, AuthError):
        text = f"{detail.message if detail else ''} {error.message}".lower()
        if any(marker in text for marker in _CLOCK_MARKERS):
            return AuthError(
                f"{error.message} (AWS accepts a signature only within 5 minutes of its own time: check this "
                "machine's clock, or the clock given to the provider)",
                provider=error.provider,
                status=error.status,
                body=error.body,
                request_id=error.request_id,
            )
    return error


_publish("onellm", BedrockDeployment)
