"""Images, speech, transcription and moderation over the OpenAI API (`docs/media.md`).

- Images: `/images/generations`, and `/images/edits` as JSON with the input images and the mask as data URLs; partial
  images by server-sent events. Settings a model family does not take (the GPT image models take no `style`, DALL-E no
  `background`, neither an `aspect_ratio`) are dropped with a warning.
- Speech: `/audio/speech`, the audio as the body; streamed as server-sent events (`speech.audio.delta`, then
  `speech.audio.done` with usage) for the newer models, and as the raw audio body for `tts-1` and `tts-1-hd`, which do
  not send events. The whole call reports no usage: `tts-1` and `tts-1-hd` are billed by the characters spoken, which
  are counted here (UTF-16 length); the newer models bill tokens that only a stream reports.
- Transcription: `/audio/transcriptions` and `/audio/translations` as multipart forms; text deltas by server-sent
  events where the model streams (not `whisper-1`, not translations: those answer whole, as one delta). Usage is tokens
  (with the audio tokens as `inputAudioTokens`) or, when the service reports a duration instead, `audioSeconds`.
- Moderation: `/moderations`, texts and images (as data URLs) in one request.
"""

from __future__ import annotations

import base64
import binascii
import time
from collections.abc import AsyncIterator, Callable
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import anyio
import msgspec

from onellm.errors import MalformedResponseError, ProviderError, TransportError, UnsupportedParameterError
from onellm.messages import CallWarning, Usage
from onellm.providers._base import HttpProvider
from onellm.providers._http import Headers
from onellm.providers._media import (
    AudioChunk,
    GeneratedImage,
    ImagePartial,
    ImageRequest,
    ImageResponse,
    ImageStreamEvent,
    MediaDone,
    MediaEventStream,
    ModerationRequest,
    ModerationResponse,
    ModerationVerdict,
    SpeechRequest,
    SpeechResponse,
    SpeechStreamEvent,
    TranscriptDelta,
    TranscriptionRequest,
    TranscriptionResponse,
    TranscriptionStreamEvent,
    audio_file_name,
    data_url,
    encode_multipart,
    mapping_of,
    settings_given,
    sniff_image_type,
    stripped,
    utf16_length,
)

if TYPE_CHECKING:
    from onellm.providers._http import HttpCall

__all__ = [
    "OpenAIMedia",
    "decode_images",
    "decode_moderation",
    "decode_transcription",
    "encode_image_request",
    "encode_moderation_request",
    "encode_speech_request",
    "encode_transcription_request",
]

_decode = msgspec.json.Decoder(float_hook=Decimal).decode
"""JSON with non-integer numbers as exact decimals (a duration is billed by the second)."""

_IMAGE_SETTINGS = (
    "size",
    "aspect_ratio",
    "quality",
    "background",
    "output_format",
    "output_compression",
    "style",
    "moderation",
    "input_fidelity",
    "partial_images",
)
_FAMILY_SETTINGS = {
    "gpt-image": frozenset(
        {
            "size",
            "quality",
            "background",
            "output_format",
            "output_compression",
            "moderation",
            "input_fidelity",
            "partial_images",
        }
    ),
    "dall-e-3": frozenset({"size", "quality", "style"}),
    "dall-e-2": frozenset({"size"}),
}
_IMAGE_TYPES = {"png": "image/png", "jpeg": "image/jpeg", "jpg": "image/jpeg", "webp": "image/webp"}
_AUDIO_TYPES = {
    "mp3": "audio/mpeg",
    "opus": "audio/ogg",
    "aac": "audio/aac",
    "flac": "audio/flac",
    "wav": "audio/wav",
    "pcm": "audio/pcm;rate=24000",
}
DEFAULT_VOICE = "alloy"
"""The voice `/audio/speech` is sent when the request names none (the API requires one)."""


def _image_family(model: str) -> str:
    name = model.rsplit("/", 1)[-1].lower()
    if name.startswith("dall-e-2"):
        return "dall-e-2"
    if name.startswith("dall-e-3"):
        return "dall-e-3"
    return "gpt-image"


def _character_billed(model: str) -> bool:
    """`tts-1` and `tts-1-hd` are billed by the characters spoken (and do not stream events)."""
    return model.rsplit("/", 1)[-1].lower().startswith("tts-1")


