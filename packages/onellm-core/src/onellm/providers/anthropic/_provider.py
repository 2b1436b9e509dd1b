"""`AnthropicProvider`: the Messages API on Anthropic's own deployment (`https://api.anthropic.com`), whole and
streamed, with token counting and message batches."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import httpx
import msgspec

from onellm.errors import AuthError, MalformedResponseError, ModelNotFoundError, ProviderError, Secret
from onellm.messages import CallWarning, Message
from onellm.messages._events import StreamEvent
from onellm.providers._http import HttpCall, HttpTransport, decode_json
from onellm.providers._request import ChatRequest, ChatResponse, FinishReason
from onellm.providers._retry import RetryPolicy
from onellm.providers._stream import collect, sse_stream
from onellm.providers.anthropic._codec import (
    DEFAULT_API_VERSION,
    PROVIDER,
    MessagesStreamDecoder,
    classify_error,
    count_tokens_body,
    decode_message,
    encode_messages_request,
    message_from_data,
    message_response,
)

if TYPE_CHECKING:
    from onellm.catalog import Catalog, ResolvedModel
    from onellm.clock import Clock

__all__ = ["DEFAULT_MAX_TOKENS", "AnthropicProvider", "collect"]

DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_MAX_TOKENS = 4096
"""`max_tokens` sent when neither the request, the provider nor the catalog gives one (the API requires it)."""

_ENCODER = msgspec.json.Encoder(decimal_format="number")


class AnthropicProvider:
    """Anthropic's Messages API. The key comes from the argument or `ANTHROPIC_API_KEY` and is sent as `x-api-key`;
    the base URL from the argument, the catalog, or `ANTHROPIC_BASE_URL`. `max_tokens` is the request's, else
    `max_tokens` given here, else the catalog's `maxOutputTokens` for the model (`catalog`: a `Catalog`, `True` for
    the shipped one, the default, or `False` for none), else 4096 with a warning. `api_version` is the `anthropic-version` header; from 2026-10-21 on the API rejects
    sampling parameters, and the codec leaves them out with a warning.

    ```python
    async with AnthropicProvider(catalog=Catalog.shipped()) as claude:
        answer = await claude.send(ChatRequest("claude-sonnet-5-5", [Message(user=[TextPart("Hello")])]))
    ```
    """

    def __init__(
        self,
        *,
        api_key: Secret | str | None = None,
        base_url: str | None = None,
        api_version: str = DEFAULT_API_VERSION,
        max_tokens: int | None = None,
        catalog: Catalog | bool = True,
        betas: Sequence[str] = (),
        name: str = PROVIDER,
        http_client: httpx.AsyncClient | None = None,
        retry: RetryPolicy | None = None,
        clock: Clock | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        from onellm.providers._http import base_url as pick_base_url

        if api_key is None:
            env = os.environ.get("ANTHROPIC_API_KEY")
            api_key = Secret(env) if env else None
        self.name = name
        self.base_url = pick_base_url(DEFAULT_BASE_URL, variable="ANTHROPIC_BASE_URL", configured=base_url)
        self.api_version = api_version
        self.max_tokens = max_tokens
        self._catalog: Catalog | bool = catalog
        self._catalog_limits: dict[str, int | None] = {}
        self._key = Secret(api_key) if isinstance(api_key, str) else api_key
        self._transport = HttpTransport(http_client, retry=retry, clock=clock)
        self._headers = {
            "content-type": "application/json",
            "accept": "application/json",
            "anthropic-version": api_version,
            **(headers or {}),
        }
        if betas:
            self._headers["anthropic-beta"] = ",".join(betas)
        if self._key:
            self._headers["x-api-key"] = self._key.reveal()

    @classmethod
    def from_resolved(cls, resolved: ResolvedModel, **options: Any) -> AnthropicProvider:
        """A provider for a model the catalog resolved: its base URL, its key variable, and its `maxOutputTokens`."""
        if "api_key" not in options and resolved.api_key_env_var:
            key = os.environ.get(resolved.api_key_env_var)
            options["api_key"] = Secret(key) if key else None
        options.setdefault("base_url", resolved.base_url)
        options.setdefault("max_tokens", resolved.entry.max_output_tokens)
        return cls(**options)

    # -- calls ------------------------------------------------------------------------------------------------------

    def _call(self, method: str, path: str, body: Mapping[str, Any] | None = None, *, stream: bool = False) -> HttpCall:
        if not self._key:
            raise AuthError(
                "No API key. Set the environment variable ANTHROPIC_API_KEY or pass api_key.", provider=self.name
            )
        headers = self._headers
        if stream:
            headers = {**headers, "accept": "text/event-stream"}
        return HttpCall(
            method,
            f"{self.base_url}{path}",
            self.name,
            headers=headers,
            body=_ENCODER.encode(body) if body is not None else None,
            secrets=(self._key,),
            classify=classify_error,
        )

    def _max_tokens(self, request: ChatRequest) -> int:
        if request.max_output_tokens is not None:
            return request.max_output_tokens
        if self.max_tokens is not None:
            return self.max_tokens
        if self._catalog is not False:
            if request.model not in self._catalog_limits:
                if self._catalog is True:
                    from onellm.catalog import Catalog

                    self._catalog = Catalog.shipped()
                assert not isinstance(self._catalog, bool)
                try:
                    limit = self._catalog.resolve(request.model).entry.max_output_tokens
                except ModelNotFoundError:
                    limit = None
                self._catalog_limits[request.model] = limit
            found = self._catalog_limits[request.model]
            if found is not None:
                return int(found)
        request.warnings.append(
            CallWarning(
                kind="parameter_defaulted",
                message=f"no max_tokens for {request.model} in the request or the catalog; "
                f"{DEFAULT_MAX_TOKENS} was sent",
                detail={"parameter": "max_tokens", "value": DEFAULT_MAX_TOKENS},
            )
        )
        return DEFAULT_MAX_TOKENS

    def encode(self, request: ChatRequest, *, stream: bool = False) -> dict[str, Any]:
        """The `/v1/messages` body this provider sends for a request."""
        return encode_messages_request(
            request, max_tokens=self._max_tokens(request), api_version=self.api_version, stream=stream
        )

    async def send(self, request: ChatRequest) -> ChatResponse:
        call = self._call("POST", "/v1/messages", self.encode(request))
        response = await self._transport.send(call)
        return decode_message(response.content, warnings=request.warnings)

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        call = self._call("POST", "/v1/messages", self.encode(request, stream=True), stream=True)
        async for item in sse_stream(
            self._transport, call, MessagesStreamDecoder(), unfinished="the stream ended before message_stop"
        ):
            yield item

    async def count_tokens(self, request: ChatRequest) -> int:
        """The input tokens Anthropic counts for this request (`/v1/messages/count_tokens`)."""
        body = count_tokens_body(self.encode(request))
        response = await self._transport.send(self._call("POST", "/v1/messages/count_tokens", body))
        data = decode_json(response.content, provider=self.name, what="token count")
        count = data.get("input_tokens") if isinstance(data, dict) else None
        if not isinstance(count, int):
            raise MalformedResponseError("the token count has no integer input_tokens", provider=self.name)
        return count

    # -- batches ----------------------------------------------------------------------------------------------------

    async def submit_batch(self, requests: Sequence[ChatRequest]) -> str:
        """Submit requests as one message batch (`custom_id` `request-<n>`, in order); returns the batch id."""
        if not requests:
            raise ValueError("a batch needs at least one request")
        items = [{"custom_id": f"request-{n}", "params": self.encode(r)} for n, r in enumerate(requests)]
        response = await self._transport.send(self._call("POST", "/v1/messages/batches", {"requests": items}))
        data = decode_json(response.content, provider=self.name, what="batch")
        batch_id = data.get("id") if isinstance(data, dict) else None
        if not isinstance(batch_id, str):
            raise MalformedResponseError("the batch has no id", provider=self.name)
        return batch_id

    async def get_batch(self, batch_id: str) -> dict[str, Any]:
        """The batch as Anthropic reports it (`processing_status`, `request_counts`, `results_url`, ...)."""
        response = await self._transport.send(self._call("GET", f"/v1/messages/batches/{_batch_path(batch_id)}"))
        data = decode_json(response.content, provider=self.name, what="batch")
        if not isinstance(data, dict):
            raise MalformedResponseError("the batch is not an object", provider=self.name)
        return data

    async def batch_results(self, batch_id: str) -> list[ChatResponse]:
        """The answers of an ended batch, in the order the requests were submitted. A request that failed, was
        canceled or expired gives a response with no content, finish reason `OTHER`, the result type as the
        provider's finish reason and the result under `extra["batch_result"]`."""
        batch = await self.get_batch(batch_id)
        if batch.get("processing_status") != "ended":
            raise ProviderError(
                f"batch {batch_id} has not ended (processing_status {batch.get('processing_status')!r})",
                provider=self.name,
            )
        path = f"/v1/messages/batches/{_batch_path(batch_id)}/results"
        response = await self._transport.send(self._call("GET", path))
        found: dict[int, ChatResponse] = {}
        for number, line in enumerate(response.content.splitlines(), 1):
            if not line.strip():
                continue
            item = decode_json(line, provider=self.name, what=f"batch result line {number}")
            custom_id = item.get("custom_id") if isinstance(item, dict) else None
            if not isinstance(custom_id, str) or not custom_id.startswith("request-"):
                raise MalformedResponseError(
                    f"batch result line {number} has no custom_id this provider gave", provider=self.name
                )
            found[int(custom_id.removeprefix("request-"))] = self._batch_entry(item.get("result") or {})
        return [found[n] for n in sorted(found)]

    def _batch_entry(self, result: dict[str, Any]) -> ChatResponse:
        kind = result.get("type")
        if kind == "succeeded":
            return message_response(message_from_data(result.get("message")))
        return ChatResponse(
            message=Message(),
            usage=None,
            finish_reason=FinishReason.OTHER,
            provider_finish_reason=str(kind),
            extra={"batch_result": result},
        )

    # -- lifetime ---------------------------------------------------------------------------------------------------

    async def aclose(self) -> None:
        await self._transport.aclose()

    async def __aenter__(self) -> AnthropicProvider:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _batch_path(batch_id: str) -> str:
    if not batch_id or "/" in batch_id or "?" in batch_id or "#" in batch_id or batch_id in (".", ".."):
        raise ValueError(f"not a batch id: {batch_id!r}")
    return batch_id
