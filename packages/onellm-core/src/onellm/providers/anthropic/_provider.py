"""`AnthropicProvider`: the Messages API on Anthropic's own deployment (`https://api.anthropic.com`), whole and
streamed, with token counting and message batches."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from onellm._public import publish as _publish
from onellm.errors import MalformedResponseError, ProviderError, Secret
from onellm.messages import CallWarning, Message
from onellm.providers._base import HttpProvider, path_segment, read_key
from onellm.providers._http import HttpCall, decode_json
from onellm.providers._request import ChatRequest, ChatResponse, FinishReason
from onellm.providers._stream import EventStream, collect
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
    import httpx

    from onellm.catalog import ModelProfile, ResolvedModel
    from onellm.clock import Clock
    from onellm.providers._http import ClientPool
    from onellm.providers._retry import RetryPolicy

__all__ = ["DEFAULT_MAX_TOKENS", "AnthropicProvider", "collect"]

DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_MAX_TOKENS = 4096
"""`max_tokens` sent when neither the request, the provider nor the model's profile gives one (the API requires it)."""


class AnthropicProvider(HttpProvider):
    """Anthropic's Messages API. The key comes from the argument or `ANTHROPIC_API_KEY` and is sent as `x-api-key`;
    the base URL from the argument, the catalog, or `ANTHROPIC_BASE_URL`. `max_tokens` is the request's, else
    `max_tokens` given here, else the request profile's `max_output_tokens` (the catalog's `maxOutputTokens`, which the
    runtime hands over), else 4096 with a warning. `api_version` is the `anthropic-version` header; from 2026-10-21 on
    the API rejects sampling parameters, and the codec leaves them out with a warning.

    ```python
    from onellm.catalog import Catalog
    from onellm.messages import Message, TextPart
    from onellm.providers import ChatRequest
    from onellm.providers.anthropic import AnthropicProvider

    claude = Catalog.shipped().resolve("claude-sonnet")
    async with AnthropicProvider() as provider:
        answer = await provider.send(
            ChatRequest(claude.name, [Message(user=[TextPart("Hello")])], profile=claude.profile)
        )
    ```
    """

    default_base_url = DEFAULT_BASE_URL
    base_url_variable = "ANTHROPIC_BASE_URL"
    key_variables = ("ANTHROPIC_API_KEY",)

    def __init__(
        self,
        *,
        api_key: Secret | str | None = None,
        base_url: str | None = None,
        api_version: str = DEFAULT_API_VERSION,
        max_tokens: int | None = None,
        betas: Sequence[str] = (),
        name: str = PROVIDER,
        http_client: httpx.AsyncClient | ClientPool | None = None,
        retry: RetryPolicy | None = None,
        clock: Clock | None = None,
        headers: Mapping[str, str] | None = None,
        **options: Any,
    ) -> None:
        if max_tokens is not None and max_tokens < 1:
            raise ValueError("max_tokens must be at least 1")
        fixed = {"anthropic-version": api_version}
        if betas:
            fixed["anthropic-beta"] = ",".join(betas)
        super().__init__(
            name=name,
            api_key=api_key,
            base_url=base_url,
            http_client=http_client,
            retry=retry,
            clock=clock,
            headers={**fixed, **(headers or {})},
            **options,
        )
        self.api_version = api_version
        self.max_tokens = max_tokens

    @classmethod
    def from_resolved(cls, resolved: ResolvedModel, **options: Any) -> AnthropicProvider:
        """A provider for a model the catalog resolved: its base URL and the key its variable holds. Per-model facts
        travel with each request (`ChatRequest.profile`), not here."""
        profile = resolved.profile
        options.setdefault("base_url", profile.base_url)
        if "api_key" not in options and profile.api_key_env_var:
            environ = options.get("environ")
            options["api_key"] = read_key(
                None, (profile.api_key_env_var,), environ if environ is not None else os.environ
            ) or Secret("")
        return cls(**options)

    def _auth_headers(self, key: Secret) -> dict[str, str]:
        return {"x-api-key": key.reveal()}

    # -- calls ------------------------------------------------------------------------------------------------------

    def _messages_call(self, body: Mapping[str, Any], path: str = "/v1/messages", *, stream: bool = False) -> HttpCall:
        return self._call("POST", path, body, stream=stream, classify=classify_error)

    def _max_tokens(self, request: ChatRequest, profile: ModelProfile, warnings: list[CallWarning]) -> int:
        if request.max_output_tokens is not None:
            return request.max_output_tokens
        if self.max_tokens is not None:
            return self.max_tokens
        if profile.max_output_tokens is not None:
            return profile.max_output_tokens
        warnings.append(
            CallWarning(
                kind="parameter_defaulted",
                message=f"no max_tokens for {request.model} in the request or the model's profile; "
                f"{DEFAULT_MAX_TOKENS} was sent",
                detail={"parameter": "max_tokens", "value": DEFAULT_MAX_TOKENS},
            )
        )
        return DEFAULT_MAX_TOKENS

    def encode(self, request: ChatRequest, *, stream: bool = False) -> tuple[dict[str, Any], list[CallWarning]]:
        """The `/v1/messages` body this provider sends for a request, and the notices about it."""
        warnings: list[CallWarning] = []
        max_tokens = self._max_tokens(request, self._profile(request), warnings)
        body, notices = encode_messages_request(
            request, max_tokens=max_tokens, api_version=self.api_version, stream=stream, reuse=True
        )
        return body, [*warnings, *notices]

    async def send(self, request: ChatRequest) -> ChatResponse:
        body, warnings = self.encode(request)
        given = [*request.warnings, *warnings]
        return await self._request(self._messages_call(body), lambda r: decode_message(r.content, warnings=given))

    def stream(self, request: ChatRequest) -> EventStream:
        """The streamed call's events; the stream's `warnings` hold the codec's notices once it is read."""

        def prepare() -> tuple[HttpCall, list[CallWarning]]:
            body, warnings = self.encode(request, stream=True)
            return self._messages_call(body, stream=True), warnings

        return self._events(prepare, MessagesStreamDecoder())

    async def count_tokens(self, request: ChatRequest) -> int:
        """The input tokens Anthropic counts for this request (`/v1/messages/count_tokens`)."""
        body = count_tokens_body(self.encode(request)[0])
        call = self._messages_call(body, "/v1/messages/count_tokens")
        data = await self._request(call, lambda r: decode_json(r.content, provider=self.name, what="token count"))
        count = data.get("input_tokens") if isinstance(data, dict) else None
        if not isinstance(count, int):
            raise MalformedResponseError("the token count has no integer input_tokens", provider=self.name)
        return count

    # -- batches ----------------------------------------------------------------------------------------------------

    async def submit_batch(self, requests: Sequence[ChatRequest]) -> str:
        """Submit requests as one message batch (`custom_id` `request-<n>`, in order); returns the batch id."""
        if not requests:
            raise ValueError("a batch needs at least one request")
        items = [{"custom_id": f"request-{n}", "params": self.encode(r)[0]} for n, r in enumerate(requests)]
        call = self._messages_call({"requests": items}, "/v1/messages/batches")
        data = await self._request(call, lambda r: decode_json(r.content, provider=self.name, what="batch"))
        batch_id = data.get("id") if isinstance(data, dict) else None
        if not isinstance(batch_id, str):
            raise MalformedResponseError("the batch has no id", provider=self.name)
        return batch_id

    async def get_batch(self, batch_id: str) -> dict[str, Any]:
        """The batch as Anthropic reports it (`processing_status`, `request_counts`, `results_url`, ...)."""
        call = self._call("GET", f"/v1/messages/batches/{_batch_path(batch_id)}", classify=classify_error)
        data = await self._request(call, lambda r: decode_json(r.content, provider=self.name, what="batch"))
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
        content = await self._request(self._call("GET", path, classify=classify_error), lambda r: r.content)
        found: dict[int, ChatResponse] = {}
        for number, line in enumerate(content.splitlines(), 1):
            if not line.strip():
                continue
            item = decode_json(line, provider=self.name, what=f"batch result line {number}")
            custom_id = item.get("custom_id") if isinstance(item, dict) else None
            if not isinstance(custom_id, str) or not custom_id.startswith("request-"):
                custom_id = ""
            position = custom_id.removeprefix("request-")
            if not position.isdigit():
                raise MalformedResponseError(
                    f"batch result line {number} has no custom_id this provider gave", provider=self.name
                )
            result = item.get("result")
            if not isinstance(result, dict):
                raise MalformedResponseError(f"batch result line {number} has no result object", provider=self.name)
            found[int(position)] = self._batch_entry(result)
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


def _batch_path(batch_id: str) -> str:
    return path_segment(batch_id, "batch id")


_publish("onellm", AnthropicProvider)