def _object(data: bytes, provider: str, what: str) -> dict[str, Any]:
    try:
        value = _decode(data)
    except msgspec.DecodeError as error:
        raise MalformedResponseError(f"the {what} is not valid JSON: {error}", provider=provider) from error
    if not isinstance(value, dict):
        raise MalformedResponseError(f"the {what} is not a JSON object", provider=provider)
    return value


def _count(value: Any, what: str, provider: str) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise MalformedResponseError(f"the usage's {what} is not a count: {value!r}", provider=provider)
    return value


def _b64(value: Any, what: str, provider: str) -> bytes:
    if not isinstance(value, str) or not value:
        raise MalformedResponseError(f"the {what} has no base64 data", provider=provider)
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as error:
        raise MalformedResponseError(f"the {what} is not valid base64: {error}", provider=provider) from error


def _stream_error(event: dict[str, Any], provider: str) -> ProviderError:
    error = event.get("error")
    detail = error if isinstance(error, dict) else event
    message = detail.get("message")
    return ProviderError(
        message if isinstance(message, str) and message else "the stream reported an error", provider=provider
    )


# -- images ----------------------------------------------------------------------------------------------------------


def encode_image_request(
    request: ImageRequest, *, stream: bool = False
) -> tuple[str, dict[str, Any], list[CallWarning]]:
    """The path, the JSON body and the warnings for dropped settings of an image request."""
    model = request.model
    family = _image_family(model)
    allowed = _FAMILY_SETTINGS[family]
    edit = bool(request.images)
    warnings: list[CallWarning] = []
    for name in settings_given(request, _IMAGE_SETTINGS):
        if name not in allowed:
            why = "OpenAI image models take a size, not an aspect ratio" if name == "aspect_ratio" else ""
            warnings.append(stripped(name, model, why or f"{model} does not take it"))
    if request.count < 1:
        raise UnsupportedParameterError("count must be 1 or more", parameter="count", model=model)
    if request.mask is not None and not edit:
        raise UnsupportedParameterError("a mask needs an image to edit", parameter="mask", model=model)
    if edit and family != "gpt-image":
        raise UnsupportedParameterError(
            f"{model} edits images only from multipart uploads, which onellm does not send; use a GPT image model",
            parameter="images",
            model=model,
        )
    if family == "dall-e-3" and request.count > 1:
        raise UnsupportedParameterError("dall-e-3 makes one image per call", parameter="count", model=model)
    if stream and family != "gpt-image":
        raise UnsupportedParameterError(f"{model} does not stream images", parameter="stream", model=model)
    if stream and request.count > 1:
        raise UnsupportedParameterError(
            "a streamed image call makes one image; ask for one at a time", parameter="count", model=model
        )
    body: dict[str, Any] = {"model": model, "prompt": request.prompt}
    if edit:
        body["images"] = [{"image_url": data_url(image.data, image.content_type)} for image in request.images]
        if request.mask is not None:
            body["mask"] = {"image_url": data_url(request.mask.data, request.mask.content_type)}
    if request.count != 1:
        body["n"] = request.count
    for name in ("size", "quality", "background", "output_format", "output_compression", "style", "moderation"):
        value = getattr(request, name)
        if value is not None and name in allowed:
            body[name] = value
    if request.input_fidelity is not None and "input_fidelity" in allowed:
        if edit:
            body["input_fidelity"] = request.input_fidelity
        else:
            warnings.append(stripped("input_fidelity", model, "it applies to edits of given images only"))
    if family != "gpt-image":
        body["response_format"] = "b64_json"
    if stream:
        body["stream"] = True
        if request.partial_images is not None:
            body["partial_images"] = request.partial_images
    elif request.partial_images is not None and "partial_images" in allowed:
        warnings.append(stripped("partial_images", model, "partial images are sent only while streaming"))
    if request.user_id is not None:
        body["user"] = request.user_id
    body.update(request.extra_parameters)
    return ("/images/edits" if edit else "/images/generations"), body, warnings


