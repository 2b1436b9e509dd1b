"""The Gemini response codec: `GenerateContentResponse` objects (one whole answer, or the chunks of a stream) as stream
events, through one parser, so a streamed message equals the whole one by construction.

- Text parts in a row join into one text block; thought parts (`thought: true`) into one reasoning block whose
  `display` is the thought summary (`data.on = "thought"`).
- A `thoughtSignature` on a text, call or media part becomes its own reasoning part placed just before that part
  (`data = {"signature", "on": <part kind>}`); a signature starts a new text block.
- A function call without an id gets `gemini-call-<responseId>-<n>` (n counts the answer's calls from 0).
- Code execution (`executableCode` + `codeExecutionResult`) and server tool calls (`toolCall` + `toolResponse`) are
  hosted tool calls keeping their raw parts in `data.replay`.
- Grounding metadata (search, maps, file search) is read when the answer ends: one hosted call, and `url_citation`
  annotations whose UTF-8 byte offsets over the whole answer's text become character positions in each text block.
- Usage: input = prompt - cached + tool-use prompt, output = candidates + thoughts; modality counters are subsets.
- Every response field without a place in the message is kept under `Message.extra["gemini"]` (later chunks win).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import msgspec

from onellm.errors import MalformedResponseError, ProviderError
from onellm.messages import (
    Annotation,
    AnnotationEvent,
    AssetPart,
    Done,
    FileRefPart,
    HostedToolCallEnd,
    HostedToolCallStart,
    MessageStart,
    PartAdded,
    ProviderPart,
    ReasoningDelta,
    ReasoningEnd,
    StreamEvent,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
    UsageEvent,
)
from onellm.providers._content import json_text
from onellm.providers._errors import error_from_status
from onellm.providers.gemini._request import MADE_UP_ID_PREFIX, PROVIDER

__all__ = ["ResponseDecoder", "usage_from"]

_decode = msgspec.json.Decoder(float_hook=Decimal).decode

_FILTERED = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
    }
)
_RESPONSE_KNOWN = frozenset({"candidates", "usageMetadata", "modelVersion", "responseId"})
_CANDIDATE_KNOWN = frozenset({"content", "finishReason", "groundingMetadata", "index"})
_HOSTED_KINDS = ("executableCode", "codeExecutionResult", "toolCall", "toolResponse")
_INPUT_MODALITIES = {"IMAGE": "inputImageTokens", "AUDIO": "inputAudioTokens", "VIDEO": "inputVideoTokens"}
_OUTPUT_MODALITIES = {"IMAGE": "outputImageTokens", "AUDIO": "outputAudioTokens", "VIDEO": "outputVideoTokens"}


def _modalities(details: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    if isinstance(details, list):
        for item in details:
            if isinstance(item, dict) and isinstance(item.get("modality"), str):
                out[item["modality"]] = out.get(item["modality"], 0) + int(item.get("tokenCount") or 0)
    return out


def usage_from(wire: dict[str, Any], *, model: str | None) -> Usage:
    """Gemini usage in the message model (see the module notes)."""
    prompt = int(wire.get("promptTokenCount") or 0)
    cached = int(wire.get("cachedContentTokenCount") or 0)
    tool_prompt = int(wire.get("toolUsePromptTokenCount") or 0)
    candidates = int(wire.get("candidatesTokenCount") or wire.get("responseTokenCount") or 0)
    thoughts = int(wire.get("thoughtsTokenCount") or 0)
    counters: dict[str, int | Decimal] = {}
    if thoughts:
        counters["reasoningTokens"] = thoughts
    prompt_by = _modalities(wire.get("promptTokensDetails"))
    cached_by = _modalities(wire.get("cacheTokensDetails"))
    tool_by = _modalities(wire.get("toolUsePromptTokensDetails"))
    for modality, name in _INPUT_MODALITIES.items():
        value = prompt_by.get(modality, 0) - cached_by.get(modality, 0) + tool_by.get(modality, 0)
        if value > 0:
            counters[name] = value
    output_by = _modalities(wire.get("candidatesTokensDetails") or wire.get("responseTokensDetails"))
    for modality, name in _OUTPUT_MODALITIES.items():
        if output_by.get(modality):
            counters[name] = output_by[modality]
    tier = wire.get("serviceTier")
    return Usage(
        model=model,
        service_tier=tier.lower().removeprefix("service_tier_") if isinstance(tier, str) else None,
        input_tokens=max(0, prompt - cached + tool_prompt),
        output_tokens=candidates + thoughts,
        cache_read_input_tokens=cached,
        counters=counters,
    )


class _TextPart(msgspec.Struct, forbid_unknown_fields=True):
    """A part that is text (or a thought) and nothing else."""

    text: str
    thought: bool = False
    thoughtSignature: str | None = None


class _Content(msgspec.Struct):
    parts: list[_TextPart] | None = None


class _Candidate(msgspec.Struct, forbid_unknown_fields=True):
    content: _Content | None = None
    finishReason: str | None = None
    index: int | None = None


_NO_USAGE = msgspec.Raw(b"")


class _Chunk(msgspec.Struct, forbid_unknown_fields=True):
    """The common chunk of a stream: text parts of the first candidate, usage and the model's names; a chunk with
    anything else fails to decode as this and is read as plain data."""

    candidates: list[_Candidate] | None = None
    usageMetadata: msgspec.Raw = _NO_USAGE  # read when the answer ends
    modelVersion: str | None = None
    responseId: str | None = None


_decode_chunk = msgspec.json.Decoder(_Chunk).decode


class _Hosted:
    __slots__ = ("index", "inputs", "replay", "tool")

    def __init__(self, index: int, tool: str, inputs: Any, raw: dict[str, Any]) -> None:
        self.index = index
        self.tool = tool
        self.inputs = inputs
        self.replay = [raw]


class ResponseDecoder:
    """Turns `GenerateContentResponse` objects into stream events: `feed` each (a whole answer is one), then `finish`.

    Only the first candidate builds the message; further candidates are kept as extension data.
    """

    __slots__ = (
        "_blocked",
        "_calls",
        "_code",
        "_extension",
        "_finish",
        "_grounding",
        "_next",
        "_server",
        "_started",
        "_text",
        "_texts",
        "_thought",
        "_thought_signature",
        "_thought_text",
        "_tool_called",
        "_usage",
        "_usage_raw",
        "finished",
        "model",
        "response_id",
    )

    def __init__(self) -> None:
        self._started = False
        self._next = 0
        self._text: int | None = None
        self._texts: list[tuple[int, list[str]]] = []
        self._thought: int | None = None
        self._thought_text: list[str] = []
        self._thought_signature: str | None = None
        self._code: _Hosted | None = None
        self._server: dict[str, _Hosted] = {}
        self._calls = 0
        self._tool_called = False
        self._finish: str | None = None
        self._blocked = False
        self._grounding: dict[str, Any] | None = None
        self._usage: dict[str, Any] | None = None
        self._usage_raw: msgspec.Raw | None = None
        self._extension: dict[str, Any] = {}
        self.model: str | None = None
        self.response_id: str | None = None
        self.finished = False

    # -- input -----------------------------------------------------------------------------------------------------

    def feed(self, data: bytes, event: str | None = None) -> list[StreamEvent]:
        """One streamed chunk's JSON (Gemini names no events)."""
        events: list[StreamEvent] = []
        self.feed_batch([data], None, 0, 1, events)
        return events

    def feed_batch(
        self, datas: list[bytes], names: list[str | None] | None, start: int, stop: int, out: list[StreamEvent]
    ) -> int:
        """Decode the chunks `start` to `stop` into `out` (a stream has no end event: all are read). A chunk of text
        parts only is read through typed structs; any other as plain data."""
        for position in range(start, stop):
            data = datas[position]
            try:
                fast = _decode_chunk(data)
            except (msgspec.DecodeError, msgspec.ValidationError):
                fast = None
            if fast is None or not self._read_text_chunk(fast, out):
                out += self.feed_object(self._plain(data))
        return stop

    @staticmethod
    def _plain(data: bytes) -> dict[str, Any]:
        try:
            chunk = _decode(data)
        except msgspec.DecodeError as error:
            raise MalformedResponseError(f"a streamed chunk is not valid JSON: {error}", provider=PROVIDER) from error
        if not isinstance(chunk, dict):
            raise MalformedResponseError("a streamed chunk is not a JSON object", provider=PROVIDER)
        return chunk

    def _read_text_chunk(self, chunk: _Chunk, events: list[StreamEvent]) -> bool:
        """What `feed_object` does with a chunk of text parts, read from its typed form; False (and nothing done)
        when a candidate other than the first is in it."""
        candidates = chunk.candidates
        if candidates is not None:
            for candidate in candidates:
                if candidate.index:
                    return False
        if not self._started:
            self._started = True
            self.model = chunk.modelVersion
            self.response_id = chunk.responseId
            events.append(MessageStart(model=self.model, response_id=self.response_id))
        if chunk.usageMetadata:
            self._usage_raw = chunk.usageMetadata
        for candidate in candidates or ():
            content = candidate.content
            if content is not None and content.parts:
                for part in content.parts:
                    text = part.text
                    index = self._text
                    if index is not None and text and not part.thought and part.thoughtSignature is None:
                        self._texts[-1][1].append(text)  # more of the open text block
                        events.append(TextDelta(index, text))
                    else:
                        self._text_part(text, part.thought, part.thoughtSignature, events)
            if candidate.finishReason is not None:
                self._finish = candidate.finishReason
        return True

    def _text_part(self, text: str, thought: bool, signature: str | None, events: list[StreamEvent]) -> None:
        """`_part` for a part of text alone (with its thought flag and signature)."""
        if thought:
            self._close_text()
            if self._thought is None:
                self._thought = self._index()
            if text:
                self._thought_text.append(text)
                events.append(ReasoningDelta(self._thought, text))
            if signature is not None:
                self._thought_signature = signature
            return
        if self._thought is not None:
            self._close_thought(events)
        if signature is not None:
            self._close_text()
            events.append(
                ReasoningEnd(index=self._index(), provider=PROVIDER, data={"signature": signature, "on": "text"})
            )
        if text:
            if self._text is None:
                self._text = self._index()
                self._texts.append((self._text, []))
            self._texts[-1][1].append(text)
            events.append(TextDelta(self._text, text))

    def _usage_so_far(self) -> None:
        """Read the usage a typed chunk left undecoded (a later plain chunk's usage replaces it)."""
        raw = self._usage_raw
        if raw is not None:
            self._usage_raw = None
            try:
                usage = _decode(raw)
            except msgspec.DecodeError as error:
                raise MalformedResponseError(f"the usage is not valid JSON: {error}", provider=PROVIDER) from error
            if isinstance(usage, dict):
                self._usage = usage

    def feed_object(self, chunk: dict[str, Any]) -> list[StreamEvent]:
        self._usage_so_far()
        error = chunk.get("error")
        if isinstance(error, dict):
            message = str(error.get("message") or "the stream reported an error")
            status = error.get("code")
            if isinstance(status, int) and 400 <= status < 600:
                code = error.get("status")
                raise error_from_status(
                    status, message, provider=PROVIDER, code=code if isinstance(code, str) else None
                )
            raise ProviderError(message, provider=PROVIDER)
        events: list[StreamEvent] = []
        if not self._started:
            self._started = True
            self.model = chunk.get("modelVersion")
            self.response_id = chunk.get("responseId")
            events.append(MessageStart(model=self.model, response_id=self.response_id))
        for key, value in chunk.items():
            if key not in _RESPONSE_KNOWN:
                self._extension[key] = value
        feedback = chunk.get("promptFeedback")
        if isinstance(feedback, dict) and feedback.get("blockReason"):
            self._blocked = True
        usage = chunk.get("usageMetadata")
        if isinstance(usage, dict):
            self._usage = usage
        candidates = chunk.get("candidates")
        if isinstance(candidates, list) and candidates:
            others = []
            for candidate in candidates:
                if isinstance(candidate, dict) and int(candidate.get("index") or 0) == 0:
                    self._candidate(candidate, events)
                else:
                    others.append(candidate)
            if others:  # only the first candidate builds the message
                self._extension["candidates"] = others
        return events

    def _candidate(self, candidate: dict[str, Any], events: list[StreamEvent]) -> None:
        for key, value in candidate.items():
            if key not in _CANDIDATE_KNOWN:
                self._extension[key] = value
        content = candidate.get("content")
        if isinstance(content, dict):
            for part in content.get("parts") or ():
                if isinstance(part, dict):
                    self._part(part, events)
        grounding = candidate.get("groundingMetadata")
        if isinstance(grounding, dict):
            self._grounding = grounding
        reason = candidate.get("finishReason")
        if isinstance(reason, str):
            self._finish = reason

    def _index(self) -> int:
        index = self._next
        self._next += 1
        return index

    def _close_text(self) -> None:
        self._text = None

    def _close_thought(self, events: list[StreamEvent]) -> None:
        if self._thought is None:
            return
        data: dict[str, Any] = {"on": "thought"}
        if self._thought_signature is not None:
            data["signature"] = self._thought_signature
        events.append(
            ReasoningEnd(index=self._thought, provider=PROVIDER, data=data, display="".join(self._thought_text))
        )
        self._thought = None
        self._thought_text = []
        self._thought_signature = None

    def _part(self, part: dict[str, Any], events: list[StreamEvent]) -> None:
        signature = part.get("thoughtSignature")
        if part.get("thought") is True:
            self._close_text()
            if self._thought is None:
                self._thought = self._index()
            text = part.get("text")
            if isinstance(text, str) and text:
                self._thought_text.append(text)
                events.append(ReasoningDelta(self._thought, text))
            if isinstance(signature, str):
                self._thought_signature = signature
            return
        self._close_thought(events)
        hosted = next((k for k in _HOSTED_KINDS if k in part), None)
        if hosted is not None:
            self._close_text()
            self._hosted(hosted, part, events)
            return
        kind = next((k for k in ("text", "functionCall", "inlineData", "fileData") if k in part), None)
        if isinstance(signature, str) and kind is not None:
            self._close_text()
            events.append(
                ReasoningEnd(index=self._index(), provider=PROVIDER, data={"signature": signature, "on": kind})
            )
        if kind == "text":
            text = part["text"]
            if isinstance(text, str) and text:
                if self._text is None:
                    self._text = self._index()
                    self._texts.append((self._text, []))
                self._texts[-1][1].append(text)
                events.append(TextDelta(self._text, text))
            return
        self._close_text()
        if kind == "functionCall":
            call = part["functionCall"] if isinstance(part["functionCall"], dict) else {}
            given = call.get("id")
            call_id = given if isinstance(given, str) and given else None
            if call_id is None:
                call_id = f"{MADE_UP_ID_PREFIX}{self.response_id or 'response'}-{self._calls}"
            self._calls += 1
            self._tool_called = True
            index = self._index()
            events.append(ToolCallStart(index, call_id, str(call.get("name", ""))))
            events.append(ToolCallArgumentsDelta(index, json_text(call.get("args") or {})))
            events.append(ToolCallEnd(index))
        elif kind == "inlineData":
            blob = part["inlineData"] if isinstance(part["inlineData"], dict) else {}
            asset = AssetPart(storage="inline", content_type=blob.get("mimeType"), data=blob.get("data"))
            events.append(PartAdded(self._index(), asset))
        elif kind == "fileData":
            file = part["fileData"] if isinstance(part["fileData"], dict) else {}
            uri = str(file.get("fileUri", ""))
            events.append(
                PartAdded(
                    self._index(), FileRefPart(uri, provider=PROVIDER, content_type=file.get("mimeType"), uri=uri)
                )
            )
        elif kind is None:  # a part this codec does not know: kept whole, its signature included
            name = next((k for k in part if k != "thoughtSignature"), "part")
            events.append(PartAdded(self._index(), ProviderPart(type=f"{PROVIDER}.{name}", raw=part)))

    def _hosted(self, kind: str, part: dict[str, Any], events: list[StreamEvent]) -> None:
        body = part[kind] if isinstance(part[kind], dict) else {}
        if kind == "executableCode":
            self._end_code(events, status="incomplete")
            index = self._index()
            inputs = {k: body[k] for k in ("language", "code") if k in body}
            self._code = _Hosted(index, "code_execution", inputs, part)
            events.append(HostedToolCallStart(index=index, tool="code_execution", id=body.get("id"), provider=PROVIDER))
        elif kind == "codeExecutionResult":
            if self._code is None:
                index = self._index()
                self._code = _Hosted(index, "code_execution", None, part)
                events.append(HostedToolCallStart(index=index, tool="code_execution", provider=PROVIDER))
            else:
                self._code.replay.append(part)
            outcome = body.get("outcome")
            status = "completed" if outcome == "OUTCOME_OK" else str(outcome).lower() if outcome else None
            result = {k: body[k] for k in ("outcome", "output") if k in body}
            self._end_code(events, status=status, result=result)
        elif kind == "toolCall":
            key = str(body.get("id", ""))
            tool = str(body.get("toolType") or "server_tool").lower()
            index = self._index()
            self._server[key] = _Hosted(index, tool, body.get("args"), part)
            events.append(HostedToolCallStart(index=index, tool=tool, id=body.get("id"), provider=PROVIDER))
        else:
            key = str(body.get("id", ""))
            open_call = self._server.pop(key, None)
            if open_call is None:
                tool = str(body.get("toolType") or "server_tool").lower()
                open_call = _Hosted(self._index(), tool, None, part)
                events.append(
                    HostedToolCallStart(index=open_call.index, tool=tool, id=body.get("id"), provider=PROVIDER)
                )
            else:
                open_call.replay.append(part)
            events.append(
                HostedToolCallEnd(
                    index=open_call.index,
                    status="completed",
                    inputs=open_call.inputs,
                    result=body.get("response"),
                    data={"replay": open_call.replay},
                )
            )

    def _end_code(self, events: list[StreamEvent], *, status: str | None, result: Any = None) -> None:
        code = self._code
        if code is None:
            return
        self._code = None
        events.append(
            HostedToolCallEnd(
                index=code.index, status=status, inputs=code.inputs, result=result, data={"replay": code.replay}
            )
        )

    # -- end -------------------------------------------------------------------------------------------------------

    def end(self) -> list[StreamEvent]:
        """The stream's body ended: the answer ends too, if a finish reason (or a blocked prompt) said it may."""
        return self.finish(require_finish_reason=True)

    def finish(self, *, require_finish_reason: bool = False) -> list[StreamEvent]:
        """The answer ended: close what is open, add grounding, usage and `Done`."""
        if self.finished:
            return []
        if not self._started:
            raise MalformedResponseError("the answer ended before any response arrived", provider=PROVIDER)
        if require_finish_reason and self._finish is None and not self._blocked:
            raise MalformedResponseError("the stream ended before the answer finished", provider=PROVIDER)
        self._usage_so_far()
        self.finished = True
        events: list[StreamEvent] = []
        self._close_thought(events)
        self._close_text()
        self._end_code(events, status="incomplete")
        events.extend(
            HostedToolCallEnd(index=p.index, status="incomplete", inputs=p.inputs, data={"replay": p.replay})
            for p in self._server.values()
        )
        self._server = {}
        if self._grounding is not None:
            self._ground(self._grounding, events)
        if self._usage is not None:
            events.append(UsageEvent(usage_from(self._usage, model=self.model)))
        events.append(Done(self._finish_name(), extra={PROVIDER: self._extension} if self._extension else None))
        return events

    def _finish_name(self) -> str | None:
        reason = self._finish
        if reason is None:
            return "content_filter" if self._blocked else None
        if reason == "STOP":
            return "tool_calls" if self._tool_called else "stop"
        if reason == "MAX_TOKENS":
            return "length"
        if reason in _FILTERED:
            self._extension["finishReason"] = reason
            return "content_filter"
        return reason

    def _ground(self, grounding: dict[str, Any], events: list[StreamEvent]) -> None:
        chunks = grounding.get("groundingChunks") or []
        queries = grounding.get("webSearchQueries")
        tool = "google_search"
        for chunk in chunks:
            if isinstance(chunk, dict):
                if "maps" in chunk:
                    tool = "google_maps"
                elif "retrievedContext" in chunk:
                    tool = "file_search"
                break
        index = self._index()
        events.append(HostedToolCallStart(index=index, tool=tool, provider=PROVIDER))
        result = {k: v for k, v in grounding.items() if k != "webSearchQueries"}
        events.append(
            HostedToolCallEnd(
                index=index,
                status="completed",
                inputs={"queries": queries} if queries is not None else None,
                result=result or None,
            )
        )
        blocks = self._byte_spans()
        for support in grounding.get("groundingSupports") or []:
            if not isinstance(support, dict):
                continue
            segment = support.get("segment") or {}
            start = int(segment.get("startIndex") or 0)
            end = int(segment.get("endIndex") or 0)
            place = _place(blocks, start, end)
            if place is None:
                continue
            block, char_start, char_end = place
            scores = support.get("confidenceScores") or []
            for position, chunk_index in enumerate(support.get("groundingChunkIndices") or []):
                if not isinstance(chunk_index, int) or not 0 <= chunk_index < len(chunks):
                    raise MalformedResponseError(
                        f"a grounding support names chunk {chunk_index!r}; the answer has {len(chunks)}",
                        provider=PROVIDER,
                    )
                source = _source(chunks[chunk_index])
                extra: dict[str, Any] = {"groundingChunkIndex": chunk_index}
                if position < len(scores):
                    extra["confidenceScore"] = scores[position]
                annotation = Annotation(
                    type="url_citation",
                    url=source.get("uri"),
                    title=source.get("title"),
                    start_index=char_start,
                    end_index=char_end,
                    extra=extra,
                )
                events.append(AnnotationEvent(block, annotation))

    def _byte_spans(self) -> list[tuple[int, int, bytes]]:
        """Each text block as (event index, byte offset in the whole answer's text, its UTF-8 bytes)."""
        spans: list[tuple[int, int, bytes]] = []
        offset = 0
        for index, pieces in self._texts:
            data = "".join(pieces).encode("utf-8")
            spans.append((index, offset, data))
            offset += len(data)
        return spans


def _place(blocks: list[tuple[int, int, bytes]], start: int, end: int) -> tuple[int, int, int] | None:
    """The text block holding byte `start` of the whole answer, and the segment as character positions in it (the
    end clipped to the block)."""
    for index, offset, data in blocks:
        if offset <= start < offset + len(data) or (start == offset + len(data) and start == end and data):
            local_start = start - offset
            local_end = min(max(end - offset, local_start), len(data))
            char_start = len(data[:local_start].decode("utf-8", "ignore"))
            char_end = len(data[:local_end].decode("utf-8", "ignore"))
            return index, char_start, char_end
    return None


def _source(chunk: Any) -> dict[str, Any]:
    if isinstance(chunk, dict):
        for key in ("web", "maps", "retrievedContext"):
            value = chunk.get(key)
            if isinstance(value, dict):
                return value
    return {}
