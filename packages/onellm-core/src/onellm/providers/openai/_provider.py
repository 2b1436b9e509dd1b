"""`OpenAIProvider` (Responses by default, Chat Completions on request) and `OpenAICompatibleProvider` (Chat
Completions to any base URL, with the server's quirks from the catalog)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from decimal import Decimal
from typing import Any

import httpx
import msgspec

from onellm.clock import Clock
from onellm.errors import MalformedResponseError, Secret
from onellm.messages import Usage
from onellm.messages._events import MessageAccumulator, StreamEvent
from onellm.providers._http import HttpCall, HttpTransport, base_url, decode_json
from onellm.providers._protocols import EmbeddingRequest, EmbeddingResponse
from onellm.providers._request import ChatRequest, ChatResponse
from onellm.providers._retry import RetryPolicy
from onellm.providers._sse import SseDecoder
from onellm.providers.openai._chat import (
    ChatFlavor,
    ChatStreamDecoder,
    decode_chat_completion,
    encode_chat_request,
    response_from,
)
from onellm.providers.openai._responses import ResponsesStreamDecoder, decode_response, encode_responses_request

__all__ = ["OpenAICompatibleProvider", "OpenAIProvider", "collect"]

_ENCODER = msgspec.json.Encoder(decimal_format="number")


async def collect(events: AsyncIterator[StreamEvent]) -> ChatResponse:
    """Read a stream to its end and build the same `ChatResponse` a whole call gives."""
    accumulator = MessageAccumulator()
    async for event in events:
        accumulator.add(event)
    return response_from(accumulator)


class OpenAICompatibleProvider:
    """Chat Completions (and embeddings) against any server that speaks them: a preset from the catalog (`ollama`,
    `vllm`, `openrouter`, ...) or any base URL. Keys are `Secret`s and never appear in an error."""

    def __init__(
        self,
        *,
        base_url: str,
        api_key: Secret | str | None = None,
        name: str = "openai-compatible",
        properties: Mapping[str, Any] | None = None,
        http_client: httpx.AsyncClient | None = None,
        retry: RetryPolicy | None = None,
        clock: Clock | None = None,
        headers: Mapping[str, str] | None = None,
        first_party: bool = False,
    ) -> None:
        self.name = name
        self.base_url = base_url.rstrip("/")
        self._key = Secret(api_key) if isinstance(api_key, str) else api_key
        self.flavor = ChatFlavor.from_properties(name, properties or {}, first_party=first_party)
        self._transport = HttpTransport(http_client, retry=retry, clock=clock)
        self._headers = {"content-type": "application/json", "accept": "application/json", **(headers or {})}
        if self._key is not None and self._key:
            self._headers["authorization"] = f"Bearer {self._key.reveal()}"

    @classmethod
    def for_preset(
        cls,
        name: str,
        *,
        default_base_url: str,
        key_variable: str | None = None,
        properties: Mapping[str, Any] | None = None,
        **options: Any,
    ) -> OpenAICompatibleProvider:
        """A provider for a catalog preset: its base URL (overridable by the catalog), and its key from the
        environment variable the preset names."""
        import os

        key = os.environ.get(key_variable) if key_variable else None
        return cls(
            base_url=base_url(default_base_url, configured=options.pop("base_url", None)),
            api_key=Secret(key) if key else None,
            name=name,
            properties=properties,
            **options,
        )

    def _call(self, path: str, body: Mapping[str, Any], *, stream: bool = False) -> HttpCall:
        headers = dict(self._headers)
        if stream:
            headers["accept"] = "text/event-stream"
        return HttpCall(
            "POST",
            f"{self.base_url}{path}",
            self.name,
            headers=headers,
            body=_ENCODER.encode(body),
            secrets=(self._key,) if self._key else (),
        )

    async def send(self, request: ChatRequest) -> ChatResponse:
        body = encode_chat_request(request, self.flavor)
        response = await self._transport.send(self._call("/chat/completions", body))
        return decode_chat_completion(response.content, self.flavor, warnings=request.warnings)

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        body = encode_chat_request(request, self.flavor, stream=True)
        call = self._call("/chat/completions", body, stream=True)
        decoder = ChatStreamDecoder(self.flavor)
        sse = SseDecoder(provider=self.name)
        async with self._transport.stream(call) as response:
            async for chunk in self._transport.aiter_bytes(call, response):
                for event in sse.feed(chunk):
                    for item in decoder.feed(event.data):
                        yield item
                    if decoder.finished:
                        return
            for event in sse.close():
                for item in decoder.feed(event.data):
                    yield item
        if not decoder.finished:
            raise MalformedResponseError("the stream ended without [DONE]", provider=self.name)

    async def embed(self, request: EmbeddingRequest) -> EmbeddingResponse:
        body: dict[str, Any] = {"model": request.model, "input": list(request.inputs), "encoding_format": "float"}
        if request.dimensions is not None:
            body["dimensions"] = request.dimensions
        if request.user_id is not None:
            body["user"] = request.user_id
        body.update(request.extra_parameters)
        response = await self._transport.send(self._call("/embeddings", body))
        data = decode_json(response.content, provider=self.name, what="embeddings response")
        try:
            items = sorted(data["data"], key=lambda item: item["index"])
            vectors = [[float(x) for x in item["embedding"]] for item in items]
        except (KeyError, TypeError, ValueError) as error:
            raise MalformedResponseError(
                f"the embeddings response is not as documented: {error!r}", provider=self.name
            ) from error
        if len(vectors) != len(request.inputs):
            raise MalformedResponseError(
                f"asked for {len(request.inputs)} embeddings, got {len(vectors)}", provider=self.name
            )
        wire_usage = data.get("usage") or {}
        usage = Usage(model=data.get("model"), input_tokens=int(wire_usage.get("prompt_tokens", 0)))
        if self.flavor.usage_cost and wire_usage.get("cost") is not None:
            usage.cost = Decimal(str(wire_usage["cost"]))
        return EmbeddingResponse(vectors=vectors, usage=usage, model=data.get("model"))

    async def aclose(self) -> None:
        await self._transport.aclose()

    async def __aenter__(self) -> OpenAICompatibleProvider:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class OpenAIProvider(OpenAICompatibleProvider):
    """The OpenAI API. Speaks Responses by default (`api="chat"` for Chat Completions). The key comes from the
    argument or `OPENAI_API_KEY`; the base URL from the argument, the catalog, or `OPENAI_BASE_URL`."""

    def __init__(
        self,
        *,
        api_key: Secret | str | None = None,
        base_url: str | None = None,
        api: str = "responses",
        store: bool = False,
        properties: Mapping[str, Any] | None = None,
        name: str = "openai",
        **options: Any,
    ) -> None:
        import os

        from onellm.providers._http import base_url as pick_base_url

        if api not in ("responses", "chat"):
            raise ValueError(f"api must be 'responses' or 'chat', not {api!r}")
        if api_key is None:
            env = os.environ.get("OPENAI_API_KEY")
            api_key = Secret(env) if env else None
        super().__init__(
            base_url=pick_base_url("https://api.openai.com/v1", variable="OPENAI_BASE_URL", configured=base_url),
            api_key=api_key,
            name=name,
            properties=properties,
            first_party=True,
            **options,
        )
        self.api = api
        self.store = store
        self._properties = dict(properties or {})

    async def send(self, request: ChatRequest) -> ChatResponse:
        if self.api == "chat":
            return await super().send(request)
        body = encode_responses_request(request, store=self.store, properties=self._properties)
        response = await self._transport.send(self._call("/responses", body))
        return decode_response(response.content, warnings=request.warnings)

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        if self.api == "chat":
            async for piece in super().stream(request):
                yield piece
            return
        body = encode_responses_request(request, stream=True, store=self.store, properties=self._properties)
        call = self._call("/responses", body, stream=True)
        decoder = ResponsesStreamDecoder()
        sse = SseDecoder(provider=self.name)
        async with self._transport.stream(call) as response:
            async for chunk in self._transport.aiter_bytes(call, response):
                for event in sse.feed(chunk):
                    for item in decoder.feed(event.data):
                        yield item
                    if decoder.finished:
                        return
            for event in sse.close():
                for item in decoder.feed(event.data):
                    yield item
        if not decoder.finished:
            raise MalformedResponseError("the stream ended before the response completed", provider=self.name)
