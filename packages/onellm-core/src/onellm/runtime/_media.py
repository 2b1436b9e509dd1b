"""Media calls through the runtime: images, speech, transcription and moderation (`docs/media.md`).

Each call is routed like a chat call (the catalog resolves the model, the registry gives its provider), held on the
spend caps, priced from the catalog, recorded (`inference` records with the operation `images`, `speech`,
`transcription` or `moderation`) and traced; like embeddings it makes no instance. What a call returns is bytes plus a
content type (or the text, or the verdicts), its `usage`, its `cost` and its `warnings`.

- A setting the model does not take is dropped by the provider and reported in `warnings` (`parameter_stripped`).
- A call whose service reports no usage (OpenAI's `gpt-4o-mini-tts` spoken whole, a transcript with neither tokens nor
  a duration) has `cost` None and a `usage_missing` warning: onellm does not estimate a cost it cannot know.
- Moderation is free: its cost is a total of zero.
- A model the catalog lists with another kind (`chat` for an image call) is refused before anything is sent; a model
  the catalog does not describe is tried.
"""

from __future__ import annotations

import base64
import binascii
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Generic, TypeAlias, TypedDict, TypeVar, Unpack

import anyio

from onellm._public import publish as _publish
from onellm.catalog.pricing import price_media
from onellm.errors import CapabilityMissingError, MalformedResponseError, UnsupportedParameterError
from onellm.messages import AssetPart, CallWarning, Cost, Usage
from onellm.providers import (
    AudioChunk,
    GeneratedImage,
    ImageInput,
    ImagePartial,
    ImageProvider,
    ImageRequest,
    ImageResponse,
    ImageStreamingProvider,
    MediaDone,
    ModerationProvider,
    ModerationRequest,
    ModerationResponse,
    ModerationVerdict,
    SpeakerVoice,
    SpeechProvider,
    SpeechRequest,
    SpeechResponse,
    SpeechStreamingProvider,
    TranscriptDelta,
    TranscriptionProvider,
    TranscriptionRequest,
    TranscriptionResponse,
    TranscriptionStreamingProvider,
    sniff_audio_type,
    sniff_image_type,
    utf16_length,
)

if TYPE_CHECKING:
    from onellm.catalog import ResolvedModel
    from onellm.catalog.spend import CostEstimate, Reservation
    from onellm.runtime._services import RuntimeServices
    from onellm.telemetry import CallObserver

__all__ = [
    "AudioSource",
    "ImageOptions",
    "ImageResult",
    "ImageSource",
    "MediaMethods",
    "MediaStream",
    "ModerationResult",
    "SpeechOptions",
    "SpeechResult",
    "TranscriptionOptions",
    "TranscriptionResult",
    "audio_input",
    "generate_image",
    "image_input",
    "moderate",
    "speak",
    "stream_image",
    "stream_speech",
    "stream_transcription",
    "transcribe",
]

E = TypeVar("E")
R = TypeVar("R")

ImageSource: TypeAlias = "ImageInput | AssetPart | bytes | str | os.PathLike[str]"
"""An image given to a call: an `ImageInput`, an asset part with inline data (`Asset.file(...)`), bytes of a PNG,
JPEG, GIF or WebP file, or a path."""
AudioSource: TypeAlias = "AssetPart | bytes | str | os.PathLike[str]"
"""Audio given to a call: an asset part with inline data, the bytes of an audio file, or a path."""

OPERATIONS = {"images": "image", "speech": "speech", "transcription": "transcription", "moderation": "moderation"}
"""Each media operation and the catalog `kind` of the models that serve it."""
_WHAT = {
    "images": "make images",
    "speech": "speak",
    "transcription": "transcribe audio",
    "moderation": "moderate content",
}
_ZERO = Decimal(0)
_IMAGE_OPTIONS = frozenset(
    {
        "size",
        "aspect_ratio",
        "quality",
        "background",
        "output_format",
        "output_compression",
        "style",
        "moderation",
        "input_fidelity",
        "user_id",
    }
)


# -- results ---------------------------------------------------------------------------------------------------------


@dataclass(slots=True, kw_only=True)
class ImageResult:
    """The images a call made, with the call's usage, cost and warnings."""

    images: list[GeneratedImage]
    usage: Usage | None
    cost: Cost | None
    """The priced cost; None when the service reported no usage (see `warnings`)."""
    warnings: list[CallWarning] = field(default_factory=list)
    model: str = ""
    """The model as `provider:model`."""
    text: str | None = None
    """Text the model gave beside the images, if any."""

    @property
    def data(self) -> bytes:
        """The first image's bytes."""
        return self.images[0].data

    @property
    def content_type(self) -> str:
        """The first image's content type (`image/png`, ...)."""
        return self.images[0].content_type

    def parts(self) -> list[AssetPart]:
        """The images as asset parts with inline data, for a message or a tool result."""
        return [_asset(image.data, image.content_type) for image in self.images]


