"""`OpenAIProvider` (Responses by default, Chat Completions on request) and `OpenAICompatibleProvider` (Chat
Completions to any base URL, with the server's quirks from the model's profile). Both speak the Batch API."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import msgspec

from onellm._public import publish as _publish
from onellm.errors import MalformedResponseError, ProviderError, Secret, UnsupportedParameterError
from onellm.messages import CallWarning, Usage
from onellm.providers._base import HttpProvider, path_segment
from onellm.providers._http import HttpCall, decode_json
from onellm.providers._protocols import CompactedContext, EmbeddingRequest, EmbeddingResponse
from onellm.providers._request import ChatRequest, ChatResponse
from onellm.providers._stream import EventStream, collect
from onellm.providers.openai._chat import (
    ChatFlavor,
    ChatStreamDecoder,
    decode_chat_completion,
    encode_chat_request,
)
from onellm.providers.openai._media import OpenAIMedia
from onellm.providers.openai._responses import ResponsesStreamDecoder, decode_response, encode_responses_request

if TYPE_CHECKING:
    import httpx

    from onellm.catalog import ModelProfile
    from onellm.providers._decisions import DecisionRequest, DecisionResponse
    from onellm.providers._http import ClientPool

__all__ = ["OpenAICompatibleProvider", "OpenAIProvider", "collect"]

BATCH_WINDOW = "24h"


class OpenAICompatibleProvider(HttpProvider):
    """Chat Completions, embeddings and the Batch API against any server that speaks them: a preset from the catalog
    (`ollama`, `vllm`, `openrouter`, ...) or any base URL. The server's quirks are `properties` given here, with the
    request profile's (the catalog's provider, preset and model `properties`) over them. Keys are `Secret`s and never
    appear in an error."""

    key_required = False
    chat_endpoint = "/v1/chat/completions"
    """The `url` of each line of a batch input file."""

    def __init__(
        self,
        *,
        base_url: str,
        api_key: Secret | str | None = None,
        name: str = "openai-compatible",
        properties: Mapping[str, Any] | None = None,
        http_client: httpx.AsyncClient | ClientPool | None = None,
        first_party: bool = False,
        **options: Any,
    ) -> None:
        super().__init__(name=name, api_key=api_key, base_url=base_url, http_client=http_client, **options)
        self._properties = dict(properties or {})
        self._first_party = first_party
        self.flavor = ChatFlavor.from_properties(name, self._properties, first_party=first_party)
        """How this server speaks Chat Completions when a request carries no profile."""

    def _flavor(self, profile: ModelProfile) -> ChatFlavor:
        if profile.properties:
            merged = {**self._properties, **profile.properties}
            return ChatFlavor.from_properties(self.name, merged, first_party=self._first_party)
        return self.flavor

    # -- chat ------------------------------------------------------------------------------------------------------

    def _chat_call(
        self, request: ChatRequest, *, stream: bool = False
    ) -> tuple[HttpCall, ChatFlavor, list[CallWarning]]:
        flavor = self._flavor(self._profile(request))
        body, warnings = encode_chat_request(request, flavor, stream=stream, reuse=True)
        return self._call("POST", "/chat/completions", body, stream=stream), flavor, warnings

    async def send(self, request: ChatRequest) -> ChatResponse:
        call, flavor, warnings = self._chat_call(request)
        given = [*request.warnings, *warnings]
        return await self._request(call, lambda r: decode_chat_completion(r.content, flavor, warnings=given))

    def stream(self, request: ChatRequest) -> EventStream:
        """The streamed call's events; the stream's `warnings` hold the codec's notices once it is read."""
        flavor = self._flavor(self._profile(request))

        def prepare() -> tuple[HttpCall, list[CallWarning]]:
            body, warnings = encode_chat_request(request, flavor, stream=True, reuse=True)
            return self._call("POST", "/chat/completions", body, stream=True), warnings

        return self._events(prepare, ChatStreamDecoder(flavor))

    # -- embeddings ------------------------------------------------------------------------------------------------

    async def embed(self, request: EmbeddingRequest) -> EmbeddingResponse:
        body: dict[str, Any] = {"model": request.model, "input": list(request.inputs), "encoding_format": "float"}
        if request.dimensions is not None:
            body["dimensions"] = request.dimensions
        if request.user_id is not None:
            body["user"] = request.user_id
        body.update(request.extra_parameters)
        data = await self._request(
            self._call("POST", "/embeddings", body),
            lambda r: decode_json(r.content, provider=self.name, what="embeddings response"),
        )
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
        wire_usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        try:
            usage = Usage(model=data.get("model"), input_tokens=int(wire_usage.get("prompt_tokens", 0)))
            if self.flavor.usage_cost and wire_usage.get("cost") is not None:
                usage.cost = Decimal(str(wire_usage["cost"]))
        except (TypeError, ValueError, ArithmeticError) as error:
            raise MalformedResponseError(
                f"the embeddings usage is not as documented: {error!r}", provider=self.name
            ) from error
        return EmbeddingResponse(vectors=vectors, usage=usage, model=data.get("model"))

    # -- batches ---------------------------------------------------------------------------------------------------

    def _batch_endpoint(self) -> str:
        return self.chat_endpoint

    def _batch_body(self, request: ChatRequest) -> dict[str, Any]:
        return encode_chat_request(request, self._flavor(self._profile(request)))[0]

    def _batch_answer(self, body: bytes, request: ChatRequest | None) -> ChatResponse:
        flavor = self._flavor(request.profile) if request is not None and request.profile is not None else self.flavor
        return decode_chat_completion(body, flavor)

    async def submit_batch(self, requests: Sequence[ChatRequest]) -> str:
        """Upload the requests as one batch input file (a line each, `custom_id` `request-<n>` in order) and start the
        batch (24-hour window). Returns the batch id."""
        if not requests:
            raise ValueError("a batch needs at least one request")
        endpoint = self._batch_endpoint()
        lines = [
            _ENCODER.encode(
                {"custom_id": f"request-{i}", "method": "POST", "url": endpoint, "body": self._batch_body(r)}
            )
            for i, r in enumerate(requests)
        ]
        content, content_type = _multipart({"purpose": "batch"}, "onellm-batch.jsonl", b"\n".join(lines) + b"\n")
        upload = self._call("POST", "/files", content, content_type=content_type)
        uploaded = await self._request(upload, lambda r: _object(r.content, self.name, "file upload"))
        file_id = uploaded.get("id")
        if not isinstance(file_id, str) or not file_id:
            raise MalformedResponseError("the file upload answer has no id", provider=self.name)
        body = {"input_file_id": file_id, "endpoint": endpoint, "completion_window": BATCH_WINDOW}
        batch = await self._request(
            self._call("POST", "/batches", body), lambda r: _object(r.content, self.name, "batch")
        )
        batch_id = batch.get("id")
        if not isinstance(batch_id, str) or not batch_id:
            raise MalformedResponseError("the batch answer has no id", provider=self.name)
        return batch_id

    async def get_batch(self, batch_id: str) -> dict[str, Any]:
        """The batch object as the server reports it (`status`, `request_counts`, `output_file_id`, ...)."""
        call = self._call("GET", f"/batches/{path_segment(batch_id, 'batch id')}")
        return await self._request(call, lambda r: _object(r.content, self.name, "batch"))

    async def batch_results(self, batch_id: str, requests: Sequence[ChatRequest] | None = None) -> list[ChatResponse]:
        """The answers of a completed batch, in the order the requests were submitted (give the `requests` to read
        each answer with its model's profile). A failed request fails the read, naming it."""
        batch = await self.get_batch(batch_id)
        if batch.get("status") != "completed":
            raise ProviderError(f"batch {batch_id} is {batch.get('status')!r}, not completed", provider=self.name)
        counts = _mapping(batch.get("request_counts"))
        failed = counts.get("failed")
        if isinstance(failed, int) and failed > 0:
            raise ProviderError(
                f"batch {batch_id}: {failed} of {counts.get('total')} requests failed; their errors are in file "
                f"{batch.get('error_file_id')!r}",
                provider=self.name,
            )
        output = batch.get("output_file_id")
        if not isinstance(output, str) or not output:
            error_file = batch.get("error_file_id")
            raise ProviderError(
                f"batch {batch_id} has no output file" + (f" (errors in {error_file})" if error_file else ""),
                provider=self.name,
            )
        call = self._call("GET", f"/files/{path_segment(output, 'file id')}/content")
        content = await self._request(call, lambda r: r.content)
        total = counts.get("total")
        return self._decode_results(content, total if isinstance(total, int) else None, requests)

    def _decode_results(
        self, data: bytes, count: int | None, requests: Sequence[ChatRequest] | None
    ) -> list[ChatResponse]:
        """The output file's answers in submission order. A failed request fails the read, naming it."""
        answers: dict[int, ChatResponse] = {}
        for number, line in enumerate(data.splitlines(), start=1):
            if not line.strip():
                continue
            row = _object(line, self.name, f"batch output line {number}")
            custom_id = str(row.get("custom_id", ""))
            if not custom_id.startswith("request-") or not custom_id[8:].isdigit():
                raise MalformedResponseError(
                    f"batch output line {number} has custom_id {custom_id!r}, not one onellm wrote",
                    provider=self.name,
                )
            position = int(custom_id[8:])
            response = _mapping(row.get("response"))
            status = response.get("status_code")
            if row.get("error") or status != 200:
                body = _mapping(response.get("body"))
                detail = row.get("error") or body.get("error") or {}
                message = detail.get("message") if isinstance(detail, dict) else str(detail)
                raise ProviderError(
                    f"batch request {custom_id} failed: {message or 'no detail'}",
                    provider=self.name,
                    status=status if isinstance(status, int) else None,
                )
            request = requests[position] if requests is not None and position < len(requests) else None
            answers[position] = self._batch_answer(_ENCODER.encode(response.get("body")), request)
        expected = count if count is not None else (max(answers) + 1 if answers else 0)
        missing = [i for i in range(expected) if i not in answers]
        if missing:
            raise MalformedResponseError(f"the batch output lacks answers for request(s) {missing}", provider=self.name)
        return [answers[i] for i in range(expected)]


