"""`AzureOpenAIEndpoint`: OpenAI models on an Azure OpenAI or Foundry resource.

Two address forms (Azure OpenAI inference spec, `Azure/azure-rest-api-specs`
`specification/cognitiveservices/data-plane/AzureOpenAI/inference/stable/2024-10-21/inference.json`):

- v1 (the default): `{resource}/openai/v1/responses` (and `chat/completions`, `embeddings`, `batches`, `files`, the
  media routes), no `api-version`, the request's `model` (a JSON field or a form field) the deployment's name;
- deployment path: with `api_version`, chat, completions, embeddings, images (`images/generations`, `images/edits`)
  and audio (`audio/speech`, `audio/transcriptions`, `audio/translations`) go to
  `{resource}/openai/deployments/{deployment}/{route}?api-version={version}`; a JSON body then names no model (a
  transcription's form keeps its `model` field).

The key goes in the `api-key` header; a Microsoft Entra token (scope `https://cognitiveservices.azure.com/.default`)
from a delegate goes in `Authorization: Bearer`, refreshed five minutes before it expires. A 400 whose `error.code`
is `content_filter` is a `ContentFilterError` with the categories and severities of the filter's result.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Final

import msgspec

from onellm._public import publish as _publish
from onellm.errors import BadRequestError, ConfigurationError, ContentFilterError, ProviderError, Secret
from onellm.providers._http import Grant, Headers, HttpCall
from onellm.providers.deployments._common import (
    Deployment,
    TokenCache,
    chain,
    checked_base_url,
    plain_name,
)

if TYPE_CHECKING:
    from onellm.catalog import CatalogLayer
    from onellm.clock import Clock
    from onellm.providers._http import ErrorDetail, HttpTransport

__all__ = ["ENTRA_SCOPE", "AzureOpenAIEndpoint", "content_filter_categories"]

ENTRA_SCOPE: Final = "https://cognitiveservices.azure.com/.default"
"""The scope to ask a Microsoft Entra credential for."""

_DEPLOYMENT_ROUTES: Final = (
    "/chat/completions",
    "/completions",
    "/embeddings",
    "/images/generations",
    "/images/edits",
    "/audio/speech",
    "/audio/transcriptions",
    "/audio/translations",
)
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_VERSION = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}(?:-preview)?|preview|latest")
_json = msgspec.json.Decoder()
_exact = msgspec.json.Decoder(float_hook=Decimal)
_ENCODER = msgspec.json.Encoder(decimal_format="number")


def content_filter_categories(body: str | bytes | None) -> dict[str, dict[str, Any]]:
    """The categories of an Azure content-filter error body: `error.innererror.content_filter_result` as the service
    sends it (also `inner_error` / `content_filter_results`, the inference spec's spelling, and a `content_filters`
    list), each category with `filtered` and its `severity` or `detected`."""
    if not body:
        return {}
    try:
        data = _json.decode(body.encode("utf-8") if isinstance(body, str) else body)
    except (msgspec.DecodeError, RecursionError):
        return {}
    error = data.get("error") if isinstance(data, dict) else None
    if not isinstance(error, dict):
        return {}
    inner = error.get("innererror", error.get("inner_error"))
    if not isinstance(inner, dict):
        return {}
    found: dict[str, dict[str, Any]] = {}
    tables: list[Any] = [inner.get("content_filter_result"), inner.get("content_filter_results")]
    listed = inner.get("content_filters")
    if isinstance(listed, list):
        tables.extend(item.get("content_filter_results") for item in listed if isinstance(item, dict))
    for table in tables:
        if isinstance(table, dict):
            for name, result in table.items():
                if isinstance(result, dict) and isinstance(name, str):
                    found.setdefault(name, dict(result))
    return found


def _classify(error: ProviderError, detail: ErrorDetail | None) -> ProviderError:
    """A `content_filter` 400 with what the filter found."""
    if error.status != 400 or not (
        isinstance(error, ContentFilterError) or (detail is not None and detail.code == "content_filter")
    ):
        return error
    categories = content_filter_categories(error.body)
    filtered = ", ".join(
        f"{name} ({result.get('severity') if isinstance(result.get('severity'), str) else 'detected'})"
        for name, result in categories.items()
        if result.get("filtered")
    )
    message = f"{error.message} [filtered: {filtered}]" if filtered else error.message
    return ContentFilterError(
        message,
        categories=categories,
        provider=error.provider,
        status=error.status,
        body=error.body,
        request_id=error.request_id,
    )


class AzureOpenAIEndpoint(Deployment):
    """An Azure OpenAI (or Foundry) resource, for `OpenAIProvider(deployment=...)`.

    ```python
    from onellm import AzureOpenAIEndpoint, OpenAIProvider, Secret

    key = "my-azure-openai-key"
    azure = AzureOpenAIEndpoint("https://my-resource.openai.azure.com/", api_key=Secret(key))
    openai = OpenAIProvider(deployment=azure)
    ```

    Args:
        endpoint: The resource's address (`https://{resource}.openai.azure.com/`).
        api_key: The resource's key, sent as `api-key`.
        token_provider: Instead of a key, an async function returning a Microsoft Entra `AccessToken` for
            `ENTRA_SCOPE` (or what azure-identity's `get_token` returns); refreshed five minutes before expiry, one
            fetch serving concurrent callers.
        api_version: Switches chat, completions and embeddings to the deployment-path form with this `api-version`.
        deployments: Model names mapped to the names of the deployments that serve them (a model not listed is sent
            under its own name).
        clock: The time tokens expire by; the provider's clock when not given.
    """

    name = "azure"
    serves = "OpenAIProvider"

    def __init__(
        self,
        endpoint: str,
        api_key: Secret | str | None = None,
        *,
        token_provider: Callable[[], Awaitable[Any]] | None = None,
        api_version: str | None = None,
        deployments: Mapping[str, str] | None = None,
        clock: Clock | None = None,
    ) -> None:
        resource = checked_base_url(endpoint, "endpoint")
        for suffix in ("/openai/v1", "/openai"):
            if resource.endswith(suffix):
                resource = resource[: -len(suffix)]
        self.resource = resource
        """The resource's address, without `/openai`."""
        key = api_key if isinstance(api_key, Secret) or api_key is None else Secret(api_key)
        if bool(key) == (token_provider is not None):
            raise ConfigurationError(
                "Azure OpenAI needs an api_key or a token_provider (one of them)", setting="api_key"
            )
        self._api_key: Secret | None = key or None
        self.tokens: TokenCache | None = None
        """The Entra token cache, when a token provider was given."""
        if token_provider is not None:
            delegate = token_provider

            async def fetch(transport: HttpTransport) -> object:
                return await delegate()

            self.tokens = TokenCache(fetch, clock=clock, what="Microsoft Entra token")
        if api_version is not None:
            plain_name(api_version, "api_version", _VERSION)
        self.api_version = api_version
        mapped: dict[str, str] = {}
        for model, deployment in (deployments or {}).items():
            mapped[model] = plain_name(deployment, f"deployments[{model!r}]", _NAME)
        self.deployments: Mapping[str, str] = mapped
        self.base_url = f"{resource}/openai/v1"

    def __repr__(self) -> str:
        form = f"api_version={self.api_version!r}" if self.api_version else "v1"
        return f"AzureOpenAIEndpoint({self.resource!r}, {form})"

    @property
    def secrets(self) -> tuple[Secret, ...]:
        return (self._api_key,) if self._api_key else ()

    def deployment_for(self, model: str) -> str:
        """The deployment a model is sent to (its name in `deployments`, else the model's own name).

        Raises:
            BadRequestError: the name is not a plain deployment name (it would change the path).
        """
        name = self.deployments.get(model, model)
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise BadRequestError(f"{repr(name)[:120]} is not an Azure deployment name", provider="openai")
        return name

    def catalog_aliases(self, provider: str = "openai") -> CatalogLayer:
        """A catalog layer that makes each deployment name an alias of the model it serves, so a call by deployment
        name is priced, and adjusted, as the model."""
        from onellm.catalog import CatalogLayer

        aliases = {deployment: model for model, deployment in self.deployments.items() if deployment != model}
        return CatalogLayer.from_data({"name": provider, "aliases": aliases}, name="code")

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
        route, _, query = path.partition("?")
        wire: Mapping[str, Any] | bytes | None = body
        form = (
            (body, content_type)
            if isinstance(body, bytes) and content_type is not None and content_type.startswith("multipart/form-data")
            else None
        )
        if self.api_version and route in _DEPLOYMENT_ROUTES and (isinstance(body, Mapping) or form is not None):
            if isinstance(body, Mapping):
                data = dict(body)
                model = data.pop("model", None)
                wire = data
            else:  # a form (a transcription): the model is one of its fields, and stays there
                model = _form_model(*form) if form is not None else None
            if not isinstance(model, str):
                raise BadRequestError("the request names no model", provider=provider)
            url = (
                f"{self.resource}/openai/deployments/{self.deployment_for(model)}{route}?api-version={self.api_version}"
            )
            if query:
                url += f"&{query}"
        else:
            url = f"{self.base_url}{path}"
            if isinstance(body, Mapping) and isinstance(body.get("model"), str):
                wire = {**body, "model": self.deployment_for(body["model"])}
            elif isinstance(body, bytes) and route == "/files" and content_type and self.deployments:
                wire = self._batch_upload(body, content_type)
            elif form is not None and self.deployments:
                wire = _with_form_model(*form, self.deployment_for)
        if stream:
            headers["accept"] = "text/event-stream"
        options["classify"] = chain(options.get("classify"), _classify)
        return self._build(provider, method, url, wire, headers, content_type, secrets, self._grant, **options)

    async def _grant(self, call: HttpCall, transport: HttpTransport) -> Grant:
        if self._api_key:
            return Grant({"api-key": self._api_key.reveal()}, (self._api_key,))
        assert self.tokens is not None
        return await self.tokens.grant(call, transport)

    def _batch_upload(self, body: bytes, content_type: str) -> bytes:
        """A batch input file being uploaded, each line's `body.model` sent as its deployment's name."""
        match = re.search(r'boundary="?([^";]+)"?', content_type)
        if match is None:
            return body
        delimiter = b"--" + match.group(1).encode("ascii")
        parts = body.split(delimiter)
        for index, part in enumerate(parts):
            head, sep, content = part.partition(b"\r\n\r\n")
            if not sep or b'name="file"' not in head or not content.endswith(b"\r\n"):
                continue
            lines = content[:-2].split(b"\n")
            out: list[bytes] = []
            for line in lines:
                if not line.strip():
                    out.append(line)
                    continue
                try:
                    row = _exact.decode(line)
                except msgspec.DecodeError:
                    return body  # not a batch file of ours: sent as given
                inner = row.get("body") if isinstance(row, dict) else None
                if isinstance(inner, dict) and isinstance(inner.get("model"), str):
                    inner["model"] = self.deployment_for(inner["model"])
                out.append(_ENCODER.encode(row))
            parts[index] = head + sep + b"\n".join(out) + b"\r\n"
        return delimiter.join(parts)


def _form_parts(body: bytes, content_type: str) -> tuple[bytes, list[bytes]] | None:
    match = re.search(r'boundary="?([^";]+)"?', content_type)
    if match is None:
        return None
    delimiter = b"--" + match.group(1).encode("ascii")
    return delimiter, body.split(delimiter)


def _model_field(part: bytes) -> tuple[bytes, bytes] | None:
    """The head and the value of a form part that is the text field `model`, or None."""
    head, sep, content = part.partition(b"\r\n\r\n")
    if not sep or b"filename=" in head or b'name="model"' not in head or not content.endswith(b"\r\n"):
        return None
    return head + sep, content[:-2]


def _form_model(body: bytes, content_type: str) -> str | None:
    """The text of the `model` field of a `multipart/form-data` body, or None."""
    found = _form_parts(body, content_type)
    for part in found[1] if found is not None else ():
        field = _model_field(part)
        if field is not None:
            return field[1].decode("utf-8", "replace")
    return None


def _with_form_model(body: bytes, content_type: str, change: Callable[[str], str]) -> bytes:
    """The form with its `model` field changed by `change` (the body as given when it has none)."""
    found = _form_parts(body, content_type)
    if found is None:
        return body
    delimiter, parts = found
    for index, part in enumerate(parts):
        field = _model_field(part)
        if field is not None:
            parts[index] = field[0] + change(field[1].decode("utf-8", "replace")).encode() + b"\r\n"
    return delimiter.join(parts)


_publish("onellm", AzureOpenAIEndpoint)
