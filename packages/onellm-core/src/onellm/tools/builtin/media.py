"""The media tools: `generate_image`, `speak`, `transcribe` and `moderate`, over a provider and models the host picks.

```python
from onellm import OpenAIProvider, media_tools

tools = media_tools(OpenAIProvider(), image_model="gpt-image-2", speech_model="gpt-4o-mini-tts",
                    transcription_model="gpt-4o-transcribe", moderation_model="omni-moderation-latest")
```

The model of the conversation never names a model: each tool calls the one it was made with. What they do:

- Images and audio come back as asset parts with inline data (storage `inline`), after a line of text saying what
  they are; the runtime's asset store decides where they live. The tools write no files. `moderate` returns JSON
  with the flagged categories and scores per input; `transcribe` returns the text.
- Paths in `images`, `mask` and `path` are read through the call's file grant with the built-in tools' double-checked
  open. A path outside the read roots, a run with no file grant, a file over the size limit and a missing file are
  error results naming the argument, before any provider call. `transcribe` declares the file-read grant; the others
  need none unless the model names an input file.
- The call to the provider is the use of the network the host chose when it gave the tools a provider; the egress
  grant governs tools that open connections of their own and is not consulted.
- The provider's cost lines are added to the call (`ToolContext.add_cost_line`) and land on the tool result. Prices
  come from `MediaToolOptions.catalog`, else the runtime's catalog, else the default one.

This module does not use postponed annotations: the limits in the tools' schemas come from the options given.
"""

import datetime as dt
import mimetypes
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal

import anyio.to_thread
import msgspec

from onellm._public import publish as _publish
from onellm.errors import CapabilityMissingError, ModelNotFoundError
from onellm.messages import AssetPart, CallWarning, Cost, JsonPart, Part, TextPart
from onellm.providers import (
    ImageInput,
    ImageProvider,
    ImageRequest,
    ImageResponse,
    ModerationProvider,
    ModerationRequest,
    ModerationResponse,
    SpeechProvider,
    SpeechRequest,
    SpeechResponse,
    TranscriptionProvider,
    TranscriptionRequest,
    TranscriptionResponse,
    sniff_audio_type,
    sniff_image_type,
)
from onellm.tools import Tool, ToolContext
from onellm.tools.builtin import _access

if TYPE_CHECKING:
    from onellm.catalog import Catalog, ResolvedModel

__all__ = ["MEDIA_TOOL_NAMES", "MediaToolOptions", "media_tools"]

MEDIA_TOOL_NAMES = ("generate_image", "speak", "transcribe", "moderate")
"""The media tools' names, in the order `media_tools` returns them."""


@dataclass(frozen=True, slots=True)
class MediaToolOptions:
    """Limits and settings of the media tools. Every limit is one the model cannot raise."""

    max_input_bytes: int = 25 * 1024 * 1024
    """The largest file a tool reads (an image to edit, a mask, audio to transcribe): 25 MiB."""
    max_images: int = 4
    """The most images one call makes, and the most input images one call takes."""
    max_speech_chars: int = 4096
    """The longest text `speak` reads aloud."""
    cost_hint: str | None = None
    """A sentence on what a call costs, added to each tool's description (`"About $0.04 per image."`)."""
    require_approval: bool = False
    """Whether a person must approve each call."""
    timeout_seconds: float = 300.0
    """How long a call may take before it becomes an error result: five minutes."""
    catalog: "Catalog | None" = None
    """Where the models are priced; None: the running runtime's catalog, else `Catalog.default()`."""

    def __post_init__(self) -> None:
        for name in ("max_input_bytes", "max_images", "max_speech_chars"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"MediaToolOptions.{name} must be a whole number of 1 or more, not {value!r}")
        if not self.timeout_seconds > 0:
            raise ValueError("MediaToolOptions.timeout_seconds must be more than 0")


# -- shared plumbing -------------------------------------------------------------------------------------------------


def _named(argument: str, error: BaseException) -> BaseException:
    """The same error with the argument it is about in front of its message."""
    try:
        named = type(error)(f"{argument}: {error}")
    except Exception:
        return ValueError(f"{argument}: {type(error).__name__}: {error}")
    for key, value in vars(error).items():  # what the error carries besides its text (a rule, a target, a path)
        if getattr(named, key, None) is None:
            setattr(named, key, value)
    return named