class OpenAIProvider(OpenAIMedia, OpenAICompatibleProvider):
    """The OpenAI API. Speaks Responses by default (`api="chat"` for Chat Completions), and makes images, speech,
    transcripts and moderation verdicts (`OpenAIMedia`). The key comes from the argument or `OPENAI_API_KEY`; the base
    URL from the argument, the catalog, or `OPENAI_BASE_URL`."""

    default_base_url = "https://api.openai.com/v1"
    base_url_variable = "OPENAI_BASE_URL"
    key_variables = ("OPENAI_API_KEY",)
    key_required = True

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
        if api not in ("responses", "chat"):
            raise ValueError(f"api must be 'responses' or 'chat', not {api!r}")
        super().__init__(
            base_url=base_url or "",
            api_key=api_key,
            name=name,
            properties=properties,
            first_party=True,
            **options,
        )
        self.api = api
        self.store = store

    def _responses_body(
        self, request: ChatRequest, *, stream: bool = False
    ) -> tuple[dict[str, Any], list[CallWarning]]:
        properties = {**self._properties, **self._profile(request).properties}
        return encode_responses_request(
            request,
            stream=stream,
            store=self.store,
            prompt_cache_options=bool(properties.get("promptCacheOptions")),
            reuse=True,
        )

    async def send(self, request: ChatRequest) -> ChatResponse:
        if self.api == "chat":
            return await super().send(request)
        body, warnings = self._responses_body(request)
        given = [*request.warnings, *warnings]
        return await self._request(
            self._call("POST", "/responses", body), lambda r: decode_response(r.content, warnings=given)
        )

    def stream(self, request: ChatRequest) -> EventStream:
        if self.api == "chat":
            return super().stream(request)

        def prepare() -> tuple[HttpCall, list[CallWarning]]:
            body, warnings = self._responses_body(request, stream=True)
            return self._call("POST", "/responses", body, stream=True), warnings

        return self._events(prepare, ResponsesStreamDecoder())

    async def count_tokens(self, request: ChatRequest) -> int:
        """The input tokens OpenAI counts for this request (`POST /responses/input_tokens`)."""
        full = self._responses_body(request)[0]
        body = {k: full[k] for k in _COUNT_FIELDS if k in full}
        data = await self._request(
            self._call("POST", "/responses/input_tokens", body),
            lambda r: decode_json(r.content, provider=self.name, what="token count"),
        )
        count = data.get("input_tokens") if isinstance(data, dict) else None
        if not isinstance(count, int) or count < 0:
            raise MalformedResponseError("the token count answer has no input_tokens", provider=self.name)
        return count

    @property
    def compacts_context(self) -> bool:
        """True when this provider speaks Responses to OpenAI's own API, which compacts a conversation
        (`POST /responses/compact`); False for Chat Completions and through a cloud deployment."""
        return self.api == "responses" and self._deployment is None

    async def compact_context(self, request: ChatRequest) -> CompactedContext:
        """Compact `request.messages` on OpenAI's side (`POST /responses/compact`, with the request's model,
        instructions and prompt cache options): the user messages OpenAI kept and its `compaction` item, whose
        encrypted content is sent back unchanged on later requests. See `onellm.providers.openai._compact`.

        Raises:
            UnsupportedParameterError: this provider cannot compact (`compacts_context` is False).
            ProviderError: the call failed; MalformedResponseError when the answer is not a compacted response.
        """
        from onellm.providers.openai._compact import compact_body, decode_compaction

        if not self.compacts_context:
            raise UnsupportedParameterError(
                f"the {self.name} provider compacts only over the Responses API of OpenAI itself",
                parameter="contextStrategy",
                model=request.model,
            )
        body, warnings = self._responses_body(request)
        compacted = await self._request(
            self._call("POST", "/responses/compact", compact_body(body)),
            lambda r: decode_compaction(r.content, request),
        )
        compacted.warnings[:0] = [*request.warnings, *warnings]
        return compacted

    async def decide(self, request: DecisionRequest) -> DecisionResponse:
        """One OpenAI Decisions request (`POST /decisions`); see `onellm.providers.openai._decisions`."""
        from onellm.providers.openai._decisions import decode_decisions_response, encode_decisions_request

        body = encode_decisions_request(request)
        return await self._request(
            self._call("POST", "/decisions", body),
            lambda r: decode_decisions_response(r.content, request, provider=self.name),
        )

    def _batch_endpoint(self) -> str:
        return "/v1/responses" if self.api == "responses" else self.chat_endpoint

    def _batch_body(self, request: ChatRequest) -> dict[str, Any]:
        if self.api == "responses":
            return self._responses_body(request)[0]
        return super()._batch_body(request)

    def _batch_answer(self, body: bytes, request: ChatRequest | None) -> ChatResponse:
        if self.api == "responses":
            return decode_response(body)
        return super()._batch_answer(body, request)


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

_ENCODER = msgspec.json.Encoder(decimal_format="number")


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _object(data: bytes, provider: str, what: str) -> dict[str, Any]:
    value = decode_json(data, provider=provider, what=what)
    if not isinstance(value, dict):
        raise MalformedResponseError(f"the {what} is not a JSON object", provider=provider)
    return value


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


_publish("onellm", OpenAICompatibleProvider, OpenAIProvider)
