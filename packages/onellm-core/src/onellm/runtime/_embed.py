"""Embeddings through the runtime: routed, capped, priced, recorded and traced; stateless (no instance)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from decimal import Decimal
from typing import TYPE_CHECKING

import anyio

from onellm.errors import CapabilityMissingError
from onellm.providers import EmbeddingRequest

if TYPE_CHECKING:
    from onellm.runtime._services import RuntimeServices

__all__ = ["embed"]


async def embed(
    services: RuntimeServices, model: str, text: str | Sequence[str], *, dimensions: int | None = None
) -> list[float] | list[list[float]]:
    """Embedding vectors for `text` (one string: one vector), held on the spend caps, priced, recorded, traced."""
    single = isinstance(text, str)
    inputs = [text] if isinstance(text, str) else list(text)
    for i, item in enumerate(inputs):
        if not isinstance(item, str):
            raise TypeError(f"text[{i}]: expected a string, not {type(item).__name__}")
    resolved, provider = services.route(model)
    if not callable(getattr(provider, "embed", None)):
        raise CapabilityMissingError(
            f"{resolved.qualified_name}: provider {getattr(provider, 'name', resolved.provider)!r} does not make "
            "embeddings"
        )
    reservation = services.spend.reserve_embeddings(resolved, inputs)
    from onellm.telemetry import start_model_call

    span = start_model_call("embeddings", resolved.provider, model)
    started = time.perf_counter()
    request = EmbeddingRequest(model=resolved.name, inputs=inputs, dimensions=dimensions)
    try:
        response = await provider.embed(request)
    except BaseException as error:
        if reservation is not None:
            reservation.release()
        span.fail(error)
        if services.recording and not isinstance(error, anyio.get_cancelled_exc_class()):
            from onellm.records import ErrorRecord

            with anyio.CancelScope(shield=True):
                await services.record(
                    ErrorRecord(error_type=type(error).__name__, message=str(error), where="embeddings")
                )
        raise
    with anyio.CancelScope(shield=True):  # paid for: settled and recorded whole, even when cancelled now
        usage = response.usage
        if usage is not None:
            cost = resolved.price(usage, at=services.clock.now())
            if reservation is not None:
                reservation.commit(cost.total if cost.priced else None)
            usage.cost = cost.total if cost.priced or cost.lines else None
            usage.cost_lines = list(cost.lines)
        elif reservation is not None:
            reservation.commit(None)
        span.succeed(response_model=response.model or resolved.name, response_id=None, finish_reason=None, usage=usage)
        if services.recording:
            from onellm.records import InferenceRecord

            await services.record(
                InferenceRecord(
                    provider=resolved.provider,
                    operation="embeddings",
                    duration_ms=Decimal(int((time.perf_counter() - started) * 1000)),
                    usage=usage,
                )
            )
    vectors: list[list[float]] = response.vectors
    return vectors[0] if single else vectors