async def _read(ctx: ToolContext, path: str, argument: str, limit: int) -> tuple[str, bytes]:
    """A file the model named, read under the call's read grant (double-checked open), at most `limit` bytes: its
    name and bytes. Every failure names `argument`."""
    try:
        if not ctx.has_capabilities:
            raise CapabilityMissingError("this run has no file grant, so no file can be read")
        resolved, data = await anyio.to_thread.run_sync(_access.read_bytes, ctx, path, limit)
    except Exception as error:
        raise _named(argument, error) from None
    return resolved.name, data


async def _image(ctx: ToolContext, path: str, argument: str, limit: int) -> ImageInput:
    name, data = await _read(ctx, path, argument, limit)
    kind = sniff_image_type(data)
    if kind is None:
        guessed = mimetypes.guess_type(name)[0]
        if guessed is None or not guessed.startswith("image/"):
            raise ValueError(f"{argument}: {path} is not a PNG, JPEG, GIF or WebP image")
        kind = guessed
    return ImageInput(data, kind, name)


def _resolve(catalog: "Catalog", provider: Any, model: str) -> "ResolvedModel | None":
    name = getattr(provider, "name", None)
    for candidate in (f"{name}:{model}" if name else None, model):
        if candidate is None:
            continue
        try:
            return catalog.resolve(candidate)
        except ModelNotFoundError:
            continue
    return None


class _Pricing:
    """Prices a tool's calls: the catalog is found at the first call."""

    __slots__ = ("_catalog", "_models", "_provider")

    def __init__(self, provider: Any, catalog: "Catalog | None") -> None:
        self._provider = provider
        self._catalog = catalog
        self._models: dict[str, ResolvedModel | None] = {}

    def model(self, ctx: ToolContext, model: str) -> "ResolvedModel | None":
        if model not in self._models:
            catalog = self._catalog or getattr(ctx.runtime, "catalog", None)
            if catalog is None:
                from onellm.catalog import Catalog

                catalog = Catalog.default()
            self._models[model] = _resolve(catalog, self._provider, model)
        return self._models[model]

    def charge(
        self,
        ctx: ToolContext,
        model: str,
        usage: Any,
        operation: str,
        qualifiers: dict[str, str] | None = None,
    ) -> tuple[Cost | None, list[CallWarning]]:
        """Price a call and add its cost lines to the tool call."""
        from onellm.catalog.pricing import price_media

        resolved = self.model(ctx, model)
        if resolved is None:
            if operation == "moderation":
                return Cost(), []
            return None, [
                CallWarning(
                    kind="pricing",
                    message=f"{model} is not in the catalog; its cost is unknown",
                    detail={"reason": "unknown_model", "model": model},
                )
            ]
        clock = getattr(ctx.runtime, "clock", None)
        at = clock.now() if clock is not None else dt.datetime.now(dt.UTC)
        cost, warnings = price_media(resolved, usage, operation, qualifiers=qualifiers, at=at)
        if cost is not None:
            for line in cost.lines:
                ctx.add_cost_line(line)
        return cost, warnings

    def profile(self, ctx: ToolContext, model: str) -> Any:
        resolved = self.model(ctx, model)
        return resolved.profile if resolved is not None else None

    def name(self, ctx: ToolContext, model: str) -> str:
        resolved = self.model(ctx, model)
        return resolved.name if resolved is not None else model


def _notes(warnings: Sequence[CallWarning], cost: Cost | None) -> str:
    lines = [f"Note: {w.message}" for w in warnings if w.kind != "pricing"]
    if cost is None:
        lines.append("Note: the cost of this call is unknown.")
    return "".join(f"\n{line}" for line in lines)


def _description(text: str, options: MediaToolOptions) -> str:
    return f"{text} {options.cost_hint}" if options.cost_hint else text


# -- the tools -------------------------------------------------------------------------------------------------------