@dataclass(slots=True, kw_only=True)
class SpeechResult:
    """The audio of a spoken text, with the call's usage, cost and warnings."""

    data: bytes
    content_type: str
    """`audio/mpeg`, `audio/wav`, ..."""
    usage: Usage | None
    cost: Cost | None
    warnings: list[CallWarning] = field(default_factory=list)
    model: str = ""

    def __repr__(self) -> str:
        return f"SpeechResult({self.content_type!r}, {len(self.data)} bytes, cost={self.cost!r})"

    def part(self) -> AssetPart:
        """The audio as an asset part with inline data."""
        return _asset(self.data, self.content_type)


@dataclass(slots=True, kw_only=True)
class TranscriptionResult:
    """The text of transcribed (or translated) audio, with the call's usage, cost and warnings."""

    text: str
    usage: Usage | None
    cost: Cost | None
    warnings: list[CallWarning] = field(default_factory=list)
    model: str = ""
    language: str | None = None
    duration: Decimal | None = None
    """Seconds of audio, when the service said."""
    segments: list[dict[str, Any]] = field(default_factory=list)
    words: list[dict[str, Any]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    """What else the service said (log probabilities, detected languages, ...)."""


@dataclass(slots=True, kw_only=True)
class ModerationResult:
    """The verdicts on the inputs (texts first, then images): one per input, or one for them all when the service
    answered once."""

    verdicts: list[ModerationVerdict]
    usage: Usage | None = None
    cost: Cost = field(default_factory=Cost)
    """Always zero: moderation is free."""
    warnings: list[CallWarning] = field(default_factory=list)
    model: str = ""

    @property
    def flagged(self) -> bool:
        """Whether any input was flagged."""
        return any(v.flagged for v in self.verdicts)

    def to_data(self) -> dict[str, Any]:
        """The verdicts as plain data: `flagged`, then per verdict its input, flagged categories and scores."""
        return {
            "flagged": self.flagged,
            "results": [
                {
                    "input": v.input_index,
                    "flagged": v.flagged,
                    "categories": v.flagged_categories,
                    "scores": dict(v.scores),
                }
                for v in self.verdicts
            ],
        }


def _asset(data: bytes, content_type: str) -> AssetPart:
    return AssetPart(storage="inline", content_type=content_type, size=len(data), data=data)


# -- inputs ----------------------------------------------------------------------------------------------------------


def _inline_bytes(part: AssetPart, where: str) -> bytes:
    data = part.data
    if isinstance(data, bytes | bytearray | memoryview):
        return bytes(data)
    if isinstance(data, str):
        try:
            return base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError(f"{where}: the asset's inline data is neither bytes nor base64") from None
    raise ValueError(f"{where}: the asset part has no inline data (load it from its store first)")


def _from_path(value: str | os.PathLike[str]) -> AssetPart:
    from onellm.runtime._assets import Asset

    return Asset.file(value)


def image_input(value: Any, where: str = "image") -> ImageInput:
    """An image given to a call as an `ImageInput` (see `ImageSource`).

    Raises:
        TypeError: not an image source.
        ValueError: bytes whose type cannot be told, or an asset without inline data.
        FileNotFoundError: a path that does not exist.
    """
    if isinstance(value, ImageInput):
        return value
    if isinstance(value, str | os.PathLike):
        value = _from_path(value)
    if isinstance(value, AssetPart):
        data = _inline_bytes(value, where)
        kind = value.content_type or sniff_image_type(data)
        if not kind:
            raise ValueError(f"{where}: the asset has no content type and is not a PNG, JPEG, GIF or WebP image")
        if not kind.startswith("image/"):
            sniffed = sniff_image_type(data)
            if sniffed is None:
                raise ValueError(f"{where}: {value.name or 'the asset'} is {kind}, not an image")
            kind = sniffed
        return ImageInput(data, kind, value.name)
    if isinstance(value, bytes | bytearray | memoryview):
        data = bytes(value)
        kind = sniff_image_type(data)
        if kind is None:
            raise ValueError(
                f"{where}: the bytes are not a PNG, JPEG, GIF or WebP image; give an ImageInput with its type"
            )
        return ImageInput(data, kind)
    raise TypeError(f"{where}: expected an image (ImageInput, asset part, bytes or path), not {type(value).__name__}")


def audio_input(value: Any, content_type: str | None = None, where: str = "audio") -> tuple[bytes, str, str | None]:
    """Audio given to a call: its bytes, content type and file name (see `AudioSource`).

    Raises:
        TypeError: not an audio source.
        ValueError: audio whose type cannot be told, or an asset without inline data.
        FileNotFoundError: a path that does not exist.
    """
    name: str | None = None
    if isinstance(value, str | os.PathLike):
        value = _from_path(value)
    if isinstance(value, AssetPart):
        data = _inline_bytes(value, where)
        name = value.name
        given = content_type or value.content_type
        if given == "application/octet-stream":
            given = None
    elif isinstance(value, bytes | bytearray | memoryview):
        data = bytes(value)
        given = content_type
    else:
        raise TypeError(f"{where}: expected audio (asset part, bytes or path), not {type(value).__name__}")
    if not data:
        raise ValueError(f"{where}: the audio is empty")
    kind = given or sniff_audio_type(data)
    if not kind:
        raise ValueError(f"{where}: the audio's format cannot be told; give content_type= (for example 'audio/wav')")
    return data, kind, name


# -- pricing ---------------------------------------------------------------------------------------------------------


def _settle(usage: Usage | None, cost: Cost | None) -> None:
    """Put the cost on the usage, as a chat call's usage carries it."""
    if usage is not None and cost is not None:
        usage.cost = cost.total if cost.priced or cost.lines else None
        usage.cost_lines = list(cost.lines)


def _estimate(
    resolved: ResolvedModel, operation: str, text: str, *, count: int = 1, character_billed: bool = False
) -> tuple[CostEstimate | Decimal | None, str | None]:
    """The worst case of a media call before it is sent, or None with the reason it cannot be known."""
    if operation == "moderation":
        return _ZERO, None
    if character_billed:
        cost = resolved.price(Usage(counters={"characters": utf16_length(text)}))
        if cost.priced:
            return cost.total, None
    if operation == "transcription":
        return None, "a transcription's cost is not known before the audio is heard"
    from onellm.catalog.counting import TokenEstimator
    from onellm.catalog.spend import CostEstimate

    limit = resolved.entry.max_output_tokens
    if not isinstance(limit, int) or isinstance(limit, bool):
        return None, f"{resolved.qualified_name} has no output limit in the catalog"
    tokens = TokenEstimator(resolved).text(text)
    subset = "outputImageTokens" if operation == "images" else "outputAudioTokens"
    worst: Cost | None = None
    for usage in (
        Usage(input_tokens=tokens, output_tokens=limit),
        Usage(input_tokens=tokens, output_tokens=limit, counters={subset: limit}),
    ):
        cost = resolved.price(usage)
        if not cost.priced:
            return None, f"{resolved.qualified_name} has no complete price in the catalog"
        if worst is None or cost.total > worst.total:
            worst = cost
    assert worst is not None
    return CostEstimate(worst.total * count, tokens * count, limit * count, cost=worst), None


# -- one call --------------------------------------------------------------------------------------------------------


class _Flight:
    """One media call in flight: routed, held on the caps, traced; settled once, by `done` or `fail`."""

    __slots__ = (
        "operation",
        "provider",
        "requested",
        "reservation",
        "resolved",
        "services",
        "settled",
        "span",
        "start",
    )

    def __init__(self, services: RuntimeServices, model: str, operation: str, protocol: type) -> None:
        resolved, provider = services.route(model)
        expected = OPERATIONS[operation]
        kind = resolved.entry.kind
        if kind is not None and kind != expected:
            raise UnsupportedParameterError(
                f"{resolved.qualified_name} is a {kind} model; the catalog lists no {expected} model by that name",
                parameter="model",
                model=resolved.qualified_name,
            )
        if not isinstance(provider, protocol):
            raise CapabilityMissingError(
                f"{resolved.qualified_name}: provider {getattr(provider, 'name', resolved.provider)!r} does not "
                f"{_WHAT[operation]}" + (" as a stream" if "Streaming" in protocol.__name__ else "")
            )
        self.services = services
        self.resolved = resolved
        self.provider: Any = provider
        self.requested = model
        self.operation = operation
        self.reservation: Reservation | None = None
        self.span: CallObserver | None = None
        self.start = 0.0
        self.settled = False

    def take_off(self, estimate: CostEstimate | Decimal | None, reason: str | None) -> None:
        """Hold the worst case (or refuse), then start the span and the clock."""
        self.reservation = self.services.spend.reserve_estimate(estimate, reason=reason)
        from onellm.telemetry import start_model_call

        self.span = start_model_call(self.operation, self.resolved.provider, self.requested)
        self.start = time.perf_counter()

    async def fail(self, error: BaseException) -> None:
        if self.settled:
            return
        self.settled = True
        if self.reservation is not None:
            self.reservation.release()
        if self.span is not None:
            self.span.fail(error)
        services = self.services
        if services.recording and not isinstance(error, anyio.get_cancelled_exc_class()):
            from onellm.records import ErrorRecord

            with anyio.CancelScope(shield=True):
                await services.record(
                    ErrorRecord(error_type=type(error).__name__, message=str(error), where=self.operation)
                )

    async def abandon(self) -> None:
        """The caller stopped reading a stream part-way: what was made may be paid for, so the hold is spent."""
        if self.settled:
            return
        self.settled = True
        if self.reservation is not None:
            self.reservation.commit(None)
        if self.span is not None:
            self.span.fail(anyio.get_cancelled_exc_class()())

    async def done(
        self, usage: Usage | None, model: str | None, qualifiers: Mapping[str, str] | None = None
    ) -> tuple[Cost | None, list[CallWarning]]:
        """Price, settle, trace and record a paid answer, shielded from cancellation."""
        with anyio.CancelScope(shield=True):
            self.settled = True
            services = self.services
            cost, warnings = price_media(
                self.resolved, usage, self.operation, qualifiers=qualifiers, at=services.clock.now()
            )
            if self.reservation is not None:
                self.reservation.commit(cost.total if cost is not None and cost.priced else None)
            _settle(usage, cost)
            if self.span is not None:
                self.span.succeed(
                    response_model=model or self.resolved.name, response_id=None, finish_reason=None, usage=usage
                )
            if services.recording:
                from onellm.records import InferenceRecord

                await services.record(
                    InferenceRecord(
                        provider=self.resolved.provider,
                        operation=self.operation,
                        duration_ms=Decimal(int((time.perf_counter() - self.start) * 1000)),
                        usage=usage,
                    )
                )
        return cost, warnings

    async def call(self, make: Callable[[], Awaitable[R]]) -> R:
        try:
            return await make()
        except BaseException as error:
            await self.fail(error)
            raise


# -- results from responses ------------------------------------------------------------------------------------------


async def _image_result(flight: _Flight, response: ImageResponse) -> ImageResult:
    cost, warnings = await flight.done(response.usage, response.model, response.qualifiers)
    return ImageResult(
        images=response.images,
        usage=response.usage,
        cost=cost,
        warnings=[*response.warnings, *warnings],
        model=flight.resolved.qualified_name,
        text=response.text,
    )


async def _speech_result(flight: _Flight, response: SpeechResponse) -> SpeechResult:
    cost, warnings = await flight.done(response.usage, response.model)
    return SpeechResult(
        data=response.audio,
        content_type=response.content_type,
        usage=response.usage,
        cost=cost,
        warnings=[*response.warnings, *warnings],
        model=flight.resolved.qualified_name,
    )


async def _transcription_result(flight: _Flight, response: TranscriptionResponse) -> TranscriptionResult:
    cost, warnings = await flight.done(response.usage, response.model)
    return TranscriptionResult(
        text=response.text,
        usage=response.usage,
        cost=cost,
        warnings=[*response.warnings, *warnings],
        model=flight.resolved.qualified_name,
        language=response.language,
        duration=response.duration,
        segments=response.segments,
        words=response.words,
        extra=response.extra,
    )


# -- streams ---------------------------------------------------------------------------------------------------------


class MediaStream(Generic[E, R]):
    """A streamed media call. Iterate its events as they arrive (`ImagePartial`, `AudioChunk` or `TranscriptDelta`),
    then `await stream.result()` for the whole result, priced; `result()` alone reads the stream to its end. Use it
    as an async context manager, or call `aclose()`, to release the connection when stopping early.

    <!-- skip: next "a sketch: `player` stands for the application's audio output; docs/media.md runs a whole stream" -->

    ```python
    async with onellm.stream_speech("gpt-4o-mini-tts", "Hello there.") as speech:
        async for chunk in speech:
            player.feed(chunk.data)
        result = await speech.result()
    ```
    """

    __slots__ = ("_closed", "_events", "_finish", "_flight", "_open", "_result")

    def __init__(
        self,
        open_stream: Callable[[], tuple[_Flight, AsyncIterator[Any]]],
        finish: Callable[[_Flight, Any], Awaitable[R]],
    ) -> None:
        self._open = open_stream
        self._finish = finish
        self._flight: _Flight | None = None
        self._events: AsyncIterator[Any] | None = None
        self._result: R | None = None
        self._closed = False

    def __repr__(self) -> str:
        state = (
            "done"
            if self._result is not None
            else "closed"
            if self._closed
            else "open"
            if self._events is not None
            else "not started"
        )
        return f"MediaStream({state})"

    def __aiter__(self) -> MediaStream[E, R]:
        return self

    async def __anext__(self) -> E:
        if self._result is not None or self._closed:
            raise StopAsyncIteration
        if self._events is None:
            try:
                self._flight, self._events = self._open()
            except BaseException:
                self._closed = True
                raise
        flight = self._flight
        assert flight is not None
        try:
            event = await self._events.__anext__()
        except StopAsyncIteration:
            self._closed = True
            failure = MalformedResponseError(
                "the media stream ended without its result", provider=getattr(flight.provider, "name", None)
            )
            await flight.fail(failure)
            raise failure from None
        except BaseException as error:
            self._closed = True
            await flight.fail(error)
            await self._close_events()
            raise
        if isinstance(event, MediaDone):
            self._result = await self._finish(flight, event.response)
            await self._close_events()
            raise StopAsyncIteration
        result: E = event
        return result

    async def result(self) -> R:
        """The whole result, priced: the rest of the stream is read first."""
        async for _ in self:
            pass
        if self._result is None:
            raise RuntimeError("the media stream was closed before its end")
        return self._result

    async def aclose(self) -> None:
        """Stop reading; the connection is released before this returns."""
        self._closed = True
        if self._flight is not None and self._result is None:
            await self._flight.abandon()
        await self._close_events()

    async def _close_events(self) -> None:
        events = self._events
        close = getattr(events, "aclose", None)
        if close is not None:
            with anyio.CancelScope(shield=True):
                await close()

    async def __aenter__(self) -> MediaStream[E, R]:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


# -- the calls -------------------------------------------------------------------------------------------------------


def _image_request(
    resolved: ResolvedModel,
    prompt: str,
    *,
    images: Sequence[Any],
    mask: Any,
    count: int,
    options: Mapping[str, Any],
    extra: Mapping[str, Any] | None,
) -> ImageRequest:
    if not isinstance(prompt, str) or not prompt.strip():
        raise ValueError("prompt: describe the image to make")
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"count: expected 1 or more images, not {count!r}")
    unknown = sorted(set(options) - _IMAGE_OPTIONS)
    if unknown:
        raise TypeError(f"unknown image option {unknown[0]!r}; the options are {', '.join(sorted(_IMAGE_OPTIONS))}")
    if isinstance(images, str | bytes | os.PathLike | ImageInput | AssetPart):
        images = [images]
    inputs = [image_input(image, f"images[{i}]") for i, image in enumerate(images)]
    return ImageRequest(
        model=resolved.name,
        prompt=prompt,
        count=count,
        images=inputs,
        mask=image_input(mask, "mask") if mask is not None else None,
        extra_parameters=dict(extra or {}),
        profile=resolved.profile,
        **options,
    )


