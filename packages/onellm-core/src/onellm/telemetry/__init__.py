"""OpenTelemetry for model calls, through `opentelemetry-api` only: one client span per call named
`{operation} {model}` with the GenAI semantic-convention attributes, and two histograms, `gen_ai.client.token.usage`
and `gen_ai.client.operation.duration`. The tracer and the meter are named `onellm`. Nothing about prompts, answers or
tool arguments is recorded. Without an SDK configured a model call costs one check.
"""

from __future__ import annotations

from onellm._public import publish as _publish
from onellm.telemetry._genai import (
    DURATION_METRIC,
    INSTRUMENTATION_NAME,
    TOKEN_USAGE_METRIC,
    CallObserver,
    ModelCallSpan,
    configure,
    provider_system_name,
    start_model_call,
)

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

_publish("onellm.telemetry", ModelCallSpan)
