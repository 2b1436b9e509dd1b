"""What a media provider is asked and what it answers: images, speech, transcription and moderation, as bytes plus a
content type (`docs/media.md`).

Requests carry every setting a caller may give; a provider sends those its model takes and reports each one it drops
as a `parameter_stripped` warning on the response. Responses carry the provider's `Usage` when the service reported
one (or counted what the call is billed by exactly, such as the characters spoken), and `None` when it did not: the
runtime then leaves the cost unknown rather than guessing it.

A streamed call yields its events (`ImagePartial`, `AudioChunk`, `TranscriptDelta`) and ends with one `MediaDone`
holding the whole response, the same response the whole call gives.
"""

from __future__ import annotations

import os
import re
import struct
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Generic, TypeAlias, TypeVar

from onellm._public import publish as _publish
from onellm.messages import CallWarning, Usage

if TYPE_CHECKING:
    from onellm.catalog import ModelProfile

__all__ = [
    "AudioChunk",
    "GeneratedImage",
    "ImageInput",
    "ImagePartial",
    "ImageRequest",
    "ImageResponse",
    "ImageStreamEvent",
    "MediaDone",
    "MediaEventStream",
    "ModerationRequest",
    "ModerationResponse",
    "ModerationVerdict",
    "SpeakerVoice",
    "SpeechRequest",
    "SpeechResponse",
    "SpeechStreamEvent",
    "TranscriptDelta",
    "TranscriptionRequest",
    "TranscriptionResponse",
    "TranscriptionStreamEvent",
    "add_usage",
    "audio_file_name",
    "data_url",
    "encode_multipart",
    "pcm_to_wav",
    "sniff_audio_type",
    "sniff_image_type",
    "stripped",
    "utf16_length",
]

R = TypeVar("R")
E = TypeVar("E")


# -- inputs and outputs ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ImageInput:
    """An image given to a model (an image to edit, a mask, an image to moderate): its bytes and content type."""

    data: bytes
    content_type: str
    """`image/png`, `image/jpeg`, `image/webp`, ..."""
    name: str | None = None
    """The file name, when it came from a file."""

    def __repr__(self) -> str:
        return f"ImageInput({self.content_type!r}, {len(self.data)} bytes)"


@dataclass(frozen=True, slots=True)
class GeneratedImage:
    """One image a model made."""

    data: bytes
    content_type: str
    revised_prompt: str | None = None
    """The prompt the service actually used, when it rewrote the one given."""

    def __repr__(self) -> str:
        return f"GeneratedImage({self.content_type!r}, {len(self.data)} bytes)"


@dataclass(slots=True, kw_only=True)
class ImageRequest:
    """Make (or, with `images`, edit) images."""

    model: str
    prompt: str
    count: int = 1
    """How many images to make."""
    size: str | None = None
    """`WIDTHxHEIGHT` (`1024x1024`) or `auto` (OpenAI)."""
    aspect_ratio: str | None = None
    """`1:1`, `16:9`, ... (Gemini)."""
    quality: str | None = None
    background: str | None = None
    output_format: str | None = None
    """`png`, `jpeg` or `webp`."""
    output_compression: int | None = None
    style: str | None = None
    moderation: str | None = None
    input_fidelity: str | None = None
    images: Sequence[ImageInput] = ()
    """Images to edit or draw on; none for a new image."""
    mask: ImageInput | None = None
    """Where the first image may change (transparent pixels), for an edit."""
    partial_images: int | None = None
    """Partial images to send while streaming (0 to 3)."""
    user_id: str | None = None
    extra_parameters: dict[str, Any] = field(default_factory=dict)
    """Body fields sent as given, after everything else."""
    profile: ModelProfile | None = None


@dataclass(slots=True, kw_only=True)
class ImageResponse:
    images: list[GeneratedImage]
    usage: Usage | None
    model: str | None = None
    text: str | None = None
    """Text the model gave beside the images (Gemini)."""
    qualifiers: dict[str, str] = field(default_factory=dict)
    """What the image was made at (`size`, `quality`), for prices that depend on it."""
    warnings: list[CallWarning] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SpeakerVoice:
    """One speaker of a multi-speaker text and the voice that reads its lines (Gemini)."""

    speaker: str
    voice: str