async def generate_image(
    services: RuntimeServices,
    model: str,
    prompt: str,
    *,
    images: Sequence[Any] = (),
    mask: Any = None,
    count: int = 1,
    extra: Mapping[str, Any] | None = None,
    **options: Any,
) -> ImageResult:
    """Make `count` images from `prompt` (or edit `images`, within `mask`). See `onellm.generate_image`."""
    flight = _Flight(services, model, "images", ImageProvider)
    request = _image_request(
        flight.resolved, prompt, images=images, mask=mask, count=count, options=options, extra=extra
    )
    flight.take_off(*_estimate(flight.resolved, "images", prompt, count=count))
    response: ImageResponse = await flight.call(lambda: flight.provider.generate_image(request))
    return await _image_result(flight, response)


def stream_image(
    services: RuntimeServices,
    model: str,
    prompt: str,
    *,
    images: Sequence[Any] = (),
    mask: Any = None,
    partial_images: int | None = None,
    extra: Mapping[str, Any] | None = None,
    **options: Any,
) -> MediaStream[ImagePartial, ImageResult]:
    """Make one image, its partial images streamed. See `onellm.stream_image`."""

    def open_stream() -> tuple[_Flight, AsyncIterator[Any]]:
        flight = _Flight(services, model, "images", ImageStreamingProvider)
        request = _image_request(
            flight.resolved, prompt, images=images, mask=mask, count=1, options=options, extra=extra
        )
        request.partial_images = partial_images
        flight.take_off(*_estimate(flight.resolved, "images", prompt))
        try:
            return flight, flight.provider.stream_image(request)
        except BaseException as error:
            _fail_now(flight, error)
            raise

    return MediaStream(open_stream, _image_result)