def _image_usage(wire: Any, model: str | None, provider: str) -> Usage | None:
    """`ImagesUsage`: input tokens (text and image), output tokens (image tokens, unless the details say which)."""
    if not isinstance(wire, dict):
        return None
    counters: dict[str, int | Decimal] = {}
    inputs = mapping_of(wire.get("input_tokens_details"))
    image_in = _count(inputs.get("image_tokens"), "input image tokens", provider)
    if image_in:
        counters["inputImageTokens"] = image_in
    output = _count(wire.get("output_tokens"), "output tokens", provider)
    outputs = wire.get("output_tokens_details")
    image_out = (
        _count(outputs.get("image_tokens"), "output image tokens", provider) if isinstance(outputs, dict) else output
    )
    if image_out:
        counters["outputImageTokens"] = image_out
    return Usage(
        model=model,
        input_tokens=_count(wire.get("input_tokens"), "input tokens", provider),
        output_tokens=output,
        counters=counters,
    )


def _qualifiers(data: dict[str, Any], request: ImageRequest) -> dict[str, str]:
    out: dict[str, str] = {}
    for name in ("size", "quality", "background", "output_format"):
        value = data.get(name)
        if not isinstance(value, str) or not value or value == "auto":
            given = getattr(request, name)
            value = given if isinstance(given, str) and given != "auto" else None
        if value:
            out[name] = value
    if "quality" not in out and _image_family(request.model) == "dall-e-3":
        out["quality"] = "standard"
    return out


def _generated(raw: bytes, output_format: Any, revised: Any = None) -> GeneratedImage:
    kind = sniff_image_type(raw) or _IMAGE_TYPES.get(str(output_format or "png").lower(), "image/png")
    return GeneratedImage(raw, kind, revised if isinstance(revised, str) else None)


def decode_images(
    data: bytes, request: ImageRequest, *, warnings: list[CallWarning] | None = None, provider: str = "openai"
) -> ImageResponse:
    """An `ImagesResponse` as an `ImageResponse`. DALL-E reports no usage: its images are counted (`images`)."""
    obj = _object(data, provider, "images response")
    items = obj.get("data")
    if not isinstance(items, list) or not items:
        raise MalformedResponseError("the images response holds no image", provider=provider)
    output_format = obj.get("output_format") or request.output_format
    images: list[GeneratedImage] = []
    for position, item in enumerate(items):
        item = mapping_of(item)
        if "b64_json" not in item and isinstance(item.get("url"), str):
            raise MalformedResponseError(
                "the images response gives a URL instead of the image; onellm asks for base64", provider=provider
            )
        raw = _b64(item.get("b64_json"), f"image {position}", provider)
        images.append(_generated(raw, output_format, item.get("revised_prompt")))
    usage = _image_usage(obj.get("usage"), request.model, provider)
    if usage is None and _image_family(request.model) != "gpt-image":
        usage = Usage(model=request.model, counters={"images": len(images)})
    extra = {k: v for k, v in obj.items() if k not in ("data", "usage", "created")}
    return ImageResponse(
        images=images,
        usage=usage,
        model=request.model,
        qualifiers=_qualifiers(obj, request),
        warnings=list(warnings or []),
        extra=extra,
    )


class _ImageStreamDecoder:
    """`image_generation.*` / `image_edit.*` events: partial images, then one completed image with its usage."""

    __slots__ = ("_provider", "_request", "_warnings", "finished")

    def __init__(self, request: ImageRequest, warnings: list[CallWarning], provider: str) -> None:
        self._request = request
        self._warnings = warnings
        self._provider = provider
        self.finished = False

    def feed(self, data: bytes, event_name: str | None = None) -> list[Any]:
        event = _object(data, self._provider, "stream event")
        kind = event.get("type")
        if kind == "error" or event_name == "error" or isinstance(event.get("error"), dict):
            raise _stream_error(event, self._provider)
        if event_name is not None and event_name != kind:
            raise MalformedResponseError(
                f"a stream event named {event_name!r} holds a {kind!r} event", provider=self._provider
            )
        if not isinstance(kind, str):
            raise MalformedResponseError("a stream event has no type", provider=self._provider)
        output_format = event.get("output_format") or self._request.output_format
        if kind.endswith(".partial_image"):
            index = event.get("partial_image_index", 0)
            if isinstance(index, bool) or not isinstance(index, int):
                raise MalformedResponseError("a partial image has no index", provider=self._provider)
            raw = _b64(event.get("b64_json"), "partial image", self._provider)
            return [ImagePartial(index, _generated(raw, output_format))]
        if kind.endswith(".completed"):
            raw = _b64(event.get("b64_json"), "image", self._provider)
            self.finished = True
            response = ImageResponse(
                images=[_generated(raw, output_format)],
                usage=_image_usage(event.get("usage"), self._request.model, self._provider),
                model=self._request.model,
                qualifiers=_qualifiers(event, self._request),
                warnings=list(self._warnings),
            )
            return [MediaDone(response)]
        return []

    def end(self) -> list[Any]:
        raise MalformedResponseError("the stream ended before the image was complete", provider=self._provider)