def media_tools(
    provider: Any,
    *,
    image_model: str | None = None,
    speech_model: str | None = None,
    transcription_model: str | None = None,
    moderation_model: str | None = None,
    options: MediaToolOptions | None = None,
) -> list[Tool[..., object]]:
    """The media tools `provider` supports for the models given, in the order `generate_image`, `speak`,
    `transcribe`, `moderate`: a tool is made when its model is given and the provider implements its protocol.

    Args:
        provider: The provider the tools call (an `OpenAIProvider`, a `GeminiProvider`, ...).
        image_model: The model `generate_image` uses.
        speech_model: The model `speak` uses.
        transcription_model: The model `transcribe` uses.
        moderation_model: The model `moderate` uses.
        options: Limits, approval, timeout, cost hint and the catalog prices come from.
    """
    opts = options if options is not None else MediaToolOptions()
    pricing = _Pricing(provider, opts.catalog)
    tools: list[Tool[..., object]] = []
    if image_model and isinstance(provider, ImageProvider):
        tools.append(_image_tool(provider, image_model, opts, pricing))
    if speech_model and isinstance(provider, SpeechProvider):
        tools.append(_speech_tool(provider, speech_model, opts, pricing))
    if transcription_model and isinstance(provider, TranscriptionProvider):
        tools.append(_transcription_tool(provider, transcription_model, opts, pricing))
    if moderation_model and isinstance(provider, ModerationProvider):
        tools.append(_moderation_tool(provider, moderation_model, opts, pricing))
    return tools


def _image_tool(provider: Any, model: str, opts: MediaToolOptions, pricing: _Pricing) -> Tool[..., object]:
    most = opts.max_images
    limit = opts.max_input_bytes

    async def generate_image(
        ctx: ToolContext,
        prompt: Annotated[str, msgspec.Meta(min_length=1)],
        count: Annotated[int, msgspec.Meta(ge=1, le=most)] = 1,
        size: str | None = None,
        aspect_ratio: str | None = None,
        quality: str | None = None,
        background: Literal["transparent", "opaque", "auto"] | None = None,
        output_format: Literal["png", "jpeg", "webp"] | None = None,
        images: Annotated[list[str], msgspec.Meta(max_length=most)] | None = None,
        mask: str | None = None,
    ) -> list[Part]:
        """Makes images from a description, or edits given image files.

        Args:
            prompt: What to draw, or how to change the given images.
            count: How many images to make.
            size: Width x height in pixels, for example 1024x1024, where the model takes a size.
            aspect_ratio: Width to height, for example 16:9, where the model takes an aspect ratio.
            quality: low, medium, high or auto, where the model takes a quality.
            background: A transparent or opaque background, where the model can choose.
            output_format: The image file format.
            images: Paths of image files to edit or to draw from.
            mask: Path of a PNG whose transparent pixels mark where the first image may change.
        """
        inputs = [await _image(ctx, path, f"images[{i}]", limit) for i, path in enumerate(images or ())]
        if mask is not None and not inputs:
            raise ValueError("mask: a mask needs images to edit")
        mask_input = await _image(ctx, mask, "mask", limit) if mask is not None else None
        request = ImageRequest(
            model=pricing.name(ctx, model),
            prompt=prompt,
            count=count,
            size=size,
            aspect_ratio=aspect_ratio,
            quality=quality,
            background=background,
            output_format=output_format,
            images=inputs,
            mask=mask_input,
            profile=pricing.profile(ctx, model),
        )
        response: ImageResponse = await provider.generate_image(request)
        cost, warnings = pricing.charge(ctx, model, response.usage, "images", response.qualifiers)
        made = response.images[:most]
        kinds = ", ".join(sorted({image.content_type for image in made}))
        head = f"{len(made)} image{'s' if len(made) != 1 else ''} ({kinds})."
        if response.text:
            head += f"\nThe model said: {response.text}"
        parts: list[Part] = [TextPart(text=head + _notes([*response.warnings, *warnings], cost))]
        parts.extend(
            AssetPart(storage="inline", content_type=image.content_type, size=len(image.data), data=image.data)
            for image in made
        )
        return parts

    return Tool.create(
        generate_image,
        description=_description(
            "Makes images from a description, or edits given image files; the images come back as attachments.", opts
        ),
        requires_approval=opts.require_approval,
        timeout_seconds=opts.timeout_seconds,
    )