def _fail_now(flight: _Flight, error: BaseException) -> None:
    """A stream that failed before it was opened (a setting refused): the hold is released at once."""
    flight.settled = True
    if flight.reservation is not None:
        flight.reservation.release()
    if flight.span is not None:
        flight.span.fail(error)


def _speech_request(
    resolved: ResolvedModel,
    text: str,
    *,
    voice: str | None,
    speakers: Mapping[str, str] | Sequence[SpeakerVoice] | None,
    instructions: str | None,
    format: str | None,
    speed: float | None,
    language: str | None,
    extra: Mapping[str, Any] | None,
) -> SpeechRequest:
    if not isinstance(text, str) or not text.strip():
        raise ValueError("text: give the text to speak")
    voices: list[SpeakerVoice] = []
    if isinstance(speakers, Mapping):
        voices = [SpeakerVoice(str(name), str(v)) for name, v in speakers.items()]
    elif speakers:
        voices = list(speakers)
    return SpeechRequest(
        model=resolved.name,
        text=text,
        voice=voice,
        speakers=voices,
        instructions=instructions,
        format=format,
        speed=speed,
        language=language,
        extra_parameters=dict(extra or {}),
        profile=resolved.profile,
    )


def _speech_estimate(flight: _Flight, text: str) -> tuple[CostEstimate | Decimal | None, str | None]:
    table = flight.resolved.entry.price_table
    return _estimate(flight.resolved, "speech", text, character_billed="characters" in table.items)