@dataclass(slots=True, kw_only=True)
class SpeechRequest:
    """Speak a text."""

    model: str
    text: str
    voice: str | None = None
    speakers: Sequence[SpeakerVoice] = ()
    """Voices per speaker, for a text of several speakers (Gemini); exclusive with `voice`."""
    instructions: str | None = None
    """How to speak: tone, pace, accent (OpenAI's newer speech models)."""
    format: str | None = None
    """`mp3`, `opus`, `aac`, `flac`, `wav` or `pcm`."""
    speed: float | None = None
    language: str | None = None
    """A BCP 47 code (`en-US`), for Gemini."""
    extra_parameters: dict[str, Any] = field(default_factory=dict)
    profile: ModelProfile | None = None


@dataclass(slots=True, kw_only=True)
class SpeechResponse:
    audio: bytes
    content_type: str
    usage: Usage | None
    model: str | None = None
    warnings: list[CallWarning] = field(default_factory=list)

    def __repr__(self) -> str:
        return f"SpeechResponse({self.content_type!r}, {len(self.audio)} bytes, usage={self.usage!r})"


@dataclass(slots=True, kw_only=True)
class TranscriptionRequest:
    """Turn speech into text (or, with `translate`, into English text)."""

    model: str
    audio: bytes
    content_type: str
    file_name: str | None = None
    language: str | None = None
    """The language spoken (ISO 639-1, `en`), when known."""
    prompt: str | None = None
    translate: bool = False
    temperature: float | None = None
    timestamps: Sequence[str] = ()
    """`word` and/or `segment`."""
    logprobs: bool = False
    extra_parameters: dict[str, Any] = field(default_factory=dict)
    profile: ModelProfile | None = None

    def __repr__(self) -> str:
        return f"TranscriptionRequest({self.model!r}, {self.content_type!r}, {len(self.audio)} bytes)"


@dataclass(slots=True, kw_only=True)
class TranscriptionResponse:
    text: str
    usage: Usage | None
    language: str | None = None
    duration: Decimal | None = None
    """Seconds of audio, when the service said."""
    segments: list[dict[str, Any]] = field(default_factory=list)
    words: list[dict[str, Any]] = field(default_factory=list)
    model: str | None = None
    warnings: list[CallWarning] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True, kw_only=True)
class ModerationRequest:
    """Classify texts and images in one request."""

    model: str
    texts: Sequence[str] = ()
    images: Sequence[ImageInput] = ()
    extra_parameters: dict[str, Any] = field(default_factory=dict)
    profile: ModelProfile | None = None


@dataclass(slots=True, kw_only=True)
class ModerationVerdict:
    """The classification of one input (or, when the service answered once for all, of every input together)."""

    flagged: bool
    categories: dict[str, bool]
    """Each category and whether it was flagged."""
    scores: dict[str, float]
    """Each category's score, 0 to 1."""
    input_index: int | None = None
    """Which input this is about (texts first, then images), or None for all of them."""
    applied_input_types: dict[str, list[str]] = field(default_factory=dict)

    @property
    def flagged_categories(self) -> list[str]:
        """The names of the flagged categories."""
        return [name for name, flagged in self.categories.items() if flagged]


@dataclass(slots=True, kw_only=True)
class ModerationResponse:
    verdicts: list[ModerationVerdict]
    model: str | None = None
    id: str | None = None
    warnings: list[CallWarning] = field(default_factory=list)

    @property
    def flagged(self) -> bool:
        return any(v.flagged for v in self.verdicts)


# -- stream events ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ImagePartial:
    """A partial image while an image is being made: `index` counts them from 0."""

    index: int
    image: GeneratedImage


@dataclass(frozen=True, slots=True)
class AudioChunk:
    """The next piece of the audio, in the order it plays."""

    data: bytes

    def __repr__(self) -> str:
        return f"AudioChunk({len(self.data)} bytes)"


@dataclass(frozen=True, slots=True)
class TranscriptDelta:
    """The next piece of the transcript's text."""

    text: str


@dataclass(frozen=True, slots=True)
class MediaDone(Generic[R]):
    """The last event of a streamed media call: the whole response, as the whole call gives it."""

    response: R


