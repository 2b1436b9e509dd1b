"""Vertex AI: Claude (`VertexAnthropicDeployment`) and Gemini (`VertexGeminiEndpoint`), with Google OAuth bearer tokens.

Claude (Anthropic's Vertex mapping, anthropic-sdk-python `src/anthropic/lib/vertex/_client.py`): `POST
/v1/projects/{p}/locations/{l}/publishers/anthropic/models/{model}:rawPredict` (`:streamRawPredict` for a stream), the
Messages body with `anthropic_version: vertex-2023-10-16`, no `model`, `stream` kept; the stream is server-sent events.

Gemini (googleapis `google/cloud/aiplatform/v1/prediction_service.proto`): `…/publishers/google/models/{model}:
generateContent` and `:streamGenerateContent?alt=sse` with the Gemini API's bodies; `countTokens` with `model`,
`contents`, `systemInstruction`, `tools` and `generationConfig` at the top level; `embedContent` one input per call,
`taskType` and `outputDimensionality` under `embedContentConfig`.

The host is `{location}-aiplatform.googleapis.com`, or `aiplatform.googleapis.com` for `global`; project and location
are plain names, so neither can move a request to another host or path.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from onellm._public import publish as _publish
from onellm.errors import BadRequestError, ConfigurationError, MalformedResponseError, Secret
from onellm.messages import CallWarning, Usage
from onellm.providers._base import path_segment
from onellm.providers._http import Headers, HttpCall
from onellm.providers._protocols import EmbeddingRequest, EmbeddingResponse
from onellm.providers.deployments._common import Deployment, checked_base_url, plain_name
from onellm.providers.deployments._google import GoogleBearerAuth, bearer_auth, project_of

if TYPE_CHECKING:
    from onellm.providers.gemini import GeminiProvider

__all__ = [
    "DEFAULT_VERTEX_VERSION",
    "VertexAnthropicDeployment",
    "VertexGeminiEndpoint",
    "embed_each",
    "vertex_model",
]

DEFAULT_VERTEX_VERSION: Final = "vertex-2023-10-16"
"""The `anthropic_version` Vertex's Claude body carries."""

_PROJECT = re.compile(r"[a-z][a-z0-9-]{4,61}[a-z0-9]")
_LOCATION = re.compile(r"[a-z][a-z0-9]{0,20}(?:-[a-z0-9]{1,20}){0,3}")
_CLAUDE_MODEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,199}")
_DATED = re.compile(r"(.+)-([0-9]{8})")
_GEMINI_PATH = re.compile(r"/(models|tunedModels)/([^/:?#]+):([A-Za-z]+)(\?[A-Za-z0-9=&_.-]*)?")
_COUNT_FIELDS = ("contents", "systemInstruction", "tools", "generationConfig")
_EMBED_CONFIG = ("taskType", "title", "autoTruncate", "outputDimensionality")


def _host(location: str, base_url: str | None) -> str:
    if base_url is not None:
        return checked_base_url(base_url, "base_url")
    return (
        "https://aiplatform.googleapis.com" if location == "global" else f"https://{location}-aiplatform.googleapis.com"
    )


def vertex_model(model: str) -> str:
    """A Claude model name as Vertex spells it: a trailing `-YYYYMMDD` date becomes `@YYYYMMDD`
    (`claude-sonnet-4-5-20250929` is `claude-sonnet-4-5@20250929`); a name with `@` already, or no date, is kept.

    Raises:
        BadRequestError: not a plain model name (a `/`, a space, an escape would change the path).
    """
    if not isinstance(model, str) or not _CLAUDE_MODEL.fullmatch(model):
        raise BadRequestError(f"{repr(model)[:120]} is not a Vertex model name", provider="anthropic")
    if "@" in model:
        return model
    dated = _DATED.fullmatch(model)
    return f"{dated.group(1)}@{dated.group(2)}" if dated else model


