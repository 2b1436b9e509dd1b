"""`GeminiProvider`: the Gemini API (`generativelanguage.googleapis.com`, v1beta) for chat, streaming, token counting,
embeddings and batches."""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import httpx
import msgspec

from onellm.clock import Clock
from onellm.errors import (
    AuthError,
    MalformedResponseError,
    OnellmError,
    ProviderError,
    RateLimitError,
    Secret,
    UnsupportedParameterError,
)
from onellm.messages import Usage
from onellm.messages._events import MessageAccumulator, StreamEvent
from onellm.providers._http import ErrorDetail, HttpCall, HttpTransport, decode_json
from onellm.providers._protocols import EmbeddingRequest, EmbeddingResponse
from onellm.providers._request import ChatRequest, ChatResponse
from onellm.providers._retry import RetryPolicy
from onellm.providers._sse import SseDecoder
from onellm.providers.gemini._request import PROVIDER, encode_request
from onellm.providers.gemini._response import ResponseDecoder
from onellm.providers.openai._chat import response_from

if TYPE_CHECKING:
    from onellm.catalog import Catalog
    from onellm.messages import CallWarning

__all__ = ["GeminiProvider", "collect", "decode_generate_content", "gemini_error_detail"]

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"
_ENCODER = msgspec.json.Encoder(decimal_format="number")
_decode_exact = msgspec.json.Decoder(float_hook=Decimal).decode
"""JSON with non-integer numbers as exact decimals, as the stream reader decodes them."""
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)s$")


async def collect(events: AsyncIterator[StreamEvent]) -> ChatResponse:
    """Read a stream to its end and build the same `ChatResponse` a whole call gives."""
    accumulator = MessageAccumulator()
    async for event in events:
        accumulator.add(event)
    return response_from(accumulator)


def decode_generate_content(data: Any, *, warnings: list[CallWarning] | None = None) -> ChatResponse:
    """A whole `GenerateContentResponse` (bytes, or its decoded object) as a `ChatResponse`."""
    if isinstance(data, bytes | bytearray):
        try:
            data = _decode_exact(bytes(data))
        except msgspec.DecodeError as error:
            raise MalformedResponseError(f"the response is not valid JSON: {error}", provider=PROVIDER) from error
    if not isinstance(data, dict):
        raise MalformedResponseError("the answer is not a JSON object", provider=PROVIDER)
    decoder = ResponseDecoder()
    accumulator = MessageAccumulator()
    for event in decoder.feed_object(data):
        accumulator.add(event)
    for event in decoder.finish():
        accumulator.add(event)
    return response_from(accumulator, warnings)


def gemini_error_detail(body: bytes) -> ErrorDetail | None:
    """Gemini's error body (`google.rpc.Status` under `error`): its message, and as code the `ErrorInfo` reason when
    one is given (`API_KEY_INVALID`), else the status name (`RESOURCE_EXHAUSTED`)."""
    status = _status(body)
    if status is None:
        return None
    message = status.get("message")
    code: Any = None
    for detail in status.get("details") or ():
        if isinstance(detail, dict) and str(detail.get("@type", "")).endswith("google.rpc.ErrorInfo"):
            code = detail.get("reason")
    if not isinstance(code, str):
        code = status.get("status")
    return ErrorDetail(message if isinstance(message, str) else "", code if isinstance(code, str) else None)


def _status(body: bytes | str) -> dict[str, Any] | None:
    try:
        data = msgspec.json.decode(body)
    except msgspec.DecodeError:
        return None
    if isinstance(data, list) and data:
        data = data[0]
    error = data.get("error") if isinstance(data, dict) else None
    return error if isinstance(error, dict) else None