async def speak(
    services: RuntimeServices,
    model: str,
    text: str,
    *,
    voice: str | None = None,
    speakers: Mapping[str, str] | Sequence[SpeakerVoice] | None = None,
    instructions: str | None = None,
    format: str | None = None,
    speed: float | None = None,
    language: str | None = None,
    extra: Mapping[str, Any] | None = None,
) -> SpeechResult:
    """Speak `text`. See `onellm.speak`."""
    flight = _Flight(services, model, "speech", SpeechProvider)
    request = _speech_request(
        flight.resolved,
        text,
        voice=voice,
        speakers=speakers,
        instructions=instructions,
        format=format,
        speed=speed,
        language=language,
        extra=extra,
    )
    flight.take_off(*_speech_estimate(flight, text))
    response: SpeechResponse = await flight.call(lambda: flight.provider.synthesize(request))
    return await _speech_result(flight, response)


def stream_speech(
    services: RuntimeServices,
    model: str,
    text: str,
    *,
    voice: str | None = None,
    speakers: Mapping[str, str] | Sequence[SpeakerVoice] | None = None,
    instructions: str | None = None,
    format: str | None = None,
    speed: float | None = None,
    language: str | None = None,
    extra: Mapping[str, Any] | None = None,
) -> MediaStream[AudioChunk, SpeechResult]:
    """Speak `text`, the audio streamed. See `onellm.stream_speech`."""

    def open_stream() -> tuple[_Flight, AsyncIterator[Any]]:
        flight = _Flight(services, model, "speech", SpeechStreamingProvider)
        request = _speech_request(
            flight.resolved,
            text,
            voice=voice,
            speakers=speakers,
            instructions=instructions,
            format=format,
            speed=speed,
            language=language,
            extra=extra,
        )
        flight.take_off(*_speech_estimate(flight, text))
        try:
            return flight, flight.provider.stream_speech(request)
        except BaseException as error:
            _fail_now(flight, error)
            raise

    return MediaStream(open_stream, _speech_result)


