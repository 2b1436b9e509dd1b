"""Embeddings through the runtime: routed, capped, priced, recorded and traced; stateless (no instance)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from decimal import Decimal
from typing import TYPE_CHECKING

import anyio

from onellm.errors import CapabilityMissingError
from onellm.providers._protocols import EmbeddingRequest

if TYPE_CHECKING:
    from onellm.runtime._runtime import Runtime

__all__ = ["embed"]


async def embed(
    runtime: Runtime, model: str, text: str | Sequence[str], *, dimensions: int | None = None
) -> list[float] | list[list[float]]:
    single = isinstance(text, str)
    inputs = [text] if isinstance(text, str) else list(text)
    for i, item in enumerate(inputs):
        if not isinstance(item, str):
            raise TypeError(f"text[{i}]: expected a string, not {type(item).__name__}")
    resolved, provider = runtime.route(model)
    if not callable(getattr(provider, "embed", None)):
        raise CapabilityMissingError(
            f"{resolved.qualified_name}: provider {getattr(provider, 'name', resolved.provider)!r} does not make "
            "embeddings"
        )
    reservation = None
    guard = runtime._spend_guard()
    if guard is not None:
        from onellm.catalog.counting import TokenEstimator
        from onellm.catalog.spend import CostEstimator

        estimator = TokenEstimator(resolved)
        tokens = sum(estimator.text(item) for item in inputs)
        reservation = guard.reserve(CostEstimator(resolved).estimate(tokens, max_output_tokens=0))
    from onellm.telemetry import start_model_call

    span = start_model_call("embeddings", resolved.provider, resolved.name)
    started = time.perf_counter()
    request = EmbeddingRequest(model=resolved.name, inputs=inputs, dimensions=dimensions)
    try:
        response = await provider.embed(request)
    except BaseException as error:
        if reservation is not None:
            reservation.release()
        span.fail(error)
        if len(runtime.records) and not isinstance(error, anyio.get_cancelled_exc_class()):
            from onellm.records import ErrorRecord

            await runtime.record(ErrorRecord(error_type=type(error).__name__, message=str(error), where="embeddings"))
        raise
    usage = response.usage
    if usage is not None:
        cost = resolved.price(usage, at=runtime.clock.now())
        if reservation is not None:
            reservation.commit(cost.total if cost.priced else None)
        usage.cost = cost.total if cost.priced or cost.lines else None
        usage.cost_lines = list(cost.lines)
    elif reservation is not None:
        reservation.commit(None)
    span.succeed(response_model=response.model, response_id=None, finish_reason=None, usage=usage)
    if len(runtime.records):
        from onellm.records import InferenceRecord

        await runtime.record(
            InferenceRecord(
                provider=resolved.provider,
                operation="embeddings",
                duration_ms=Decimal(int((time.perf_counter() - started) * 1000)),
                usage=usage,
            )
        )
    vectors: list[list[float]] = response.vectors
    return vectors[0] if single else vectors
