"""Model providers: the protocols every provider implements, the request and response types, the shared HTTP
transport, retries, error mapping and the event-stream reader, one sub-package per wire protocol, and `deployments`
(Azure OpenAI, Amazon Bedrock and Vertex AI: where a provider's requests go and how they are signed)."""

from onellm.providers._protocols import (
    BatchProvider,
    ChatProvider,
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
from onellm.providers._sse import SseDecoder, SseEvent

__all__ = [
    "BatchProvider",
    "CacheOptions",
    "ChatProvider",
    "ChatRequest",
    "ChatResponse",
    "EmbeddingProvider",
    "EmbeddingRequest",
    "EmbeddingResponse",
    "FinishReason",
    "HostedToolDefinition",
    "ImageProvider",
    "ImageStreamingProvider",
    "ModerationProvider",
    "ReasoningOptions",
    "ResponseFormat",
    "RetryPolicy",
    "SpeechProvider",
    "SpeechStreamingProvider",
    "SseDecoder",
    "SseEvent",
    "TokenCountProvider",
    "ToolChoice",
    "ToolDefinition",
    "TranscriptionProvider",
    "TranscriptionStreamingProvider",
    "parse_retry_after",
    "with_retries",
]
