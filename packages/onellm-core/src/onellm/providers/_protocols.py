"""The provider protocols, one per capability. A provider implements those it can; the runtime asks for the one a
call needs and names what is missing when a provider lacks it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from onellm.providers._request import ChatRequest, ChatResponse

if TYPE_CHECKING:
    from onellm.messages import CallWarning, StreamEvent, Usage

__all__ = [
    "BatchProvider",
    "ChatProvider",
    "EmbeddingProvider",
    "EmbeddingRequest",
    "EmbeddingResponse",
    "TokenCountProvider",
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
