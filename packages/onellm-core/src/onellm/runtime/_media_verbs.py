"""The media verbs on the current runtime: `generate_image`, `speak`, `transcribe` and `moderate` (with their `_sync`
twins), and the streamed `stream_image`, `stream_speech` and `stream_transcription`. What they do is in
`onellm.runtime._media`, and `Runtime` has the same calls (`MediaMethods`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Unpack

from onellm.runtime._default import current_runtime
from onellm.runtime._sync import drive

if TYPE_CHECKING:
    from onellm.providers import AudioChunk, ImagePartial, TranscriptDelta
    from onellm.runtime._media import (
        AudioSource,
        ImageOptions,
        ImageResult,
        ImageSource,
        MediaStream,
        ModerationResult,
        SpeechOptions,
        SpeechResult,
        TranscriptionOptions,
        TranscriptionResult,
    )

__all__ = [
    "generate_image",
    "generate_image_sync",
    "moderate",
    "moderate_sync",
    "speak",
    "speak_sync",
    "stream_image",
    "stream_speech",
    "stream_transcription",
    "transcribe",
    "transcribe_sync",
]


# -- on the current runtime ------------------------------------------------------------------------------------------


async def generate_image(
    model: str,
    prompt: str,
    *,
    images: Sequence[ImageSource] = (),
    mask: ImageSource | None = None,
    count: int = 1,
    **options: Unpack[ImageOptions],
) -> ImageResult:
    """Make `count` images from `prompt` (or edit `images`, within `mask`) with an image model.

    <!-- skip: next "docs/media.md runs this call against a replayed image answer" -->

    ```python
    result = await onellm.generate_image("gpt-image-2", "A lighthouse at dawn, watercolour", size="1024x1024")
    Path("lighthouse.png").write_bytes(result.data)    # result.content_type == "image/png"
    print(result.cost.total if result.cost else "cost unknown", result.warnings)
    ```
    """
    return await current_runtime().generate_image(model, prompt, images=images, mask=mask, count=count, **options)


def stream_image(
    model: str,
    prompt: str,
    *,
    images: Sequence[ImageSource] = (),
    mask: ImageSource | None = None,
    partial_images: int | None = None,
    **options: Unpack[ImageOptions],
) -> MediaStream[ImagePartial, ImageResult]:
    """Make one image, streaming `partial_images` partial images first: iterate the `ImagePartial` events, then
    `await stream.result()`."""
    return current_runtime().stream_image(
        model, prompt, images=images, mask=mask, partial_images=partial_images, **options
    )


async def speak(model: str, text: str, **options: Unpack[SpeechOptions]) -> SpeechResult:
    """Speak `text` with a speech model: the audio's bytes (`.data`) and `.content_type`, usage, cost, warnings."""
    return await current_runtime().speak(model, text, **options)


def stream_speech(model: str, text: str, **options: Unpack[SpeechOptions]) -> MediaStream[AudioChunk, SpeechResult]:
    """Speak `text`, the audio streamed: iterate the `AudioChunk` events, then `await stream.result()`."""
    return current_runtime().stream_speech(model, text, **options)


async def transcribe(model: str, audio: AudioSource, **options: Unpack[TranscriptionOptions]) -> TranscriptionResult:
    """The text of `audio` (a path, bytes or an asset part), or its English translation with `translate=True`."""
    return await current_runtime().transcribe(model, audio, **options)


def stream_transcription(
    model: str, audio: AudioSource, **options: Unpack[TranscriptionOptions]
) -> MediaStream[TranscriptDelta, TranscriptionResult]:
    """The text of `audio`, streamed: iterate the `TranscriptDelta` events, then `await stream.result()`."""
    return current_runtime().stream_transcription(model, audio, **options)


async def moderate(
    model: str,
    texts: str | Sequence[str] = (),
    *,
    images: Sequence[ImageSource] = (),
    extra: Mapping[str, Any] | None = None,
) -> ModerationResult:
    """Classify texts and images in one request with a moderation model; free of charge."""
    return await current_runtime().moderate(model, texts, images=images, extra=extra)


def generate_image_sync(
    model: str,
    prompt: str,
    *,
    images: Sequence[ImageSource] = (),
    mask: ImageSource | None = None,
    count: int = 1,
    **options: Unpack[ImageOptions],
) -> ImageResult:
    """Blocking form of `onellm.generate_image`. Not for use inside async code."""
    return drive(generate_image(model, prompt, images=images, mask=mask, count=count, **options), "generate_image")


def speak_sync(model: str, text: str, **options: Unpack[SpeechOptions]) -> SpeechResult:
    """Blocking form of `onellm.speak`. Not for use inside async code."""
    return drive(speak(model, text, **options), "speak")


def transcribe_sync(model: str, audio: AudioSource, **options: Unpack[TranscriptionOptions]) -> TranscriptionResult:
    """Blocking form of `onellm.transcribe`. Not for use inside async code."""
    return drive(transcribe(model, audio, **options), "transcribe")


def moderate_sync(
    model: str,
    texts: str | Sequence[str] = (),
    *,
    images: Sequence[ImageSource] = (),
    extra: Mapping[str, Any] | None = None,
) -> ModerationResult:
    """Blocking form of `onellm.moderate`. Not for use inside async code."""
    return drive(moderate(model, texts, images=images, extra=extra), "moderate")