# -- speech ----------------------------------------------------------------------------------------------------------


def encode_speech_request(request: SpeechRequest, *, stream: bool = False) -> tuple[dict[str, Any], list[CallWarning]]:
    """The `/audio/speech` body and the warnings for dropped settings. `stream` asks for server-sent events (not for
    `tts-1` and `tts-1-hd`, whose stream is the raw audio)."""
    model = request.model
    warnings: list[CallWarning] = []
    if request.speakers:
        warnings.append(stripped("speakers", model, "OpenAI speech reads with one voice"))
    if request.language is not None:
        warnings.append(stripped("language", model, "OpenAI speech has no language setting; it follows the text"))
    voice: Any = request.voice or DEFAULT_VOICE
    if isinstance(voice, str) and voice.startswith("voice_"):
        voice = {"id": voice}  # a custom voice
    body: dict[str, Any] = {"model": model, "input": request.text, "voice": voice}
    if request.instructions is not None:
        if _character_billed(model):
            warnings.append(stripped("instructions", model, f"{model} takes no instructions"))
        else:
            body["instructions"] = request.instructions
    if request.format is not None:
        body["response_format"] = request.format
    if request.speed is not None:
        body["speed"] = request.speed
    if stream and not _character_billed(model):
        body["stream_format"] = "sse"
    body.update(request.extra_parameters)
    return body, warnings


def _speech_type(request: SpeechRequest, header: str | None = None) -> str:
    if header:
        kind = header.split(";", 1)[0].strip().lower()
        if kind.startswith("audio/"):
            return header
    return _AUDIO_TYPES.get((request.format or "mp3").lower(), "application/octet-stream")


def _speech_usage(request: SpeechRequest) -> Usage | None:
    """What the whole call is billed by, when that is known without the service's word: the characters spoken."""
    if _character_billed(request.model):
        return Usage(model=request.model, counters={"characters": utf16_length(request.text)})
    return None


class _SpeechStreamDecoder:
    """`speech.audio.delta` (base64 audio) events, then `speech.audio.done` with the usage."""

    __slots__ = ("_chunks", "_provider", "_request", "_warnings", "finished")

    def __init__(self, request: SpeechRequest, warnings: list[CallWarning], provider: str) -> None:
        self._request = request
        self._warnings = warnings
        self._provider = provider
        self._chunks: list[bytes] = []
        self.finished = False

    def feed(self, data: bytes, event_name: str | None = None) -> list[Any]:
        event = _object(data, self._provider, "stream event")
        kind = event.get("type")
        if kind == "error" or event_name == "error" or isinstance(event.get("error"), dict):
            raise _stream_error(event, self._provider)
        if kind == "speech.audio.delta":
            chunk = _b64(event.get("audio"), "audio chunk", self._provider)
            self._chunks.append(chunk)
            return [AudioChunk(chunk)]
        if kind == "speech.audio.done":
            self.finished = True
            wire = event.get("usage")
            usage = None
            if isinstance(wire, dict):
                output = _count(wire.get("output_tokens"), "output tokens", self._provider)
                usage = Usage(
                    model=self._request.model,
                    input_tokens=_count(wire.get("input_tokens"), "input tokens", self._provider),
                    output_tokens=output,
                    counters={"outputAudioTokens": output} if output else {},
                )
            response = SpeechResponse(
                audio=b"".join(self._chunks),
                content_type=_speech_type(self._request),
                usage=usage,
                model=self._request.model,
                warnings=list(self._warnings),
            )
            return [MediaDone(response)]
        return []

    def end(self) -> list[Any]:
        raise MalformedResponseError("the stream ended before the audio was complete", provider=self._provider)


