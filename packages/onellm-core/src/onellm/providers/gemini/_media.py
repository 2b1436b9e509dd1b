"""Images and speech over the Gemini API: `generateContent` with the `IMAGE` or `AUDIO` response modality
(`docs/media.md`).

- Images: the prompt and any input images (inline data) as one user turn; `aspectRatio` in `imageConfig`. One call per
  image when more than one is asked for, run side by side, their usage summed; when some of them fail after others
  succeeded, the images made are returned with a warning naming the failures, since they are paid for.
- Speech: a prebuilt voice (`voiceConfig`) or a voice per speaker (`multiSpeakerVoiceConfig`), and a language code.
  The model answers raw 16-bit PCM (`audio/L16;codec=pcm;rate=24000`), which is wrapped as WAV unless `pcm` is asked.
- Usage is the chat codec's (`usage_from`): the image and audio tokens of the answer are `outputImageTokens` and
  `outputAudioTokens`, subsets of the output tokens.

Settings the API does not take for these models (`size`, `quality`, a mask, `speed`, ...) are dropped with a warning.
Gemini has no media streaming, transcription endpoint or moderation endpoint.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import anyio
import msgspec

from onellm.errors import (
    ContentFilterError,
    MalformedResponseError,
    OnellmError,
    RefusedError,
    UnsupportedParameterError,
)
from onellm.messages import CallWarning, Usage
from onellm.providers._base import HttpProvider
from onellm.providers._media import (
    GeneratedImage,
    ImageRequest,
    ImageResponse,
    SpeechRequest,
    SpeechResponse,
    add_usage,
    mapping_of,
    pcm_to_wav,
    settings_given,
    sniff_image_type,
    stripped,
)
from onellm.providers.gemini._response import usage_from

if TYPE_CHECKING:
    from onellm.providers._http import HttpCall

__all__ = ["GeminiMedia", "decode_image_answer", "decode_speech_answer", "encode_image_body", "encode_speech_body"]

_decode = msgspec.json.Decoder(float_hook=Decimal).decode
_IMAGE_DROPPED = (
    "size",
    "quality",
    "background",
    "output_format",
    "output_compression",
    "style",
    "moderation",
    "input_fidelity",
    "partial_images",
    "mask",
    "user_id",
)
_SPEECH_DROPPED = ("instructions", "speed")
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


def _why(name: str) -> str:
    return {
        "size": "Gemini takes an aspect ratio, not a size",
        "mask": "Gemini edits from the prompt and has no mask",
        "instructions": "Gemini speech takes its directions inside the text",
        "user_id": "Gemini takes no end-user id",
    }.get(name, "Gemini does not take it")


def encode_image_body(request: ImageRequest) -> tuple[dict[str, Any], list[CallWarning]]:
    """The `generateContent` body for one image, and the warnings for dropped settings."""
    model = request.model
    warnings = [stripped(name, model, _why(name)) for name in settings_given(request, _IMAGE_DROPPED)]
    parts: list[dict[str, Any]] = [{"text": request.prompt}]
    parts.extend(
        {"inlineData": {"mimeType": image.content_type, "data": base64.b64encode(image.data).decode("ascii")}}
        for image in request.images
    )
    config: dict[str, Any] = {"responseModalities": ["IMAGE"]}
    if request.aspect_ratio is not None:
        config["imageConfig"] = {"aspectRatio": request.aspect_ratio}
    body: dict[str, Any] = {"contents": [{"role": "user", "parts": parts}], "generationConfig": config}
    body.update(request.extra_parameters)
    return body, warnings


def _voice(name: str) -> dict[str, Any]:
    return {"prebuiltVoiceConfig": {"voiceName": name}}


def encode_speech_body(request: SpeechRequest) -> tuple[dict[str, Any], list[CallWarning]]:
    """The `generateContent` body for speech, and the warnings for dropped settings."""
    model = request.model
    if request.voice is not None and request.speakers:
        raise UnsupportedParameterError(
            "give either one voice or a voice per speaker, not both", parameter="speakers", model=model
        )
    warnings = [stripped(name, model, _why(name)) for name in settings_given(request, _SPEECH_DROPPED)]
    fmt = (request.format or "wav").lower()
    if fmt not in ("wav", "pcm"):
        warnings.append(stripped("format", model, f"Gemini speaks raw PCM, given as WAV, not {fmt}"))
    speech: dict[str, Any] = {}
    if request.speakers:
        speech["multiSpeakerVoiceConfig"] = {
            "speakerVoiceConfigs": [{"speaker": s.speaker, "voiceConfig": _voice(s.voice)} for s in request.speakers]
        }
    elif request.voice is not None:
        speech["voiceConfig"] = _voice(request.voice)
    if request.language is not None:
        speech["languageCode"] = request.language
    config: dict[str, Any] = {"responseModalities": ["AUDIO"]}
    if speech:
        config["speechConfig"] = speech
    body: dict[str, Any] = {
        "contents": [{"role": "user", "parts": [{"text": request.text}]}],
        "generationConfig": config,
    }
    body.update(request.extra_parameters)
    return body, warnings


def _answer(data: bytes, provider: str) -> tuple[list[dict[str, Any]], str | None, dict[str, Any]]:
    """The first candidate's parts, its finish reason and the whole answer; a blocked prompt or a filtered answer is
    `ContentFilterError`."""
    try:
        obj = _decode(data)
    except msgspec.DecodeError as error:
        raise MalformedResponseError(f"the response is not valid JSON: {error}", provider=provider) from error
    if not isinstance(obj, dict):
        raise MalformedResponseError("the answer is not a JSON object", provider=provider)
    feedback = mapping_of(obj.get("promptFeedback"))
    reason = feedback.get("blockReason")
    if isinstance(reason, str) and reason:
        raise ContentFilterError(f"the prompt was blocked ({reason})", provider=provider)
    candidates = obj.get("candidates")
    first = mapping_of(candidates[0]) if isinstance(candidates, list) and candidates else {}
    finish = first.get("finishReason")
    parts = mapping_of(first.get("content")).get("parts")
    found = [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []
    return found, finish if isinstance(finish, str) else None, obj


def _inline(part: dict[str, Any], provider: str) -> tuple[bytes, str] | None:
    blob = part.get("inlineData")
    if not isinstance(blob, dict):
        return None
    data = blob.get("data")
    try:
        raw = base64.b64decode(data, validate=True) if isinstance(data, str) else b""
    except (binascii.Error, ValueError) as error:
        raise MalformedResponseError(f"inline data is not valid base64: {error}", provider=provider) from error
    kind = blob.get("mimeType")
    return raw, kind if isinstance(kind, str) else ""


def _no_media(what: str, text: str, finish: str | None, provider: str) -> OnellmError:
    if finish in _FILTERED:
        return ContentFilterError(f"the {what} was filtered ({finish})", provider=provider)
    said = f": {text[:500]}" if text else ""
    return RefusedError(f"the model answered without {what}{said}", provider=provider)


def decode_image_answer(data: bytes, model: str, provider: str) -> tuple[list[GeneratedImage], str, Usage | None]:
    """The images, the text and the usage of one `generateContent` answer."""
    parts, finish, obj = _answer(data, provider)
    images: list[GeneratedImage] = []
    texts: list[str] = []
    for part in parts:
        if part.get("thought") is True:
            continue
        inline = _inline(part, provider)
        if inline is not None and inline[0]:
            raw, kind = inline
            if kind.startswith("image/") or sniff_image_type(raw):
                images.append(GeneratedImage(raw, sniff_image_type(raw) or kind))
        elif isinstance(part.get("text"), str):
            texts.append(part["text"])
    text = "".join(texts)
    if not images:
        raise _no_media("an image", text, finish, provider)
    wire = obj.get("usageMetadata")
    usage = usage_from(wire, model=model) if isinstance(wire, dict) else None
    return images, text, usage


def decode_speech_answer(data: bytes, request: SpeechRequest, provider: str) -> SpeechResponse:
    """The audio (PCM joined in order, as WAV unless `pcm` was asked) and the usage of one answer."""
    parts, finish, obj = _answer(data, provider)
    chunks: list[bytes] = []
    kind = ""
    for part in parts:
        inline = _inline(part, provider)
        if inline is not None and inline[0]:
            chunks.append(inline[0])
            kind = kind or inline[1]
    if not chunks:
        texts = "".join(p["text"] for p in parts if isinstance(p.get("text"), str))
        raise _no_media("audio", texts, finish, provider)
    pcm = b"".join(chunks)
    lowered = kind.lower()
    raw_pcm = not lowered or lowered.startswith(("audio/l16", "audio/pcm")) or "codec=pcm" in lowered
    if (request.format or "").lower() == "pcm" or not raw_pcm:
        audio, content_type = pcm, kind or "audio/L16;codec=pcm;rate=24000"
    else:
        try:
            audio, content_type = pcm_to_wav(pcm, kind), "audio/wav"
        except ValueError as error:
            raise MalformedResponseError(f"the audio's format is not usable: {error}", provider=provider) from error
    wire = obj.get("usageMetadata")
    usage = usage_from(wire, model=request.model) if isinstance(wire, dict) else None
    if usage is not None and "outputAudioTokens" not in usage.counters:
        # Without a per-modality breakdown every output token of a speech-only answer is audio.
        audio_tokens = usage.output_tokens - int(usage.counters.get("reasoningTokens", 0))
        if audio_tokens > 0:
            usage.counters["outputAudioTokens"] = audio_tokens
    return SpeechResponse(audio=audio, content_type=content_type, usage=usage, model=request.model)


class GeminiMedia(HttpProvider):
    """The media calls of `GeminiProvider`: images and speech through `generateContent`."""

    if TYPE_CHECKING:
        _gemini_call: Callable[..., HttpCall]
        _model_path: Callable[[str], str]

    async def generate_image(self, request: ImageRequest) -> ImageResponse:
        """Make `request.count` images (one call each, side by side), or edit the request's input images."""
        if request.count < 1:
            raise UnsupportedParameterError("count must be 1 or more", parameter="count", model=request.model)
        body, warnings = encode_image_body(request)
        path = f"{self._model_path(request.model)}:generateContent"
        provider = self.name

        async def one() -> tuple[list[GeneratedImage], str, Usage | None]:
            return await self._request(
                self._gemini_call(path, body), lambda r: decode_image_answer(r.content, request.model, provider)
            )

        if request.count == 1:
            images, text, usage = await one()
            return ImageResponse(
                images=images, usage=usage, model=request.model, text=text or None, warnings=list(warnings)
            )
        results: list[tuple[list[GeneratedImage], str, Usage | None] | BaseException | None] = [None] * request.count

        async def run(position: int) -> None:
            try:
                results[position] = await one()
            except Exception as error:  # kept: the calls that succeeded are paid for and returned
                results[position] = error

        async with anyio.create_task_group() as group:
            for position in range(request.count):
                group.start_soon(run, position)
        made = [r for r in results if isinstance(r, tuple)]
        failed = [(i, r) for i, r in enumerate(results) if isinstance(r, BaseException)]
        if not made:
            first = failed[0][1]
            raise first
        images = [image for answer in made for image in answer[0]]
        total: Usage | None = None
        for answer in made:
            total = add_usage(total, answer[2])
        if any(answer[2] is None for answer in made):
            total = None  # a call without usage leaves the sum unknown
        text = "\n".join(answer[1] for answer in made if answer[1])
        out_warnings = list(warnings)
        if failed:
            out_warnings.append(
                CallWarning(
                    kind="partial_result",
                    message=f"{len(failed)} of {request.count} image calls failed; the {len(made)} made are returned: "
                    + "; ".join(f"call {i + 1}: {type(e).__name__}: {e}" for i, e in failed),
                    detail={"asked": request.count, "made": len(made), "failed": [i for i, _ in failed]},
                )
            )
        return ImageResponse(images=images, usage=total, model=request.model, text=text or None, warnings=out_warnings)

    async def synthesize(self, request: SpeechRequest) -> SpeechResponse:
        """Speak the request's text with a prebuilt voice, or a voice per speaker."""
        body, warnings = encode_speech_body(request)
        path = f"{self._model_path(request.model)}:generateContent"
        response = await self._request(
            self._gemini_call(path, body), lambda r: decode_speech_answer(r.content, request, self.name)
        )
        response.warnings = [*warnings, *response.warnings]
        return response
