"""The provider protocols, one per capability. A provider implements those it can; the runtime asks for the one a
call needs and names what is missing when a provider lacks it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from onellm._public import publish as _publish
from onellm.providers._request import ChatRequest, ChatResponse

if TYPE_CHECKING:
    from onellm.messages import CallWarning, Message, StreamEvent, Usage
    from onellm.providers._media import (
        ImageRequest,
        ImageResponse,
        ImageStreamEvent,
        MediaEventStream,
        ModerationRequest,
        ModerationResponse,
        SpeechRequest,
        SpeechResponse,
        SpeechStreamEvent,
        TranscriptionRequest,
        TranscriptionResponse,
        TranscriptionStreamEvent,
    )

__all__ = [
    "BatchProvider",
    "ChatProvider",
    "CompactedContext",
    "ContextCompactionProvider",
    "EmbeddingProvider",
    "EmbeddingRequest",
    "EmbeddingResponse",
    "ImageProvider",
    "ImageStreamingProvider",
    "ModerationProvider",
    "SpeechProvider",
    "SpeechStreamingProvider",
    "TokenCountProvider",
    "TranscriptionProvider",
    "TranscriptionStreamingProvider",
]


@runtime_checkable
class ChatProvider(Protocol):
    name: str

    async def send(self, request: ChatRequest) -> ChatResponse:
        """One whole call."""
        ...

    def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        """One streamed call: its events as they arrive, ending with `Done`."""
        ...


@dataclass(slots=True)
class EmbeddingRequest:
    model: str
    inputs: Sequence[str]
    dimensions: int | None = None
    user_id: str | None = None
    extra_parameters: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class EmbeddingResponse:
    vectors: list[list[float]]
    usage: Usage | None
    model: str | None = None
    warnings: list[CallWarning] = field(default_factory=list)


@runtime_checkable
class EmbeddingProvider(Protocol):
    name: str

    async def embed(self, request: EmbeddingRequest) -> EmbeddingResponse: ...


@runtime_checkable
class TokenCountProvider(Protocol):
    name: str

    async def count_tokens(self, request: ChatRequest) -> int:
        """The input tokens the provider would count for this request."""
        ...


@dataclass(slots=True)
class CompactedContext:
    """What a provider's own compaction made of a conversation: the messages that stand for the ones sent (the
    provider's opaque compaction state in them is replayed to that provider only), and the usage of the call."""

    messages: list[Message]
    """The compacted conversation, in order. A message of the request the provider kept as it was is the same
    message (same id); the others are new."""
    usage: Usage | None = None
    warnings: list[CallWarning] = field(default_factory=list)


@runtime_checkable
class ContextCompactionProvider(Protocol):
    """A provider that compacts a conversation on its side (`contextStrategy: providerNative`)."""

    name: str

    @property
    def compacts_context(self) -> bool:
        """True when this provider, as configured, can compact (the protocol it speaks has a compaction call)."""
        ...

    async def compact_context(self, request: ChatRequest) -> CompactedContext:
        """Compact `request.messages` (with the request's model, system prompt and cache options)."""
        ...


@runtime_checkable
class BatchProvider(Protocol):
    name: str

    async def submit_batch(self, requests: Sequence[ChatRequest]) -> str:
        """Submit requests as one batch; returns the batch id."""
        ...

    async def get_batch(self, batch_id: str) -> dict[str, Any]:
        """The batch's status as the provider reports it."""
        ...

    async def batch_results(self, batch_id: str) -> list[ChatResponse]:
        """The answers, in the order the requests were submitted."""
        ...


@runtime_checkable
class ImageProvider(Protocol):
    """Makes images (and edits them when the request carries input images)."""

    name: str

    async def generate_image(self, request: ImageRequest) -> ImageResponse: ...


@runtime_checkable
class ImageStreamingProvider(Protocol):
    """Streams an image's partial images, then the whole response."""

    name: str

    def stream_image(self, request: ImageRequest) -> MediaEventStream[ImageStreamEvent]: ...


@runtime_checkable
class SpeechProvider(Protocol):
    """Text to speech."""

    name: str

    async def synthesize(self, request: SpeechRequest) -> SpeechResponse: ...


@runtime_checkable
class SpeechStreamingProvider(Protocol):
    """Text to speech, the audio streamed as it is made."""

    name: str

    def stream_speech(self, request: SpeechRequest) -> MediaEventStream[SpeechStreamEvent]: ...


@runtime_checkable
class TranscriptionProvider(Protocol):
    """Speech to text."""

    name: str

    async def transcribe(self, request: TranscriptionRequest) -> TranscriptionResponse: ...


@runtime_checkable
class TranscriptionStreamingProvider(Protocol):
    """Speech to text, the text streamed as it is transcribed."""

    name: str

    def stream_transcription(self, request: TranscriptionRequest) -> MediaEventStream[TranscriptionStreamEvent]: ...


@runtime_checkable
class ModerationProvider(Protocol):
    """Classifies texts and images as harmful or not."""

    name: str

    async def moderate(self, request: ModerationRequest) -> ModerationResponse: ...


_publish(
    "onellm.media",
    ImageProvider,
    ImageStreamingProvider,
    ModerationProvider,
    SpeechProvider,
    SpeechStreamingProvider,
    TranscriptionProvider,
    TranscriptionStreamingProvider,
)