# -- transcription ---------------------------------------------------------------------------------------------------


def _streams_text(model: str) -> bool:
    """Whether the model streams transcripts (`whisper-1` does not: its stream is the whole answer)."""
    return not model.rsplit("/", 1)[-1].lower().startswith("whisper")


def _field_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | Decimal):
        return format(value, "g") if isinstance(value, float) else str(value)
    return msgspec.json.encode(value).decode("utf-8")


def encode_transcription_request(
    request: TranscriptionRequest, *, stream: bool = False
) -> tuple[str, list[tuple[str, str]], list[tuple[str, str, str, bytes]], list[CallWarning]]:
    """The path, the form's text fields, its file and the warnings for dropped settings."""
    model = request.model
    whisper = not _streams_text(model)
    warnings: list[CallWarning] = []
    fields: list[tuple[str, str]] = [("model", model)]
    if request.translate:
        path = "/audio/translations"
        if request.language is not None:
            warnings.append(stripped("language", model, "a translation is into English; the model finds the language"))
        if request.timestamps:
            warnings.append(stripped("timestamps", model, "translations have no timestamp setting"))
        if request.logprobs:
            warnings.append(stripped("logprobs", model, "translations give no log probabilities"))
        response_format = "verbose_json" if whisper else "json"
    else:
        path = "/audio/transcriptions"
        if request.language is not None:
            fields.append(("language", request.language))
        response_format = "verbose_json" if whisper else "json"
        if request.timestamps and not whisper:
            warnings.append(stripped("timestamps", model, f"{model} gives no timestamps (whisper-1 does)"))
        if request.logprobs and whisper:
            warnings.append(stripped("logprobs", model, f"{model} gives no log probabilities"))
    if request.prompt is not None:
        fields.append(("prompt", request.prompt))
    fields.append(("response_format", response_format))
    if request.temperature is not None:
        fields.append(("temperature", _field_text(float(request.temperature))))
    if not request.translate:
        if request.timestamps and whisper:
            fields.extend(("timestamp_granularities[]", kind) for kind in request.timestamps)
        if request.logprobs and not whisper:
            fields.append(("include[]", "logprobs"))
    if stream and not whisper and not request.translate:
        fields.append(("stream", "true"))
    for name, value in request.extra_parameters.items():
        if isinstance(value, list | tuple):
            fields.extend((f"{name}[]", _field_text(item)) for item in value)
        else:
            fields.append((name, _field_text(value)))
    files = [("file", audio_file_name(request.file_name, request.content_type), request.content_type, request.audio)]
    return path, fields, files, warnings


def _transcription_usage(wire: Any, duration: Decimal | None, model: str, provider: str) -> Usage | None:
    """Tokens (the audio tokens as `inputAudioTokens`), else the billed seconds (`audioSeconds`), else the duration the
    answer gives; None when the answer says neither."""
    if isinstance(wire, dict):
        kind = wire.get("type")
        if kind == "tokens" or (kind is None and "input_tokens" in wire):
            details = mapping_of(wire.get("input_token_details"))
            audio = _count(details.get("audio_tokens"), "input audio tokens", provider)
            return Usage(
                model=model,
                input_tokens=_count(wire.get("input_tokens"), "input tokens", provider),
                output_tokens=_count(wire.get("output_tokens"), "output tokens", provider),
                counters={"inputAudioTokens": audio} if audio else {},
            )
        if kind == "duration":
            seconds = wire.get("seconds")
            if isinstance(seconds, bool) or not isinstance(seconds, int | Decimal) or seconds < 0:
                raise MalformedResponseError(f"the usage's seconds are not a duration: {seconds!r}", provider=provider)
            return Usage(model=model, counters={"audioSeconds": seconds})
    if duration is not None:
        return Usage(model=model, counters={"audioSeconds": duration})
    return None