ImageStreamEvent: TypeAlias = ImagePartial | MediaDone[ImageResponse]
SpeechStreamEvent: TypeAlias = AudioChunk | MediaDone[SpeechResponse]
TranscriptionStreamEvent: TypeAlias = TranscriptDelta | MediaDone[TranscriptionResponse]


class MediaEventStream(Generic[E]):
    """A streamed media call's events as they arrive, ending with `MediaDone`. `warnings` holds the settings the
    provider dropped once the call is sent; `aclose()` (or reading to the end) releases the connection."""

    __slots__ = ("_inner", "_warnings")

    def __init__(self, inner: AsyncIterator[Any], warnings: list[CallWarning] | None = None) -> None:
        self._inner = inner
        self._warnings = warnings

    @property
    def warnings(self) -> list[CallWarning]:
        if self._warnings is not None:
            return self._warnings
        found = getattr(self._inner, "warnings", None)
        return list(found) if found else []

    def __aiter__(self) -> MediaEventStream[E]:
        return self

    async def __anext__(self) -> E:
        event: E = await self._inner.__anext__()
        return event

    async def aclose(self) -> None:
        close = getattr(self._inner, "aclose", None)
        if close is not None:
            await close()

    async def __aenter__(self) -> MediaEventStream[E]:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


# -- helpers the codecs share ----------------------------------------------------------------------------------------


def stripped(parameter: str, model: str, why: str) -> CallWarning:
    """The warning for a setting a model does not take and that was therefore not sent."""
    return CallWarning(
        kind="parameter_stripped",
        message=f"{parameter} is not sent: {why}",
        detail={"parameter": parameter, "model": model},
    )


def utf16_length(text: str) -> int:
    """The length of `text` in UTF-16 code units, as `characters` are counted for pricing (a character outside the
    Basic Multilingual Plane counts twice)."""
    return len(text) + sum(1 for c in text if ord(c) > 0xFFFF)


def data_url(data: bytes, content_type: str) -> str:
    """`data:<type>;base64,<data>`."""
    import base64

    return f"data:{content_type};base64,{base64.b64encode(data).decode('ascii')}"


_IMAGE_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def sniff_image_type(data: bytes) -> str | None:
    """The image type the bytes begin with (PNG, JPEG, GIF, WebP), or None."""
    for magic, kind in _IMAGE_MAGIC:
        if data.startswith(magic):
            return kind
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def sniff_audio_type(data: bytes) -> str | None:
    """The audio type the bytes begin with (WAV, MP3, Ogg, FLAC, MP4/M4A, WebM), or None."""
    if data[:4] == b"RIFF" and data[8:12] == b"WAVE":
        return "audio/wav"
    if data[:3] == b"ID3" or (len(data) > 1 and data[0] == 0xFF and data[1] & 0xE0 == 0xE0):
        return "audio/mpeg"
    if data[:4] == b"OggS":
        return "audio/ogg"
    if data[:4] == b"fLaC":
        return "audio/flac"
    if data[4:8] == b"ftyp":
        return "audio/mp4"
    if data[:4] == b"\x1a\x45\xdf\xa3":
        return "audio/webm"
    return None


_AUDIO_EXTENSIONS = {
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/wave": "wav",
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
    "audio/ogg": "ogg",
    "audio/flac": "flac",
    "audio/x-flac": "flac",
    "audio/mp4": "m4a",
    "audio/m4a": "m4a",
    "audio/x-m4a": "m4a",
    "audio/webm": "webm",
    "video/mp4": "mp4",
    "video/webm": "webm",
}


def audio_file_name(given: str | None, content_type: str) -> str:
    """A file name for an upload: the given name's last component, else `audio.<extension of the type>` (services
    tell formats apart by the extension)."""
    if given:
        base = given.replace("\\", "/").rsplit("/", 1)[-1]
        if base:
            return base
    kind = content_type.split(";", 1)[0].strip().lower()
    return f"audio.{_AUDIO_EXTENSIONS.get(kind, 'bin')}"


_RATE = re.compile(r"(?:^|;)\s*rate\s*=\s*(\d+)", re.IGNORECASE)
_CHANNELS = re.compile(r"(?:^|;)\s*channels\s*=\s*(\d+)", re.IGNORECASE)


