"""Model providers: the protocols every provider implements, the request and response types, the shared HTTP
transport, retries, error mapping and the event-stream reader, one sub-package per wire protocol, and `deployments`
(Azure OpenAI, Amazon Bedrock and Vertex AI: where a provider's requests go and how they are signed)."""

import importlib as _importlib
from typing import TYPE_CHECKING, Any

from onellm._public import publish as _publish
from onellm.providers._decisions import (
    DecisionProvider,
    DecisionQuestion,
    DecisionRequest,
    DecisionResponse,
    DecisionWire,
    score_levels,
)
from onellm.providers._media import (
    AudioChunk,
    GeneratedImage,
    ImageInput,
    ImagePartial,
    ImageRequest,
    ImageResponse,
    ImageStreamEvent,
    MediaDone,
    MediaEventStream,
    ModerationRequest,
    ModerationResponse,
    ModerationVerdict,
    SpeakerVoice,
    SpeechRequest,
    SpeechResponse,
    SpeechStreamEvent,
    TranscriptDelta,
    TranscriptionRequest,
    TranscriptionResponse,
    TranscriptionStreamEvent,
    add_usage,
    audio_file_name,
    data_url,
    encode_multipart,
    pcm_to_wav,
    sniff_audio_type,
    sniff_image_type,
    stripped,
    utf16_length,
)
from onellm.providers._protocols import (
    BatchProvider,
    ChatProvider,
    CompactedContext,
    ContextCompactionProvider,
    EmbeddingProvider,
    EmbeddingRequest,
    EmbeddingResponse,
    ImageProvider,
    ImageStreamingProvider,
    ModerationProvider,
    SpeechProvider,
    SpeechStreamingProvider,
    TokenCountProvider,
    TranscriptionProvider,
    TranscriptionStreamingProvider,
)
from onellm.providers._request import (
    CacheOptions,
    ChatRequest,
    ChatResponse,
    FinishReason,
    HostedToolDefinition,
    ReasoningOptions,
    ResponseFormat,
    ToolChoice,
    ToolDefinition,
)
from onellm.providers._retry import RetryPolicy, parse_retry_after, with_retries
from onellm.providers._schema import SchemaConversion
from onellm.providers._sse import SseDecoder, SseEvent

if TYPE_CHECKING:
    from onellm.providers._base import read_key
    from onellm.providers._http import ClientPool, RawExchange, capturing_raw_exchange
    from onellm.providers._stream import (
        collecting_into,
        collecting_lazily,
        response_from,
        whole_answer_accumulator,
        whole_response,
    )

# Loaded on first use: the HTTP transport imports httpx.
_LAZY = {
    "ClientPool": "onellm.providers._http",
    "RawExchange": "onellm.providers._http",
    "capturing_raw_exchange": "onellm.providers._http",
    "collecting_into": "onellm.providers._stream",
    "collecting_lazily": "onellm.providers._stream",
    "read_key": "onellm.providers._base",
    "response_from": "onellm.providers._stream",
    "whole_answer_accumulator": "onellm.providers._stream",
    "whole_response": "onellm.providers._stream",
}

__all__ = [
    "AudioChunk",
    "BatchProvider",
    "CacheOptions",
    "ChatProvider",
    "ChatRequest",
    "ChatResponse",
    "ClientPool",
    "CompactedContext",
    "ContextCompactionProvider",
    "DecisionProvider",
    "DecisionQuestion",
    "DecisionRequest",
    "DecisionResponse",
    "DecisionWire",
    "EmbeddingProvider",
    "EmbeddingRequest",
    "EmbeddingResponse",
    "FinishReason",
    "GeneratedImage",
    "HostedToolDefinition",
    "ImageInput",
    "ImagePartial",
    "ImageProvider",
    "ImageRequest",
    "ImageResponse",
    "ImageStreamEvent",
    "ImageStreamingProvider",
    "MediaDone",
    "MediaEventStream",
    "ModerationProvider",
    "ModerationRequest",
    "ModerationResponse",
    "ModerationVerdict",
    "RawExchange",
    "ReasoningOptions",
    "ResponseFormat",
    "RetryPolicy",
    "SchemaConversion",
    "SpeakerVoice",
    "SpeechProvider",
    "SpeechRequest",
    "SpeechResponse",
    "SpeechStreamEvent",
    "SpeechStreamingProvider",
    "SseDecoder",
    "SseEvent",
    "TokenCountProvider",
    "ToolChoice",
    "ToolDefinition",
    "TranscriptDelta",
    "TranscriptionProvider",
    "TranscriptionRequest",
    "TranscriptionResponse",
    "TranscriptionStreamEvent",
    "TranscriptionStreamingProvider",
    "add_usage",
    "audio_file_name",
    "capturing_raw_exchange",
    "collecting_into",
    "collecting_lazily",
    "data_url",
    "encode_multipart",
    "parse_retry_after",
    "pcm_to_wav",
    "read_key",
    "response_from",
    "score_levels",
    "sniff_audio_type",
    "sniff_image_type",
    "stripped",
    "utf16_length",
    "whole_answer_accumulator",
    "whole_response",
    "with_retries",
]

_publish("onellm", CacheOptions, ReasoningOptions, RetryPolicy, ToolChoice)
_publish(
    "onellm.providers",
    BatchProvider,
    ChatProvider,
    ChatRequest,
    ChatResponse,
    CompactedContext,
    ContextCompactionProvider,
    EmbeddingProvider,
    EmbeddingRequest,
    EmbeddingResponse,
    FinishReason,
    HostedToolDefinition,
    ResponseFormat,
    SchemaConversion,
    SseDecoder,
    SseEvent,
    TokenCountProvider,
    ToolDefinition,
)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'onellm.providers' has no attribute {name!r}")
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value
    return value