def _duration(value: Any, provider: str) -> Decimal | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | Decimal) or value < 0:
        raise MalformedResponseError(f"the answer's duration is not a number of seconds: {value!r}", provider=provider)
    return Decimal(value)


def decode_transcription(
    data: bytes, request: TranscriptionRequest, *, warnings: list[CallWarning] | None = None, provider: str = "openai"
) -> TranscriptionResponse:
    """A transcription (or translation) answer in its JSON, verbose or diarized form."""
    obj = _object(data, provider, "transcription")
    text = obj.get("text")
    if not isinstance(text, str):
        raise MalformedResponseError("the transcription has no text", provider=provider)
    duration = _duration(obj.get("duration"), provider)
    language = obj.get("language")
    segments = obj.get("segments")
    words = obj.get("words")
    extra = {k: v for k, v in obj.items() if k not in ("text", "duration", "language", "segments", "words", "usage")}
    return TranscriptionResponse(
        text=text,
        usage=_transcription_usage(obj.get("usage"), duration, request.model, provider),
        language=language if isinstance(language, str) else None,
        duration=duration,
        segments=[s for s in segments if isinstance(s, dict)] if isinstance(segments, list) else [],
        words=[w for w in words if isinstance(w, dict)] if isinstance(words, list) else [],
        model=request.model,
        warnings=list(warnings or []),
        extra=extra,
    )


class _TranscriptStreamDecoder:
    """`transcript.text.delta` and `transcript.text.segment` events, then `transcript.text.done` with the text and
    the usage."""

    __slots__ = ("_deltas", "_provider", "_request", "_segments", "_warnings", "finished")

    def __init__(self, request: TranscriptionRequest, warnings: list[CallWarning], provider: str) -> None:
        self._request = request
        self._warnings = warnings
        self._provider = provider
        self._deltas: list[str] = []
        self._segments: list[dict[str, Any]] = []
        self.finished = False

    def feed(self, data: bytes, event_name: str | None = None) -> list[Any]:
        event = _object(data, self._provider, "stream event")
        kind = event.get("type")
        if kind == "error" or event_name == "error" or isinstance(event.get("error"), dict):
            raise _stream_error(event, self._provider)
        if kind == "transcript.text.delta":
            delta = event.get("delta")
            if not isinstance(delta, str):
                raise MalformedResponseError("a transcript delta has no text", provider=self._provider)
            self._deltas.append(delta)
            return [TranscriptDelta(delta)] if delta else []
        if kind == "transcript.text.segment":
            self._segments.append({k: v for k, v in event.items() if k != "type"})
            return []
        if kind == "transcript.text.done":
            self.finished = True
            text = event.get("text")
            extra = {k: v for k, v in event.items() if k not in ("type", "text", "usage")}
            response = TranscriptionResponse(
                text=text if isinstance(text, str) else "".join(self._deltas),
                usage=_transcription_usage(event.get("usage"), None, self._request.model, self._provider),
                segments=self._segments,
                model=self._request.model,
                warnings=list(self._warnings),
                extra=extra,
            )
            return [MediaDone(response)]
        return []

    def end(self) -> list[Any]:
        raise MalformedResponseError("the stream ended before the transcript was complete", provider=self._provider)


# -- moderation ------------------------------------------------------------------------------------------------------


def encode_moderation_request(request: ModerationRequest) -> dict[str, Any]:
    """The `/moderations` body: the texts as a list of strings (one result each), or texts and images together as
    typed inputs."""
    model = request.model
    if not request.texts and not request.images:
        raise UnsupportedParameterError("moderation needs a text or an image", parameter="texts", model=model)
    if request.images and model.rsplit("/", 1)[-1].lower().startswith("text-moderation"):
        raise UnsupportedParameterError(f"{model} classifies text only", parameter="images", model=model)
    inputs: list[Any]
    if request.images:
        inputs = [{"type": "text", "text": text} for text in request.texts]
        inputs.extend(
            {"type": "image_url", "image_url": {"url": data_url(image.data, image.content_type)}}
            for image in request.images
        )
    else:
        inputs = list(request.texts)
    body: dict[str, Any] = {"model": model, "input": inputs}
    body.update(request.extra_parameters)
    return body