def pcm_to_wav(pcm: bytes, content_type: str | None = None, *, rate: int = 24_000, channels: int = 1) -> bytes:
    """Raw 16-bit little-endian PCM as a WAV file. The sample rate and channel count are read from the content type
    (`audio/L16;codec=pcm;rate=24000`) when it names them."""
    if content_type:
        found = _RATE.search(content_type)
        if found:
            rate = int(found.group(1))
        found = _CHANNELS.search(content_type)
        if found:
            channels = int(found.group(1))
    if not 0 < rate <= 1_000_000 or not 0 < channels <= 64:
        raise ValueError(f"not a usable PCM format: rate {rate}, channels {channels}")
    if len(pcm) > 0xFFFFFFFF - 44:
        raise ValueError("PCM audio above 4 GiB does not fit in a WAV file")
    bits = 16
    block = channels * bits // 8
    pad = b"\x00" if len(pcm) % 2 else b""  # a RIFF chunk has an even length; the pad byte is not counted
    header = b"RIFF" + struct.pack("<I", 36 + len(pcm) + len(pad)) + b"WAVE"
    fmt = b"fmt " + struct.pack("<IHHIIHH", 16, 1, channels, rate, rate * block, block, bits)
    return header + fmt + b"data" + struct.pack("<I", len(pcm)) + pcm + pad


def _header_value(text: str) -> str:
    """A name or file name inside a quoted `Content-Disposition` parameter: quote, CR and LF percent-escaped as
    browsers do, so a hostile name cannot end the header or add one."""
    return text.replace("%", "%25").replace('"', "%22").replace("\r", "%0D").replace("\n", "%0A")


def encode_multipart(
    fields: Sequence[tuple[str, str]], files: Sequence[tuple[str, str, str, bytes]]
) -> tuple[bytes, str]:
    """A `multipart/form-data` body: text `fields` (name, value; a name may repeat) then `files` (field name, file
    name, content type, bytes). Returns the body and its content type with the boundary."""
    while True:
        boundary = "onellm-" + os.urandom(16).hex()
        marker = boundary.encode("ascii")
        if not any(marker in value.encode("utf-8") for _, value in fields) and not any(
            marker in content for *_, content in files
        ):
            break
    parts: list[bytes] = []
    for name, value in fields:
        parts.append(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{_header_value(name)}"\r\n\r\n'.encode()
            + value.encode("utf-8")
            + b"\r\n"
        )
    for name, file_name, content_type, content in files:
        kind = content_type.replace("\r", "").replace("\n", "")
        parts.append(
            (
                f'--{boundary}\r\nContent-Disposition: form-data; name="{_header_value(name)}"; '
                f'filename="{_header_value(file_name)}"\r\nContent-Type: {kind}\r\n\r\n'
            ).encode()
            + content
            + b"\r\n"
        )
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


def add_usage(first: Usage | None, second: Usage | None) -> Usage | None:
    """Two calls' usage summed, counter by counter (None when neither reported any)."""
    if first is None:
        return second
    if second is None:
        return first
    counters: dict[str, int | Decimal] = dict(first.counters)
    for key, value in second.counters.items():
        counters[key] = counters.get(key, 0) + value
    return Usage(
        model=first.model or second.model,
        service_tier=first.service_tier or second.service_tier,
        input_tokens=first.input_tokens + second.input_tokens,
        output_tokens=first.output_tokens + second.output_tokens,
        cache_creation_input_tokens=first.cache_creation_input_tokens + second.cache_creation_input_tokens,
        cache_read_input_tokens=first.cache_read_input_tokens + second.cache_read_input_tokens,
        counters=counters,
    )


def settings_given(request: Any, names: Sequence[str]) -> list[str]:
    """The names among `names` that the request sets (not None, not empty)."""
    out = []
    for name in names:
        value = getattr(request, name)
        if value is None or value == () or value == [] or value is False:
            continue
        out.append(name)
    return out


def mapping_of(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


_publish("onellm", ImageInput)
_publish(
    "onellm.media",
    AudioChunk,
    GeneratedImage,
    ImagePartial,
    ImageRequest,
    ImageResponse,
    MediaDone,
    MediaEventStream,
    ModerationRequest,
    ModerationResponse,
    ModerationVerdict,
    SpeakerVoice,
    SpeechRequest,
    SpeechResponse,
    TranscriptDelta,
    TranscriptionRequest,
    TranscriptionResponse,
)