def _classify(error: ProviderError, detail: ErrorDetail | None) -> ProviderError:
    """A bad key arrives as a 400 `API_KEY_INVALID`; a 429's `RetryInfo` says how long to wait, and a per-day quota
    violation means the quota is spent (not retried)."""
    if detail is not None and detail.code == "API_KEY_INVALID":
        return AuthError(
            error.message, provider=error.provider, status=error.status, body=error.body, request_id=error.request_id
        )
    if isinstance(error, RateLimitError) and error.body:
        status = _status(error.body) or {}
        delay: dt.timedelta | None = None
        daily = False
        for item in status.get("details") or ():
            if not isinstance(item, dict):
                continue
            kind = str(item.get("@type", ""))
            if kind.endswith("google.rpc.RetryInfo"):
                match = _DURATION.match(str(item.get("retryDelay", "")))
                if match:
                    delay = dt.timedelta(seconds=float(match.group(1)))
            elif kind.endswith("google.rpc.QuotaFailure"):
                for violation in item.get("violations") or ():
                    if isinstance(violation, dict) and "perday" in str(violation.get("quotaId", "")).lower():
                        daily = True
        if delay is not None and error.retry_after is None:
            error.retry_after = delay
        if daily:
            error.quota_exhausted = True
        elif delay is not None:
            error.quota_exhausted = False  # a per-minute limit: the server says when to try again
    return error


