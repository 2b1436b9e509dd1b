"""`GeminiProvider`: the Gemini API (`generativelanguage.googleapis.com`, v1beta) for chat, streaming, token counting,
embeddings, batches, images and speech."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import msgspec

from onellm._public import publish as _publish
from onellm.catalog import SCHEMA_FORMS
from onellm.errors import (
    AuthError,
    MalformedResponseError,
    ProviderError,
    RateLimitError,
    Secret,
    UnsupportedParameterError,
)
from onellm.messages import CallWarning, MessageAccumulator, Usage
from onellm.providers._base import HttpProvider, path_segment
from onellm.providers._http import ErrorDetail, HttpCall, decode_json
from onellm.providers._protocols import EmbeddingRequest, EmbeddingResponse
from onellm.providers._request import ChatRequest, ChatResponse
from onellm.providers._stream import EventStream, collect, response_from
from onellm.providers.gemini._media import GeminiMedia
from onellm.providers.gemini._request import PROVIDER, encode_request
from onellm.providers.gemini._response import ResponseDecoder

if TYPE_CHECKING:
    import httpx

    from onellm.providers._http import ClientPool

__all__ = ["GeminiProvider", "collect", "decode_generate_content", "gemini_error_detail"]

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"
_decode_exact = msgspec.json.Decoder(float_hook=Decimal).decode
"""JSON with non-integer numbers as exact decimals, as the stream reader decodes them."""
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)s$")


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


class GeminiProvider(GeminiMedia, HttpProvider):
    """The Gemini API (chat, and images and speech through `GeminiMedia`). The key comes from the argument, `GEMINI_API_KEY` or `GOOGLE_API_KEY` and is sent in the
    `x-goog-api-key` header; the base URL from the argument, the catalog or `GOOGLE_GEMINI_BASE_URL`.

    Per model, structured output uses `responseJsonSchema` unless the model takes the OpenAPI-subset
    `responseSchema`, and thinking is a token budget or a level. `schema_form` and `thinking` given here set these for
    every model; otherwise the request's profile decides (the catalog's `properties.schemaForm` and `thinking`), then
    `properties` given here (`schemaForm`, `thinking`), then the defaults (`responseJsonSchema`, decided per request).
    """

    default_base_url = DEFAULT_BASE_URL
    base_url_variable = "GOOGLE_GEMINI_BASE_URL"
    key_variables = ("GEMINI_API_KEY", "GOOGLE_API_KEY")

    def __init__(
        self,
        *,
        api_key: Secret | str | None = None,
        base_url: str | None = None,
        properties: Mapping[str, Any] | None = None,
        schema_form: str | None = None,
        thinking: str | None = None,
        name: str = PROVIDER,
        http_client: httpx.AsyncClient | ClientPool | None = None,
        **options: Any,
    ) -> None:
        if schema_form not in (None, *SCHEMA_FORMS):
            raise ValueError(f"schema_form must be 'responseJsonSchema' or 'responseSchema', not {schema_form!r}")
        if thinking not in (None, "budget", "levels", "auto"):
            raise ValueError(f"thinking must be 'budget', 'levels' or 'auto', not {thinking!r}")
        super().__init__(name=name, api_key=api_key, base_url=base_url, http_client=http_client, **options)
        self._properties = dict(properties or {})
        self._schema_form = schema_form
        self._thinking = thinking

    def _auth_headers(self, key: Secret) -> dict[str, str]:
        return {"x-goog-api-key": key.reveal()}

    # -- plumbing --------------------------------------------------------------------------------------------------

    def _settings(self, request: ChatRequest) -> tuple[str, str]:
        """(schema form, thinking style) for a request's model."""
        profile = self._profile(request)
        schema_form = self._schema_form or profile.schema_form or self._properties.get("schemaForm")
        thinking = self._thinking or profile.thinking or self._properties.get("thinking")
        return (
            schema_form if schema_form in SCHEMA_FORMS else "responseJsonSchema",
            thinking if thinking in ("budget", "levels") else "auto",
        )

    def _body(self, request: ChatRequest) -> tuple[dict[str, Any], list[CallWarning]]:
        schema_form, thinking = self._settings(request)
        return encode_request(request, schema_form=schema_form, thinking=thinking, reuse=True)

    def _model_path(self, model: str) -> str:
        if model.startswith(("models/", "tunedModels/")):
            kind, _, rest = model.partition("/")
            return f"{kind}/{path_segment(rest, 'model name')}"
        return f"models/{path_segment(model, 'model name')}"

    def _gemini_call(
        self, path: str, body: Mapping[str, Any] | None, *, method: str = "POST", stream: bool = False
    ) -> HttpCall:
        return self._call(method, f"/{path}", body, stream=stream, error_detail=gemini_error_detail, classify=_classify)

    async def _json(self, call: HttpCall, what: str) -> dict[str, Any]:
        data = await self._request(call, lambda r: decode_json(r.content, provider=self.name, what=what))
        if not isinstance(data, dict):
            raise MalformedResponseError(f"the {what} is not a JSON object", provider=self.name)
        return data

    # -- chat ------------------------------------------------------------------------------------------------------

    async def send(self, request: ChatRequest) -> ChatResponse:
        body, warnings = self._body(request)
        given = [*request.warnings, *warnings]
        call = self._gemini_call(f"{self._model_path(request.model)}:generateContent", body)
        return await self._request(call, lambda r: decode_generate_content(r.content, warnings=given))

    def stream(self, request: ChatRequest) -> EventStream:
        """The streamed call's events; the stream's `warnings` hold the codec's notices once it is read."""

        def prepare() -> tuple[HttpCall, list[CallWarning]]:
            body, warnings = self._body(request)
            path = f"{self._model_path(request.model)}:streamGenerateContent?alt=sse"
            return self._gemini_call(path, body, stream=True), warnings

        return self._events(prepare, ResponseDecoder())

    async def count_tokens(self, request: ChatRequest) -> int:
        """The input tokens Gemini counts for this request (`models/*:countTokens` over the whole request)."""
        body = self._body(request)[0]
        body.pop("serviceTier", None)
        inner = {"model": self._model_path(request.model), **body}
        call = self._gemini_call(f"{self._model_path(request.model)}:countTokens", {"generateContentRequest": inner})
        data = await self._json(call, "token count")
        total = data.get("totalTokens", 0 if data == {} else None)
        if not isinstance(total, int) or total < 0:
            raise MalformedResponseError("the token count answer has no totalTokens", provider=self.name)
        return total

    # -- embeddings ------------------------------------------------------------------------------------------------

    async def embed(self, request: EmbeddingRequest) -> EmbeddingResponse:
        """Embeddings for many inputs in one `batchEmbedContents` call, in input order (on Vertex AI, one
        `embedContent` call per input)."""
        if self.deployment == "vertex":
            from onellm.providers.deployments._vertex import embed_each

            return await embed_each(self, request)
        model = self._model_path(request.model)
        items: list[dict[str, Any]] = []
        for text in request.inputs:
            item: dict[str, Any] = {"model": model, "content": {"parts": [{"text": text}]}}
            if request.dimensions is not None:
                item["outputDimensionality"] = request.dimensions
            item.update(request.extra_parameters)
            items.append(item)
        warnings: list[CallWarning] = []
        if request.user_id is not None:
            warnings.append(
                CallWarning(kind="parameter_stripped", message="Gemini embeddings take no end-user id; not sent")
            )
        data = await self._json(
            self._gemini_call(f"{model}:batchEmbedContents", {"requests": items}), "embeddings response"
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
            count = wire_usage.get("promptTokenCount") or 0
            if not isinstance(count, int):
                raise MalformedResponseError("the embeddings usage has no integer promptTokenCount", provider=self.name)
            usage = Usage(model=request.model, input_tokens=count)
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
            {"request": self._body(request)[0], "metadata": {"key": f"request-{i}"}}
            for i, request in enumerate(requests)
        ]
        body = {"batch": {"displayName": "onellm-batch", "inputConfig": {"requests": {"requests": inlined}}}}
        data = await self._json(self._gemini_call(f"{self._model_path(model)}:batchGenerateContent", body), "batch")
        name = data.get("name")
        if not isinstance(name, str) or not name:
            raise MalformedResponseError("the batch answer has no name", provider=self.name)
        return name

    async def get_batch(self, batch_id: str) -> dict[str, Any]:
        """The batch operation as Gemini reports it (`name`, `metadata.state`, `done`, `response`, `error`)."""
        name = batch_id.removeprefix("batches/")
        path = f"batches/{path_segment(name, 'batch name')}"
        return await self._json(self._gemini_call(path, None, method="GET"), "batch")

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


_publish("onellm", GeminiProvider)
