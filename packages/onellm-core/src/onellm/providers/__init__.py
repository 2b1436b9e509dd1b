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
    ModerationProvider,
    SpeechProvider,
    TokenCountProvider,
    TranscriptionProvider,
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
    "ModerationProvider",
    "ReasoningOptions",
    "ResponseFormat",
    "RetryPolicy",
    "SpeechProvider",
    "SseDecoder",
    "SseEvent",
    "TokenCountProvider",
    "ToolChoice",
    "ToolDefinition",
    "TranscriptionProvider",
    "parse_retry_after",
    "with_retries",
]