class VertexAnthropicDeployment(Deployment):
    """Claude on Vertex AI, for `AnthropicProvider(deployment=...)`.

    <!-- skip: next "needs a service-account file; docs/deployments.md runs a whole Vertex call" -->

    ```python
    account = GoogleServiceAccount.from_file("service-account.json")
    claude = AnthropicProvider(deployment=VertexAnthropicDeployment(account, "us-east5"))
    ```

    Args:
        credentials: A `GoogleServiceAccount`, a `GoogleBearerAuth`, or an async function returning an `AccessToken`.
        region: The Vertex location (`us-east5`, `europe-west1`, `global`), a plain name.
        project_id: The Google Cloud project (the service account's own when not given).
        anthropic_version: The `anthropic_version` the body carries.
        base_url: Another address for Vertex AI; https, or http to a loopback host.

    Message batches and token counting are refused before sending (`BadRequestError`). As on Bedrock, the provider's
    `api_version` decides whether sampling parameters are sent.
    """

    name = "vertex"
    serves = "AnthropicProvider"

    def __init__(
        self,
        credentials: object,
        region: str,
        *,
        project_id: str | None = None,
        anthropic_version: str = DEFAULT_VERTEX_VERSION,
        base_url: str | None = None,
    ) -> None:
        self.auth: GoogleBearerAuth = bearer_auth(credentials, "VertexAnthropicDeployment")
        self.region = plain_name(region, "region", _LOCATION)
        project = project_of(credentials, project_id)
        if project is None:
            raise ConfigurationError("Vertex AI needs a project: pass project_id=", setting="project_id")
        self.project_id = plain_name(project, "project_id", _PROJECT)
        if not isinstance(anthropic_version, str) or not anthropic_version:
            raise ConfigurationError("anthropic_version must be a non-empty string", setting="anthropic_version")
        self.anthropic_version = anthropic_version
        self.base_url = _host(self.region, base_url)

    def __repr__(self) -> str:
        return f"VertexAnthropicDeployment({self.project_id!r}, {self.region!r})"

    @property
    def secrets(self) -> tuple[Secret, ...]:
        return self.auth.secrets

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
            provider, method, path, body, label="Claude ", batches="Vertex AI batch prediction jobs"
        )
        streamed = bool(data.get("stream")) or stream
        wire = {"anthropic_version": self.anthropic_version, **data}
        headers.pop("anthropic-version", None)
        headers["accept"] = "text/event-stream" if streamed else "application/json"
        action = "streamRawPredict" if streamed else "rawPredict"
        url = (
            f"{self.base_url}/v1/projects/{self.project_id}/locations/{self.region}/publishers/anthropic/models/"
            f"{vertex_model(model)}:{action}"
        )
        return self._build(provider, "POST", url, wire, headers, content_type, secrets, self.auth.grant, **options)


