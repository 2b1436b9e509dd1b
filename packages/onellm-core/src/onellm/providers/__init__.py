"""Model providers: the protocols every provider implements, the request and response types, the shared HTTP
transport, retries, error mapping and the event-stream reader, and one sub-package per wire protocol."""

from onellm._public import publish as _publish
from onellm.providers._protocols import (
    BatchProvider,
    ChatProvider,
    EmbeddingProvider,
    EmbeddingRequest,
    EmbeddingResponse,
    TokenCountProvider,
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
    "ReasoningOptions",
    "ResponseFormat",
    "RetryPolicy",
    "SseDecoder",
    "SseEvent",
    "TokenCountProvider",
    "ToolChoice",
    "ToolDefinition",
    "parse_retry_after",
    "with_retries",
]

_publish("onellm", CacheOptions, ReasoningOptions, RetryPolicy, ToolChoice)
_publish(
    "onellm.providers",
    BatchProvider,
    ChatProvider,
    ChatRequest,
    ChatResponse,
    EmbeddingProvider,
    EmbeddingRequest,
    EmbeddingResponse,
    FinishReason,
    HostedToolDefinition,
    ResponseFormat,
    SseDecoder,
    SseEvent,
    TokenCountProvider,
    ToolDefinition,
)