def _transcription_request(
    resolved: ResolvedModel,
    audio: Any,
    *,
    content_type: str | None,
    file_name: str | None,
    language: str | None,
    prompt: str | None,
    translate: bool,
    temperature: float | None,
    timestamps: Sequence[str],
    logprobs: bool,
    extra: Mapping[str, Any] | None,
) -> TranscriptionRequest:
    data, kind, name = audio_input(audio, content_type)
    if isinstance(timestamps, str):
        timestamps = [timestamps]
    for i, granularity in enumerate(timestamps):
        if granularity not in ("word", "segment"):
            raise ValueError(f"timestamps[{i}]: expected 'word' or 'segment', not {granularity!r}")
    return TranscriptionRequest(
        model=resolved.name,
        audio=data,
        content_type=kind,
        file_name=file_name or name,
        language=language,
        prompt=prompt,
        translate=translate,
        temperature=temperature,
        timestamps=list(timestamps),
        logprobs=logprobs,
        extra_parameters=dict(extra or {}),
        profile=resolved.profile,
    )


async def transcribe(
    services: RuntimeServices,
    model: str,
    audio: Any,
    *,
    content_type: str | None = None,
    file_name: str | None = None,
    language: str | None = None,
    prompt: str | None = None,
    translate: bool = False,
    temperature: float | None = None,
    timestamps: Sequence[str] = (),
    logprobs: bool = False,
    extra: Mapping[str, Any] | None = None,
) -> TranscriptionResult:
    """Transcribe (or translate into English) `audio`. See `onellm.transcribe`."""
    flight = _Flight(services, model, "transcription", TranscriptionProvider)
    request = _transcription_request(
        flight.resolved,
        audio,
        content_type=content_type,
        file_name=file_name,
        language=language,
        prompt=prompt,
        translate=translate,
        temperature=temperature,
        timestamps=timestamps,
        logprobs=logprobs,
        extra=extra,
    )
    flight.take_off(*_estimate(flight.resolved, "transcription", ""))
    response: TranscriptionResponse = await flight.call(lambda: flight.provider.transcribe(request))
    return await _transcription_result(flight, response)