class VertexGeminiEndpoint(Deployment):
    """Gemini on Vertex AI, for `GeminiProvider(deployment=...)`.

    <!-- skip: next "needs a service-account file; docs/deployments.md runs a whole Vertex call" -->

    ```python
    account = GoogleServiceAccount.from_file("service-account.json")
    gemini = GeminiProvider(deployment=VertexGeminiEndpoint(account.project_id, "us-central1", auth=account))
    ```

    Args:
        project_id: The Google Cloud project, a plain name.
        location: The Vertex location (`us-central1`, `global`), a plain name.
        auth: A `GoogleBearerAuth`, a `GoogleServiceAccount`, or an async function returning an `AccessToken`.
        base_url: Another address for Vertex AI; https, or http to a loopback host.

    Batches and files are refused before sending (`BadRequestError`): Vertex has them only as batch prediction jobs and
    Cloud Storage, which are not mapped.
    """

    name = "vertex"
    serves = "GeminiProvider"

    def __init__(self, project_id: str | None, location: str, *, auth: object, base_url: str | None = None) -> None:
        self.auth: GoogleBearerAuth = bearer_auth(auth, "VertexGeminiEndpoint")
        project = project_of(auth, project_id)
        if project is None:
            raise ConfigurationError("Vertex AI needs a project: pass project_id", setting="project_id")
        self.project_id = plain_name(project, "project_id", _PROJECT)
        self.location = plain_name(location, "location", _LOCATION)
        self.base_url = _host(self.location, base_url)

    def __repr__(self) -> str:
        return f"VertexGeminiEndpoint({self.project_id!r}, {self.location!r})"

    @property
    def secrets(self) -> tuple[Secret, ...]:
        return self.auth.secrets

    def resource(self, model: str) -> str:
        """The model's resource name, `projects/{p}/locations/{l}/publishers/google/models/{model}`."""
        return (
            f"projects/{self.project_id}/locations/{self.location}/publishers/google/models/"
            f"{path_segment(model, 'model name')}"
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
        if path.startswith(("/batches", "/files", "/upload", "/cachedContents")):
            raise self.refuse(
                provider, f"Gemini {path.split('/')[1]}", "Vertex keeps them in separate job and storage APIs"
            )
        route = _GEMINI_PATH.fullmatch(path)
        if route is None or method != "POST":
            raise self.refuse(provider, f"{method} {path}")
        kind, model, action, query = route.groups()
        if kind == "tunedModels":
            raise self.refuse(provider, "Gemini API tuned models", "call a tuned model's Vertex endpoint")
        if action in ("batchGenerateContent", "batchEmbedContents", "asyncBatchEmbedContent"):
            raise self.refuse(provider, f"Gemini {action}", "Vertex has batch prediction jobs, which are not mapped")
        if action not in ("generateContent", "streamGenerateContent", "countTokens", "embedContent"):
            raise self.refuse(provider, f"Gemini {action}")
        resource = self.resource(model)
        wire: Mapping[str, Any] | bytes | None = body
        if action == "countTokens" and isinstance(body, Mapping):
            inner = body.get("generateContentRequest", body)
            if not isinstance(inner, Mapping):
                raise BadRequestError("the token count request has no generateContentRequest", provider=provider)
            wire = {"model": resource, **{key: inner[key] for key in _COUNT_FIELDS if key in inner}}
        if stream:
            headers["accept"] = "text/event-stream"
        url = f"{self.base_url}/v1/{resource}:{action}{query or ''}"
        return self._build(provider, method, url, wire, headers, content_type, secrets, self.auth.grant, **options)


async def embed_each(provider: GeminiProvider, request: EmbeddingRequest) -> EmbeddingResponse:
    """Embeddings on Vertex: one `embedContent` call per input, answers in input order; `taskType`, `title`,
    `autoTruncate` and `outputDimensionality` go under `embedContentConfig`, other extra parameters at the top."""
    model = provider._model_path(request.model)
    config: dict[str, Any] = {}
    top: dict[str, Any] = {}
    for key, value in request.extra_parameters.items():
        (config if key in _EMBED_CONFIG else top)[key] = value
    if request.dimensions is not None:
        config["outputDimensionality"] = request.dimensions
    warnings: list[CallWarning] = []
    if request.user_id is not None:
        warnings.append(
            CallWarning(kind="parameter_stripped", message="Gemini embeddings take no end-user id; not sent")
        )
    vectors: list[list[float]] = []
    tokens = 0
    counted = False
    for text in request.inputs:
        body: dict[str, Any] = {"content": {"parts": [{"text": text}]}, **top}
        if config:
            body["embedContentConfig"] = config
        data = await provider._json(provider._gemini_call(f"{model}:embedContent", body), "embedding response")
        embedding = data.get("embedding")
        values = embedding.get("values") if isinstance(embedding, dict) else None
        try:
            vectors.append([float(x) for x in values])  # type: ignore[union-attr]
        except (TypeError, ValueError) as error:
            raise MalformedResponseError(
                f"the embedding response has no embedding.values: {error!r}", provider=provider.name
            ) from error
        usage = data.get("usageMetadata")
        if isinstance(usage, dict):
            count = usage.get("promptTokenCount", 0)
            if not isinstance(count, int) or isinstance(count, bool):
                raise MalformedResponseError(
                    "the embedding usage has no integer promptTokenCount", provider=provider.name
                )
            tokens += count
            counted = True
    return EmbeddingResponse(
        vectors=vectors,
        usage=Usage(model=request.model, input_tokens=tokens) if counted else None,
        model=request.model,
        warnings=warnings,
    )


_publish("onellm", VertexAnthropicDeployment, VertexGeminiEndpoint)