def _verdict(item: Any, index: int | None, provider: str) -> ModerationVerdict:
    item = mapping_of(item)
    flagged = item.get("flagged")
    categories = item.get("categories")
    scores = item.get("category_scores")
    if not isinstance(flagged, bool) or not isinstance(categories, dict) or not isinstance(scores, dict):
        raise MalformedResponseError("a moderation result lacks flagged, categories or scores", provider=provider)
    try:
        score_values = {str(k): float(v) for k, v in scores.items() if v is not None}
    except (TypeError, ValueError) as error:
        raise MalformedResponseError(f"a moderation score is not a number: {error}", provider=provider) from error
    applied = mapping_of(item.get("category_applied_input_types"))
    return ModerationVerdict(
        flagged=flagged,
        categories={str(k): v is True for k, v in categories.items()},
        scores=score_values,
        input_index=index,
        applied_input_types={str(k): [str(t) for t in v] for k, v in applied.items() if isinstance(v, list)},
    )


def decode_moderation(
    data: bytes, request: ModerationRequest, *, warnings: list[CallWarning] | None = None, provider: str = "openai"
) -> ModerationResponse:
    """The moderation answer: one verdict per input when the service gave one per input, else one for them all."""
    obj = _object(data, provider, "moderation")
    results = obj.get("results")
    if not isinstance(results, list) or not results:
        raise MalformedResponseError("the moderation answer has no results", provider=provider)
    inputs = len(request.texts) + len(request.images)
    if len(results) == inputs:
        verdicts = [_verdict(item, i, provider) for i, item in enumerate(results)]
    elif len(results) == 1:
        verdicts = [_verdict(results[0], None, provider)]
    else:
        raise MalformedResponseError(
            f"the moderation answer has {len(results)} results for {inputs} inputs", provider=provider
        )
    model = obj.get("model")
    ident = obj.get("id")
    return ModerationResponse(
        verdicts=verdicts,
        model=model if isinstance(model, str) else request.model,
        id=ident if isinstance(ident, str) else None,
        warnings=list(warnings or []),
    )


# -- the provider's media calls --------------------------------------------------------------------------------------