def stream_transcription(
    services: RuntimeServices,
    model: str,
    audio: Any,
    *,
    content_type: str | None = None,
    file_name: str | None = None,
    language: str | None = None,
    prompt: str | None = None,
    translate: bool = False,
    temperature: float | None = None,
    timestamps: Sequence[str] = (),
    logprobs: bool = False,
    extra: Mapping[str, Any] | None = None,
) -> MediaStream[TranscriptDelta, TranscriptionResult]:
    """Transcribe `audio`, the text streamed. See `onellm.stream_transcription`."""

    def open_stream() -> tuple[_Flight, AsyncIterator[Any]]:
        flight = _Flight(services, model, "transcription", TranscriptionStreamingProvider)
        request = _transcription_request(
            flight.resolved,
            audio,
            content_type=content_type,
            file_name=file_name,
            language=language,
            prompt=prompt,
            translate=translate,
            temperature=temperature,
            timestamps=timestamps,
            logprobs=logprobs,
            extra=extra,
        )
        flight.take_off(*_estimate(flight.resolved, "transcription", ""))
        try:
            return flight, flight.provider.stream_transcription(request)
        except BaseException as error:
            _fail_now(flight, error)
            raise

    return MediaStream(open_stream, _transcription_result)


async def moderate(
    services: RuntimeServices,
    model: str,
    texts: str | Sequence[str] = (),
    *,
    images: Sequence[Any] = (),
    extra: Mapping[str, Any] | None = None,
) -> ModerationResult:
    """Classify texts and images in one request. See `onellm.moderate`."""
    items = [texts] if isinstance(texts, str) else list(texts)
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise TypeError(f"texts[{i}]: expected a string, not {type(item).__name__}")
    if isinstance(images, str | bytes | os.PathLike | ImageInput | AssetPart):
        images = [images]
    inputs = [image_input(image, f"images[{i}]") for i, image in enumerate(images)]
    if not items and not inputs:
        raise ValueError("moderate: give at least one text or image")
    flight = _Flight(services, model, "moderation", ModerationProvider)
    request = ModerationRequest(
        model=flight.resolved.name,
        texts=items,
        images=inputs,
        extra_parameters=dict(extra or {}),
        profile=flight.resolved.profile,
    )
    flight.take_off(_ZERO, None)
    response: ModerationResponse = await flight.call(lambda: flight.provider.moderate(request))
    cost, warnings = await flight.done(None, response.model)
    return ModerationResult(
        verdicts=response.verdicts,
        cost=cost if cost is not None else Cost(),
        warnings=[*response.warnings, *warnings],
        model=flight.resolved.qualified_name,
    )


# -- on Runtime ------------------------------------------------------------------------------------------------------


class ImageOptions(TypedDict, total=False):
    """Settings of an image call. A setting the model does not take is dropped and named in the result's warnings."""

    size: str
    """`WIDTHxHEIGHT` (`1024x1024`) or `auto` (OpenAI)."""
    aspect_ratio: str
    """`1:1`, `16:9`, ... (Gemini)."""
    quality: str
    """`low`, `medium`, `high` or `auto` (GPT image models)."""
    background: str
    """`transparent`, `opaque` or `auto` (GPT image models)."""
    output_format: str
    """`png`, `jpeg` or `webp` (GPT image models)."""
    output_compression: int
    """0 to 100, for `jpeg` and `webp`."""
    style: str
    """`vivid` or `natural` (DALL-E 3)."""
    moderation: str
    """`low` or `auto` (GPT image models)."""
    input_fidelity: str
    """`high` or `low`: how closely an edit keeps the input images (GPT image models)."""
    user_id: str
    """An id of your end user, for the provider's abuse monitoring."""
    extra: Mapping[str, Any]
    """Body fields sent as given."""


