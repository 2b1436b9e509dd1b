"""Model providers: the protocols every provider implements, the shared HTTP transport, retries, error mapping and the
event-stream readers, and one sub-package per wire protocol."""

from onellm.providers._retry import RetryPolicy, parse_retry_after, with_retries
from onellm.providers._sse import SseDecoder, SseEvent

__all__ = ["RetryPolicy", "SseDecoder", "SseEvent", "parse_retry_after", "with_retries"]