def _speech_tool(provider: Any, model: str, opts: MediaToolOptions, pricing: _Pricing) -> Tool[..., object]:
    longest = opts.max_speech_chars

    async def speak(
        ctx: ToolContext,
        text: Annotated[str, msgspec.Meta(min_length=1, max_length=longest)],
        voice: str | None = None,
        instructions: str | None = None,
        format: Literal["mp3", "opus", "aac", "flac", "wav", "pcm"] | None = None,
    ) -> list[Part]:
        """Reads a text aloud; the audio comes back as an attachment.

        Args:
            text: The text to speak.
            voice: The voice to read with, by name.
            instructions: How to speak: tone, pace, accent.
            format: The audio file format.
        """
        request = SpeechRequest(
            model=pricing.name(ctx, model),
            text=text,
            voice=voice,
            instructions=instructions,
            format=format,
            profile=pricing.profile(ctx, model),
        )
        response: SpeechResponse = await provider.synthesize(request)
        cost, warnings = pricing.charge(ctx, model, response.usage, "speech")
        head = f"Audio ({response.content_type}, {len(response.audio)} bytes)."
        return [
            TextPart(text=head + _notes([*response.warnings, *warnings], cost)),
            AssetPart(
                storage="inline", content_type=response.content_type, size=len(response.audio), data=response.audio
            ),
        ]

    return Tool.create(
        speak,
        description=_description(
            f"Reads a text of up to {longest} characters aloud; the audio comes back as an attachment.", opts
        ),
        requires_approval=opts.require_approval,
        timeout_seconds=opts.timeout_seconds,
    )


def _transcription_tool(provider: Any, model: str, opts: MediaToolOptions, pricing: _Pricing) -> Tool[..., object]:
    limit = opts.max_input_bytes

    async def transcribe(
        ctx: ToolContext,
        path: Annotated[str, msgspec.Meta(min_length=1)],
        language: str | None = None,
        prompt: str | None = None,
        translate: bool = False,
    ) -> str:
        """Writes down what is said in an audio file.

        Args:
            path: The audio file (mp3, mp4, m4a, wav, webm, ogg or flac).
            language: The language spoken, as a two-letter code such as en, when known.
            prompt: Words or spellings to expect, or the text before this part of the audio.
            translate: Write it down in English, whatever language is spoken.
        """
        name, data = await _read(ctx, path, "path", limit)
        kind = sniff_audio_type(data) or mimetypes.guess_type(name)[0]
        if kind is None or not kind.startswith(("audio/", "video/")):
            raise ValueError(f"path: {path} is not an audio file this tool can tell (mp3, mp4, wav, webm, ogg, flac)")
        request = TranscriptionRequest(
            model=pricing.name(ctx, model),
            audio=data,
            content_type=kind,
            file_name=os.path.basename(name),
            language=language,
            prompt=prompt,
            translate=translate,
            profile=pricing.profile(ctx, model),
        )
        response: TranscriptionResponse = await provider.transcribe(request)
        cost, warnings = pricing.charge(ctx, model, response.usage, "transcription")
        return response.text + _notes([*response.warnings, *warnings], cost)

    return Tool.create(
        transcribe,
        description=_description("Writes down what is said in an audio file (or translates it into English).", opts),
        requires_approval=opts.require_approval,
        timeout_seconds=opts.timeout_seconds,
        required_grants=("files_read",),
    )


def _moderation_tool(provider: Any, model: str, opts: MediaToolOptions, pricing: _Pricing) -> Tool[..., object]:
    most = opts.max_images
    limit = opts.max_input_bytes

    async def moderate(
        ctx: ToolContext,
        texts: list[str] | None = None,
        images: Annotated[list[str], msgspec.Meta(max_length=most)] | None = None,
    ) -> JsonPart:
        """Checks texts and image files for harmful content: per input, whether it is flagged, the flagged
        categories and every category's score.

        Args:
            texts: Texts to check.
            images: Paths of image files to check.
        """
        inputs = [await _image(ctx, path, f"images[{i}]", limit) for i, path in enumerate(images or ())]
        if not texts and not inputs:
            raise ValueError("texts: give at least one text or image to check")
        request = ModerationRequest(
            model=pricing.name(ctx, model), texts=list(texts or ()), images=inputs, profile=pricing.profile(ctx, model)
        )
        response: ModerationResponse = await provider.moderate(request)
        pricing.charge(ctx, model, None, "moderation")
        return JsonPart(
            json={
                "flagged": response.flagged,
                "results": [
                    {
                        "input": _input_label(v.input_index, len(request.texts)),
                        "flagged": v.flagged,
                        "categories": v.flagged_categories,
                        "scores": v.scores,
                    }
                    for v in response.verdicts
                ],
            }
        )

    return Tool.create(
        moderate,
        description=_description("Checks texts and image files for harmful content.", opts),
        requires_approval=opts.require_approval,
        timeout_seconds=opts.timeout_seconds,
    )


def _input_label(index: int | None, texts: int) -> str:
    if index is None:
        return "all"
    return f"texts[{index}]" if index < texts else f"images[{index - texts}]"


_publish("onellm", MediaToolOptions)