class SpeechOptions(TypedDict, total=False):
    """Settings of a speech call. A setting the model does not take is dropped and named in the result's warnings."""

    voice: str
    """A voice name (`alloy`, `Kore`, ...); OpenAI's custom voices by id (`voice_...`)."""
    speakers: Mapping[str, str] | Sequence[SpeakerVoice]
    """A voice per speaker of the text (Gemini), as `{"Joe": "Kore", "Jane": "Puck"}`."""
    instructions: str
    """How to speak (OpenAI's newer speech models)."""
    format: str
    """`mp3`, `opus`, `aac`, `flac`, `wav` or `pcm` (Gemini: `wav` or `pcm`)."""
    speed: float
    """0.25 to 4.0 (OpenAI)."""
    language: str
    """A BCP 47 code such as `en-US` (Gemini)."""
    extra: Mapping[str, Any]


class TranscriptionOptions(TypedDict, total=False):
    """Settings of a transcription call."""

    content_type: str
    """The audio's type, when it cannot be told from the asset, the file name or the bytes."""
    file_name: str
    language: str
    """The language spoken (ISO 639-1, `en`), when known."""
    prompt: str
    """Text that guides the transcript's style or spelling."""
    translate: bool
    """Translate into English (`/audio/translations`) instead of transcribing."""
    temperature: float
    timestamps: Sequence[str]
    """`word` and/or `segment` (whisper-1)."""
    logprobs: bool
    """Return the tokens' log probabilities (in `extra`)."""
    extra: Mapping[str, Any]


class MediaMethods:
    """The media calls on `Runtime`."""

    if TYPE_CHECKING:

        @property
        def services(self) -> RuntimeServices: ...

    async def generate_image(
        self,
        model: str,
        prompt: str,
        *,
        images: Sequence[ImageSource] = (),
        mask: ImageSource | None = None,
        count: int = 1,
        **options: Unpack[ImageOptions],
    ) -> ImageResult:
        """Make `count` images from `prompt`, or edit `images` (within `mask`). Priced and recorded; no instance."""
        return await generate_image(self.services, model, prompt, images=images, mask=mask, count=count, **options)

    def stream_image(
        self,
        model: str,
        prompt: str,
        *,
        images: Sequence[ImageSource] = (),
        mask: ImageSource | None = None,
        partial_images: int | None = None,
        **options: Unpack[ImageOptions],
    ) -> MediaStream[ImagePartial, ImageResult]:
        """Make one image, streaming `partial_images` (0 to 3) partial images before it."""
        return stream_image(
            self.services, model, prompt, images=images, mask=mask, partial_images=partial_images, **options
        )

    async def speak(self, model: str, text: str, **options: Unpack[SpeechOptions]) -> SpeechResult:
        """Speak `text`: the audio's bytes and content type, with usage, cost and warnings."""
        return await speak(self.services, model, text, **options)

    def stream_speech(
        self, model: str, text: str, **options: Unpack[SpeechOptions]
    ) -> MediaStream[AudioChunk, SpeechResult]:
        """Speak `text`, the audio streamed as it is made."""
        return stream_speech(self.services, model, text, **options)

    async def transcribe(
        self, model: str, audio: AudioSource, **options: Unpack[TranscriptionOptions]
    ) -> TranscriptionResult:
        """The text of `audio` (or its English translation with `translate=True`)."""
        return await transcribe(self.services, model, audio, **options)

    def stream_transcription(
        self, model: str, audio: AudioSource, **options: Unpack[TranscriptionOptions]
    ) -> MediaStream[TranscriptDelta, TranscriptionResult]:
        """The text of `audio`, streamed as it is transcribed."""
        return stream_transcription(self.services, model, audio, **options)

    async def moderate(
        self,
        model: str,
        texts: str | Sequence[str] = (),
        *,
        images: Sequence[ImageSource] = (),
        extra: Mapping[str, Any] | None = None,
    ) -> ModerationResult:
        """Classify texts and images in one request: the verdicts, at no cost."""
        return await moderate(self.services, model, texts, images=images, extra=extra)


_publish("onellm", ImageResult, MediaStream, ModerationResult, SpeechResult, TranscriptionResult)
_publish("onellm.media", ImageOptions, SpeechOptions, TranscriptionOptions)
