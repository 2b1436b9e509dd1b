"""`OpenAIProvider` (Responses by default, Chat Completions on request) and `OpenAICompatibleProvider` (Chat
Completions to any base URL, with the server's quirks from the catalog)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping, Sequence
from decimal import Decimal
from typing import Any

import httpx
import msgspec

from onellm.clock import Clock
from onellm.errors import AuthError, MalformedResponseError, ProviderError, Secret
from onellm.messages import Usage
from onellm.messages._events import StreamEvent
from onellm.providers._http import HttpCall, HttpTransport, decode_json
from onellm.providers._protocols import EmbeddingRequest, EmbeddingResponse
from onellm.providers._request import ChatRequest, ChatResponse
from onellm.providers._retry import RetryPolicy
from onellm.providers._stream import collect, sse_stream
from onellm.providers.openai._chat import (
    ChatFlavor,
    ChatStreamDecoder,
    decode_chat_completion,
    encode_chat_request,
)
from onellm.providers.openai._responses import ResponsesStreamDecoder, decode_response, encode_responses_request

__all__ = ["OpenAICompatibleProvider", "OpenAIProvider", "collect"]

_ENCODER = msgspec.json.Encoder(decimal_format="number")
_NO_DONE = "the stream ended without [DONE]"
_NOT_COMPLETED = "the stream ended before the response completed"


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
        async for event in sse_stream(self._transport, call, ChatStreamDecoder(self.flavor), unfinished=_NO_DONE):
            yield event

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

    def _call(self, path: str, body: Mapping[str, Any], *, stream: bool = False) -> HttpCall:
        if self._key is None or not self._key:
            raise AuthError(
                "No API key. Set the environment variable OPENAI_API_KEY or pass api_key=.", provider=self.name
            )
        return super()._call(path, body, stream=stream)

    async def send(self, request: ChatRequest) -> ChatResponse:
        if self.api == "chat":
            return await super().send(request)
        body = encode_responses_request(request, store=self.store, properties=self._properties)
        response = await self._transport.send(self._call("/responses", body))
        return decode_response(response.content, warnings=request.warnings)

    async def count_tokens(self, request: ChatRequest) -> int:
        """The input tokens OpenAI counts for this request (`POST /responses/input_tokens`)."""
        full = encode_responses_request(request, properties=self._properties)
        body = {k: full[k] for k in _COUNT_FIELDS if k in full}
        response = await self._transport.send(self._call("/responses/input_tokens", body))
        data = decode_json(response.content, provider=self.name, what="token count")
        count = data.get("input_tokens") if isinstance(data, dict) else None
        if not isinstance(count, int) or count < 0:
            raise MalformedResponseError("the token count answer has no input_tokens", provider=self.name)
        return count

    async def submit_batch(self, requests: Sequence[ChatRequest]) -> str:
        """Upload the requests as a batch file and start the batch (24-hour window). Returns the batch id."""
        batches = _Batches(self)
        content, content_type = _multipart({"purpose": "batch"}, "onellm-batch.jsonl", batches.lines(list(requests)))
        upload = self._call("/files", {})
        upload.body = content
        upload.headers = {**upload.headers, "content-type": content_type}
        uploaded = decode_json((await self._transport.send(upload)).content, provider=self.name, what="file upload")
        body = {"input_file_id": uploaded["id"], "endpoint": batches._endpoint(), "completion_window": "24h"}
        created = await self._transport.send(self._call("/batches", body))
        batch = decode_json(created.content, provider=self.name, what="batch")
        return str(batch["id"])

    async def get_batch(self, batch_id: str) -> dict[str, Any]:
        """The batch object as OpenAI reports it (`status`, `request_counts`, `output_file_id`, ...)."""
        call = self._call(f"/batches/{batch_id}", {})
        call.method, call.body = "GET", None
        data = decode_json((await self._transport.send(call)).content, provider=self.name, what="batch")
        if not isinstance(data, dict):
            raise MalformedResponseError("the batch answer is not an object", provider=self.name)
        return data

    async def batch_results(self, batch_id: str) -> list[ChatResponse]:
        """The answers of a completed batch, in the order the requests were submitted."""
        batch = await self.get_batch(batch_id)
        if batch.get("status") != "completed":
            raise ProviderError(f"batch {batch_id} is {batch.get('status')!r}, not completed", provider=self.name)
        counts = batch.get("request_counts") or {}
        failed = counts.get("failed")
        if isinstance(failed, int) and failed > 0:
            raise ProviderError(
                f"batch {batch_id}: {failed} of {counts.get('total')} requests failed; their errors are in file "
                f"{batch.get('error_file_id')!r}",
                provider=self.name,
            )
        output = batch.get("output_file_id")
        if not output:
            error_file = batch.get("error_file_id")
            raise ProviderError(
                f"batch {batch_id} has no output file" + (f" (errors in {error_file})" if error_file else ""),
                provider=self.name,
            )
        call = self._call(f"/files/{output}/content", {})
        call.method, call.body = "GET", None
        content = (await self._transport.send(call)).content
        total = counts.get("total")
        return _Batches(self).decode_results(content, total if isinstance(total, int) else None)

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        if self.api == "chat":
            async for piece in super().stream(request):
                yield piece
            return
        body = encode_responses_request(request, stream=True, store=self.store, properties=self._properties)
        call = self._call("/responses", body, stream=True)
        async for event in sse_stream(self._transport, call, ResponsesStreamDecoder(), unfinished=_NOT_COMPLETED):
            yield event


_COUNT_FIELDS = (
    "model",
    "input",
    "instructions",
    "tools",
    "text",
    "reasoning",
    "tool_choice",
    "parallel_tool_calls",
    "truncation",
)


class _Batches:
    """OpenAI's Batch API over a provider: requests go up as one JSONL file, answers come back as one."""

    def __init__(self, provider: OpenAIProvider) -> None:
        self.provider = provider

    def _endpoint(self) -> str:
        return "/v1/responses" if self.provider.api == "responses" else "/v1/chat/completions"

    def _body(self, request: ChatRequest) -> dict[str, Any]:
        if self.provider.api == "responses":
            return encode_responses_request(request, store=self.provider.store, properties=self.provider._properties)
        return encode_chat_request(request, self.provider.flavor)

    def lines(self, requests: list[ChatRequest]) -> bytes:
        """The batch input file: one request a line, `custom_id` holding its position."""
        endpoint = self._endpoint()
        rows = [
            _ENCODER.encode({"custom_id": f"request-{i}", "method": "POST", "url": endpoint, "body": self._body(r)})
            for i, r in enumerate(requests)
        ]
        return b"\n".join(rows) + b"\n"

    def decode_results(self, data: bytes, count: int | None) -> list[ChatResponse]:
        """The output file's answers in submission order. A failed request fails the read, naming it."""
        answers: dict[int, ChatResponse] = {}
        for number, line in enumerate(data.splitlines(), start=1):
            if not line.strip():
                continue
            row = decode_json(line, provider=self.provider.name, what=f"batch output line {number}")
            custom_id = str(row.get("custom_id", ""))
            if not custom_id.startswith("request-") or not custom_id[8:].isdigit():
                raise MalformedResponseError(
                    f"batch output line {number} has custom_id {custom_id!r}, not one onellm wrote",
                    provider=self.provider.name,
                )
            position = int(custom_id[8:])
            response = row.get("response") or {}
            status = response.get("status_code")
            if row.get("error") or status != 200:
                detail = row.get("error") or (response.get("body") or {}).get("error") or {}
                message = detail.get("message") if isinstance(detail, dict) else str(detail)
                raise ProviderError(
                    f"batch request {custom_id} failed: {message or 'no detail'}",
                    provider=self.provider.name,
                    status=status if isinstance(status, int) else None,
                )
            body = _ENCODER.encode(response.get("body"))
            if self.provider.api == "responses":
                answers[position] = decode_response(body)
            else:
                answers[position] = decode_chat_completion(body, self.provider.flavor)
        expected = count if count is not None else (max(answers) + 1 if answers else 0)
        missing = [i for i in range(expected) if i not in answers]
        if missing:
            raise MalformedResponseError(
                f"the batch output lacks answers for request(s) {missing}", provider=self.provider.name
            )
        return [answers[i] for i in range(expected)]


def _multipart(fields: Mapping[str, str], file_name: str, content: bytes) -> tuple[bytes, str]:
    boundary = "onellm-" + os.urandom(12).hex()
    parts: list[bytes] = []
    for name, value in fields.items():
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode())
    parts.append(
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{file_name}"\r\n'
            "Content-Type: application/jsonl\r\n\r\n"
        ).encode()
        + content
        + b"\r\n"
    )
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"
