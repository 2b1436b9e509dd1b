"""The GenAI span and metrics of one model call."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any, ClassVar

from opentelemetry import metrics, trace
from opentelemetry import trace as _trace_api
from opentelemetry.metrics import _internal as _metrics_api

if TYPE_CHECKING:
    from onellm.messages import Usage

__all__ = [
    "DURATION_METRIC",
    "INSTRUMENTATION_NAME",
    "TOKEN_USAGE_METRIC",
    "CallObserver",
    "ModelCallSpan",
    "configure",
    "provider_system_name",
    "start_model_call",
]

INSTRUMENTATION_NAME = "onellm"
TOKEN_USAGE_METRIC = "gen_ai.client.token.usage"
DURATION_METRIC = "gen_ai.client.operation.duration"

_FROM_ENVIRONMENT = bool(os.environ.get("OTEL_PYTHON_TRACER_PROVIDER") or os.environ.get("OTEL_PYTHON_METER_PROVIDER"))

_SYSTEM_NAMES = {
    "gemini": "gcp.gemini",
    "vertex": "gcp.vertex_ai",
    "bedrock": "aws.bedrock",
    "azure": "azure.ai.openai",
}


def provider_system_name(provider: str) -> str:
    """The `gen_ai.provider.name` value for a catalog provider name."""
    return _SYSTEM_NAMES.get(provider, provider)


class _Instruments:
    __slots__ = ("duration", "explicit", "meter", "tokens", "tracer")

    def __init__(self, tracer_provider: Any = None, meter_provider: Any = None) -> None:
        self.explicit = tracer_provider is not None or meter_provider is not None
        self.tracer = trace.get_tracer(INSTRUMENTATION_NAME, tracer_provider=tracer_provider)
        self.meter = metrics.get_meter(INSTRUMENTATION_NAME, meter_provider=meter_provider)
        self.tokens = self.meter.create_histogram(
            TOKEN_USAGE_METRIC, unit="{token}", description="Measures number of input and output tokens used"
        )
        self.duration = self.meter.create_histogram(DURATION_METRIC, unit="s", description="GenAI operation duration")


_INSTRUMENTS: list[_Instruments] = []


def configure(*, tracer_provider: Any = None, meter_provider: Any = None) -> None:
    """Send onellm's spans and metrics to these providers instead of the global ones (None: the global one)."""
    _INSTRUMENTS.clear()
    _INSTRUMENTS.append(_Instruments(tracer_provider, meter_provider))


def _instruments() -> _Instruments:
    if not _INSTRUMENTS:
        _INSTRUMENTS.append(_Instruments())
    return _INSTRUMENTS[0]


class ModelCallSpan:
    """One model call's span and measurements. Call `succeed(...)` or `fail(error)` exactly once."""

    __slots__ = ("_attributes", "_ended", "_span", "_start")

    observed: ClassVar[bool] = True
    """What `succeed` is given is recorded (False for the shared object a call gets while no SDK is configured)."""

    def __init__(self, operation: str, provider: str, request_model: str) -> None:
        inst = _instruments()
        self._attributes: dict[str, Any] = {
            "gen_ai.operation.name": operation,
            "gen_ai.provider.name": provider_system_name(provider),
            "gen_ai.request.model": request_model,
        }
        self._span = inst.tracer.start_span(
            f"{operation} {request_model}", kind=trace.SpanKind.CLIENT, attributes=self._attributes
        )
        self._start = time.perf_counter()
        self._ended = False

    def succeed(
        self,
        *,
        response_model: str | None,
        response_id: str | None,
        finish_reason: str | None,
        usage: Usage | None,
    ) -> None:
        if self._ended:
            return
        self._ended = True
        span = self._span
        if span.is_recording():
            if response_model:
                span.set_attribute("gen_ai.response.model", response_model)
            if response_id:
                span.set_attribute("gen_ai.response.id", response_id)
            if finish_reason:
                span.set_attribute("gen_ai.response.finish_reasons", [finish_reason])
            if usage is not None:
                span.set_attribute("gen_ai.usage.input_tokens", usage.total_input_tokens)
                span.set_attribute("gen_ai.usage.output_tokens", usage.output_tokens)
                if usage.cache_read_input_tokens:
                    span.set_attribute("gen_ai.usage.cache_read.input_tokens", usage.cache_read_input_tokens)
                if usage.cache_creation_input_tokens:
                    span.set_attribute("gen_ai.usage.cache_creation.input_tokens", usage.cache_creation_input_tokens)
                reasoning = usage.counters.get("reasoningTokens")
                if reasoning:
                    span.set_attribute("gen_ai.usage.reasoning.output_tokens", int(reasoning))
        span.end()
        inst = _instruments()
        inst.duration.record(time.perf_counter() - self._start, self._attributes)
        if usage is not None:
            inst.tokens.record(usage.total_input_tokens, {**self._attributes, "gen_ai.token.type": "input"})
            inst.tokens.record(usage.output_tokens, {**self._attributes, "gen_ai.token.type": "output"})

    def fail(self, error: BaseException) -> None:
        if self._ended:
            return
        self._ended = True
        error_type = type(error).__qualname__
        span = self._span
        if span.is_recording():
            span.set_attribute("error.type", error_type)
            span.set_status(trace.Status(trace.StatusCode.ERROR, type(error).__name__))
        span.end()
        _instruments().duration.record(
            time.perf_counter() - self._start, {**self._attributes, "error.type": error_type}
        )


class _Unobserved:
    """What a model call gets while no OpenTelemetry SDK is configured: nothing to record."""

    __slots__ = ()

    observed: ClassVar[bool] = False

    def succeed(
        self, *, response_model: str | None, response_id: str | None, finish_reason: str | None, usage: Usage | None
    ) -> None:
        return None

    def fail(self, error: BaseException) -> None:
        return None


_UNOBSERVED = _Unobserved()

CallObserver = ModelCallSpan | _Unobserved
"""What `start_model_call` returns: call `succeed(...)` or `fail(error)` on it once."""


def start_model_call(operation: str, provider: str, request_model: str) -> CallObserver:
    """Start the span of one model call (`operation` is `chat` or `embeddings`). While no SDK is configured this is
    one check and returns a shared object that records nothing."""
    # Nothing is configured while no tracer or meter provider has been set, globally or through `configure` (a read
    # of the API's two globals; a provider named by an `OTEL_PYTHON_*_PROVIDER` variable counts as set).
    if not (_INSTRUMENTS and _INSTRUMENTS[0].explicit) and not _FROM_ENVIRONMENT:
        try:  # read as attributes (a `getattr` with a default costs more on every call)
            unset = _trace_api._TRACER_PROVIDER is None and _metrics_api._METER_PROVIDER is None
        except AttributeError:  # an API without these globals: taken as set
            unset = False
        if unset:
            return _UNOBSERVED
    return ModelCallSpan(operation, provider, request_model)