class GeminiProvider:
    """The Gemini API. The key comes from the argument, `GEMINI_API_KEY` or `GOOGLE_API_KEY` and is sent in the
    `x-goog-api-key` header; the base URL from the argument, the catalog or `GOOGLE_GEMINI_BASE_URL`.

    Per model, structured output uses `responseJsonSchema` unless the model takes the OpenAPI-subset
    `responseSchema`, and thinking is a token budget or a level. `schema_form` and `thinking` set these for every
    model; otherwise `properties` (`schemaForm`, `thinking`) or, per model, the entry of `catalog` decide
    (`properties.schemaForm`, `thinking.budget`, `thinking.efforts`): the shipped catalog unless another is given,
    `False` for none.
    """

    def __init__(
        self,
        *,
        api_key: Secret | str | None = None,
        base_url: str | None = None,
        catalog: Catalog | bool | None = None,
        properties: Mapping[str, Any] | None = None,
        schema_form: str | None = None,
        thinking: str | None = None,
        name: str = PROVIDER,
        http_client: httpx.AsyncClient | None = None,
        retry: RetryPolicy | None = None,
        clock: Clock | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        from onellm.providers._http import base_url as pick_base_url

        if schema_form not in (None, "responseJsonSchema", "responseSchema"):
            raise ValueError(f"schema_form must be 'responseJsonSchema' or 'responseSchema', not {schema_form!r}")
        if thinking not in (None, "budget", "levels", "auto"):
            raise ValueError(f"thinking must be 'budget', 'levels' or 'auto', not {thinking!r}")
        if api_key is None:
            env = os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY")
            api_key = Secret(env) if env else None
        self.name = name
        self._key = Secret(api_key) if isinstance(api_key, str) else api_key
        self.base_url = pick_base_url(DEFAULT_BASE_URL, variable="GOOGLE_GEMINI_BASE_URL", configured=base_url)
        self._catalog = catalog
        self._properties = dict(properties or {})
        self._schema_form = schema_form
        self._thinking = thinking
        self._models: dict[str, tuple[str, str]] = {}
        self._transport = HttpTransport(http_client, retry=retry, clock=clock)
        self._headers = {"content-type": "application/json", "accept": "application/json", **(headers or {})}
        if self._key is not None and self._key:
            self._headers["x-goog-api-key"] = self._key.reveal()

    # -- plumbing --------------------------------------------------------------------------------------------------

    def _settings(self, model: str) -> tuple[str, str]:
        """(schema form, thinking style) for a model."""
        found = self._models.get(model)
        if found is not None:
            return found
        schema_form = self._schema_form or self._properties.get("schemaForm")
        thinking = self._thinking or self._properties.get("thinking")
        catalog = self._catalog
        if (schema_form is None or thinking is None) and catalog is not False:
            if catalog is None or catalog is True:
                from onellm.catalog import Catalog

                catalog = self._catalog = Catalog.shipped()
            try:
                resolved = catalog.resolve(model)
            except OnellmError:  # a model the catalog does not list: the defaults apply
                resolved = None
            if resolved is not None:
                schema_form = schema_form or resolved.properties.get("schemaForm")
                if thinking is None:
                    settings = resolved.entry.thinking
                    if settings is not None and not isinstance(settings, bool):
                        if settings.budget:
                            thinking = "budget"
                        elif settings.efforts:
                            thinking = "levels"
        found = (str(schema_form or "responseJsonSchema"), str(thinking or "auto"))
        self._models[model] = found
        return found

    def _body(self, request: ChatRequest) -> dict[str, Any]:
        schema_form, thinking = self._settings(request.model)
        return encode_request(request, schema_form=schema_form, thinking=thinking)

    def _model_path(self, model: str) -> str:
        return model if model.startswith(("models/", "tunedModels/")) else f"models/{model}"

    def _call(
        self, path: str, body: Mapping[str, Any] | None, *, method: str = "POST", stream: bool = False
    ) -> HttpCall:
        headers = dict(self._headers)
        if stream:
            headers["accept"] = "text/event-stream"
        return HttpCall(
            method,
            f"{self.base_url}/{path}",
            self.name,
            headers=headers,
            body=_ENCODER.encode(body) if body is not None else None,
            secrets=(self._key,) if self._key else (),
            error_detail=gemini_error_detail,
            classify=_classify,
        )

    def _json(self, response: httpx.Response, what: str) -> dict[str, Any]:
        data = decode_json(response.content, provider=self.name, what=what)
        if not isinstance(data, dict):
            raise MalformedResponseError(f"the {what} is not a JSON object", provider=self.name)
        return data

    # -- chat ------------------------------------------------------------------------------------------------------

    async def send(self, request: ChatRequest) -> ChatResponse:
        body = self._body(request)
        response = await self._transport.send(self._call(f"{self._model_path(request.model)}:generateContent", body))
        return decode_generate_content(response.content, warnings=request.warnings)

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        body = self._body(request)
        path = f"{self._model_path(request.model)}:streamGenerateContent?alt=sse"
        call = self._call(path, body, stream=True)
        decoder = ResponseDecoder()
        sse = SseDecoder(provider=self.name)
        async with self._transport.stream(call) as response:
            async for chunk in self._transport.aiter_bytes(call, response):
                for event in sse.feed(chunk):
                    for item in decoder.feed(event.data):
                        yield item
            for event in sse.close():
                for item in decoder.feed(event.data):
                    yield item
        for item in decoder.finish(require_finish_reason=True):
            yield item

    async def count_tokens(self, request: ChatRequest) -> int:
        """The input tokens Gemini counts for this request (`models/*:countTokens` over the whole request)."""
        body = self._body(request)
        body.pop("serviceTier", None)
        inner = {"model": self._model_path(request.model), **body}
        call = self._call(f"{self._model_path(request.model)}:countTokens", {"generateContentRequest": inner})
        data = self._json(await self._transport.send(call), "token count")
        total = data.get("totalTokens", 0 if data == {} else None)
        if not isinstance(total, int) or total < 0:
            raise MalformedResponseError("the token count answer has no totalTokens", provider=self.name)
        return total

    # -- embeddings ------------------------------------------------------------------------------------------------

    async def embed(self, request: EmbeddingRequest) -> EmbeddingResponse:
        """Embeddings for many inputs in one `batchEmbedContents` call, in input order."""
        model = self._model_path(request.model)
        items: list[dict[str, Any]] = []
        for text in request.inputs:
            item: dict[str, Any] = {"model": model, "content": {"parts": [{"text": text}]}}
            if request.dimensions is not None:
                item["outputDimensionality"] = request.dimensions
            item.update(request.extra_parameters)
            items.append(item)
        warnings = []
        if request.user_id is not None:
            from onellm.messages import CallWarning

            warnings.append(
                CallWarning(kind="parameter_stripped", message="Gemini embeddings take no end-user id; not sent")
            )
        data = self._json(
            await self._transport.send(self._call(f"{model}:batchEmbedContents", {"requests": items})),
            "embeddings response",
        )
        try:
            vectors = [[float(x) for x in item["values"]] for item in data["embeddings"]]
        except (KeyError, TypeError, ValueError) as error:
            raise MalformedResponseError(
                f"the embeddings response is not as documented: {error!r}", provider=self.name
            ) from error
        if len(vectors) != len(request.inputs):
            raise MalformedResponseError(
                f"asked for {len(request.inputs)} embeddings, got {len(vectors)}", provider=self.name
            )
        usage = None
        wire_usage = data.get("usageMetadata")
        if isinstance(wire_usage, dict):
            usage = Usage(model=request.model, input_tokens=int(wire_usage.get("promptTokenCount") or 0))
        return EmbeddingResponse(vectors=vectors, usage=usage, model=request.model, warnings=warnings)

    # -- batches ---------------------------------------------------------------------------------------------------

    async def submit_batch(self, requests: Sequence[ChatRequest]) -> str:
        """Submit requests as one batch of inline requests (`models/*:batchGenerateContent`); returns the batch name
        (`batches/...`). Every request must name the same model: the batch names it once, in its address."""
        if not requests:
            raise UnsupportedParameterError("a batch needs at least one request", parameter="requests")
        model = requests[0].model
        for position, request in enumerate(requests):
            if request.model != model:
                raise UnsupportedParameterError(
                    f"requests[{position}] names model {request.model!r}; a Gemini batch runs one model ({model!r})",
                    parameter=f"requests[{position}].model",
                    model=request.model,
                )
        inlined = [
            {"request": self._body(request), "metadata": {"key": f"request-{i}"}} for i, request in enumerate(requests)
        ]
        body = {"batch": {"displayName": "onellm-batch", "inputConfig": {"requests": {"requests": inlined}}}}
        call = self._call(f"{self._model_path(model)}:batchGenerateContent", body)
        data = self._json(await self._transport.send(call), "batch")
        name = data.get("name")
        if not isinstance(name, str) or not name:
            raise MalformedResponseError("the batch answer has no name", provider=self.name)
        return name

    async def get_batch(self, batch_id: str) -> dict[str, Any]:
        """The batch operation as Gemini reports it (`name`, `metadata.state`, `done`, `response`, `error`)."""
        path = batch_id if batch_id.startswith("batches/") else f"batches/{batch_id}"
        return self._json(await self._transport.send(self._call(path, None, method="GET")), "batch")

    async def batch_results(self, batch_id: str) -> list[ChatResponse]:
        """The answers of a finished batch, in the order the requests were submitted. A failed request fails the read,
        naming it."""
        batch = await self.get_batch(batch_id)
        metadata = batch.get("metadata") if isinstance(batch.get("metadata"), dict) else {}
        state = metadata.get("state") if isinstance(metadata, dict) else None
        if isinstance(batch.get("error"), dict):
            raise ProviderError(
                f"batch {batch_id} failed: {batch['error'].get('message', '')}".rstrip(": "), provider=self.name
            )
        if not batch.get("done") or state not in (None, "BATCH_STATE_SUCCEEDED"):
            raise ProviderError(f"batch {batch_id} is {state or 'not done'}, not succeeded", provider=self.name)
        output = batch.get("response")
        if not isinstance(output, dict) and isinstance(metadata, dict):
            output = metadata.get("output")
        inlined = output.get("inlinedResponses") if isinstance(output, dict) else None
        rows = inlined.get("inlinedResponses") if isinstance(inlined, dict) else None
        if not isinstance(rows, list):
            file = output.get("responsesFile") if isinstance(output, dict) else None
            raise ProviderError(
                f"batch {batch_id} has no inline responses" + (f" (results are in file {file})" if file else ""),
                provider=self.name,
            )
        answers: list[tuple[int, ChatResponse]] = []
        for position, row in enumerate(rows):
            if not isinstance(row, dict):
                raise MalformedResponseError(f"batch response {position} is not an object", provider=self.name)
            key = (row.get("metadata") or {}).get("key") if isinstance(row.get("metadata"), dict) else None
            order = (
                int(key.rsplit("-", 1)[1]) if isinstance(key, str) and re.fullmatch(r"request-\d+", key) else position
            )
            if isinstance(row.get("error"), dict):
                raise ProviderError(
                    f"batch {batch_id}: request {order} failed: {row['error'].get('message', '')}", provider=self.name
                )
            if not isinstance(row.get("response"), dict):
                raise MalformedResponseError(f"batch response {position} has no response", provider=self.name)
            answers.append((order, decode_generate_content(row["response"])))
        answers.sort(key=lambda pair: pair[0])
        return [answer for _, answer in answers]

    # -- lifetime --------------------------------------------------------------------------------------------------

    async def aclose(self) -> None:
        await self._transport.aclose()

    async def __aenter__(self) -> GeminiProvider:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