class OpenAIMedia(HttpProvider):
    """The media calls of `OpenAIProvider`: images, speech, transcription and moderation. Every error leaves without
    the key, as for chat."""

    async def generate_image(self, request: ImageRequest) -> ImageResponse:
        """Make images, or edit the request's input images."""
        path, body, warnings = encode_image_request(request)
        return await self._request(
            self._call("POST", path, body),
            lambda r: decode_images(r.content, request, warnings=warnings, provider=self.name),
        )

    def stream_image(self, request: ImageRequest) -> MediaEventStream[ImageStreamEvent]:
        """Make one image, its partial images streamed as they come (`partial_images` of them, 0 to 3)."""
        path, body, warnings = encode_image_request(request, stream=True)

        def prepare() -> tuple[HttpCall, list[CallWarning]]:
            return self._call("POST", path, body, stream=True), warnings

        decoder = _ImageStreamDecoder(request, warnings, self.name)
        return MediaEventStream(self._events(prepare, decoder), warnings)

    async def synthesize(self, request: SpeechRequest) -> SpeechResponse:
        """Speak the request's text: the audio body as it comes (usage only for the models billed by character)."""
        body, warnings = encode_speech_request(request)
        call = self._call("POST", "/audio/speech", body)
        call.headers = Headers({**call.headers, "accept": "*/*"})

        def read(response: Any) -> SpeechResponse:
            audio = response.content
            if not audio:
                raise MalformedResponseError("the speech answer has no audio", provider=self.name)
            return SpeechResponse(
                audio=audio,
                content_type=_speech_type(request, response.headers.get("content-type")),
                usage=_speech_usage(request),
                model=request.model,
                warnings=list(warnings),
            )

        return await self._request(call, read)

    def stream_speech(self, request: SpeechRequest) -> MediaEventStream[SpeechStreamEvent]:
        """Speak the request's text, the audio streamed as it is made."""
        body, warnings = encode_speech_request(request, stream=True)

        def prepare() -> tuple[HttpCall, list[CallWarning]]:
            call = self._call("POST", "/audio/speech", body, stream=body.get("stream_format") == "sse")
            if body.get("stream_format") != "sse":
                call.headers = Headers({**call.headers, "accept": "*/*"})
            return call, warnings

        if body.get("stream_format") == "sse":
            decoder = _SpeechStreamDecoder(request, warnings, self.name)
            return MediaEventStream(self._events(prepare, decoder), warnings)
        return MediaEventStream(self._raw_audio(prepare, request, warnings), warnings)

    async def _raw_audio(
        self,
        prepare: Callable[[], tuple[HttpCall, list[CallWarning]]],
        request: SpeechRequest,
        warnings: list[CallWarning],
    ) -> AsyncIterator[SpeechStreamEvent]:
        """The audio body as it arrives (the stream of `tts-1` and `tts-1-hd`), bounded by the transport's idle and
        total stream timeouts."""
        call, _ = prepare()
        transport = self._transport
        response = await transport.open(call)
        header = response.headers.get("content-type")
        chunks = transport.aiter_bytes(call, response)
        received: list[bytes] = []
        idle = transport.stream_idle_timeout
        limit = transport.stream_timeout
        deadline = time.monotonic() + limit if limit is not None else None
        try:
            while True:
                wait = idle if idle is not None else float("inf")
                if deadline is not None:
                    wait = min(wait, deadline - time.monotonic())
                try:
                    with anyio.fail_after(max(wait, 0.0) if wait != float("inf") else None):
                        chunk = await chunks.__anext__()
                except StopAsyncIteration:
                    break
                except TimeoutError:
                    if deadline is not None and time.monotonic() >= deadline:
                        raise TransportError(f"the stream ran longer than {limit:g} s", provider=self.name) from None
                    raise TransportError(f"the stream sent nothing for {idle:g} s", provider=self.name) from None
                if chunk:
                    received.append(chunk)
                    yield AudioChunk(chunk)
        finally:
            close = getattr(chunks, "aclose", None)
            if close is not None:
                with anyio.CancelScope(shield=True):
                    await close()
        audio = b"".join(received)
        if not audio:
            raise MalformedResponseError("the speech answer has no audio", provider=self.name)
        yield MediaDone(
            SpeechResponse(
                audio=audio,
                content_type=_speech_type(request, header),
                usage=_speech_usage(request),
                model=request.model,
                warnings=list(warnings),
            )
        )

    async def transcribe(self, request: TranscriptionRequest) -> TranscriptionResponse:
        """Transcribe (or translate) the request's audio."""
        path, fields, files, warnings = encode_transcription_request(request)
        content, content_type = encode_multipart(fields, files)
        return await self._request(
            self._call("POST", path, content, content_type=content_type),
            lambda r: decode_transcription(r.content, request, warnings=warnings, provider=self.name),
        )

    def stream_transcription(self, request: TranscriptionRequest) -> MediaEventStream[TranscriptionStreamEvent]:
        """Transcribe the request's audio, the text streamed as it comes. `whisper-1` and translations do not stream:
        their whole text comes as one delta, with a warning."""
        if not _streams_text(request.model) or request.translate:
            return MediaEventStream(self._whole_transcript(request))
        path, fields, files, warnings = encode_transcription_request(request, stream=True)

        def prepare() -> tuple[HttpCall, list[CallWarning]]:
            content, content_type = encode_multipart(fields, files)
            return self._call("POST", path, content, stream=True, content_type=content_type), warnings

        decoder = _TranscriptStreamDecoder(request, warnings, self.name)
        return MediaEventStream(self._events(prepare, decoder), warnings)

    async def _whole_transcript(self, request: TranscriptionRequest) -> AsyncIterator[TranscriptionStreamEvent]:
        response = await self.transcribe(request)
        what = "translations do not stream" if request.translate else f"{request.model} does not stream"
        response.warnings.append(stripped("stream", request.model, f"{what}; the text came whole"))
        if response.text:
            yield TranscriptDelta(response.text)
        yield MediaDone(response)

    async def moderate(self, request: ModerationRequest) -> ModerationResponse:
        """Classify the request's texts and images in one call."""
        body = encode_moderation_request(request)
        return await self._request(
            self._call("POST", "/moderations", body),
            lambda r: decode_moderation(r.content, request, provider=self.name),
        )
