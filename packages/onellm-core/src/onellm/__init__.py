"""onellm: one message model over Anthropic, OpenAI, Gemini and OpenAI-compatible servers, exact-decimal cost on every
call, agents and scripts as files, and tools that touch only what the host granted.

The public names are imported lazily: `import onellm` stays cheap, and each subsystem (providers, YAML, templating,
telemetry) loads on first use of one of its names.
"""

import importlib as _importlib
from typing import TYPE_CHECKING, Any

from onellm._version import __version__
from onellm.errors import (
    AuthError,
    BadDefinitionError,
    BadRequestError,
    BudgetExceededError,
    BudgetKind,
    CapabilityDeniedError,
    CapabilityMissingError,
    ContentFilterError,
    ContextOverflowError,
    InstanceLockedError,
    MalformedResponseError,
    ModelNotFoundError,
    OnellmError,
    OverloadedError,
    ProviderError,
    RateLimitError,
    RefusedError,
    RunCancelledError,
    Secret,
    SpendLimitReachedError,
    TemplateError,
    TransportError,
    UnsupportedParameterError,
)

if TYPE_CHECKING:
    # One line per lazily exported name, in the same order as _LAZY below.
    from onellm.capabilities import Capabilities as Capabilities
    from onellm.capabilities import EgressClient as EgressClient
    from onellm.catalog import Catalog as Catalog
    from onellm.catalog import CatalogLayer as CatalogLayer
    from onellm.catalog import CostEstimator as CostEstimator
    from onellm.catalog import LocalTokenizer as LocalTokenizer
    from onellm.catalog import RequestAdjuster as RequestAdjuster
    from onellm.catalog import RequestSettings as RequestSettings
    from onellm.catalog import ResolvedModel as ResolvedModel
    from onellm.catalog import SpendCap as SpendCap
    from onellm.catalog import SpendGuard as SpendGuard
    from onellm.catalog import TokenCount as TokenCount
    from onellm.clock import Clock as Clock
    from onellm.clock import FakeClock as FakeClock
    from onellm.clock import SystemClock as SystemClock
    from onellm.definitions import Decider as Decider
    from onellm.definitions import Definition as Definition
    from onellm.instances import FileInstanceStore as FileInstanceStore
    from onellm.instances import Instance as Instance
    from onellm.instances import InstanceStore as InstanceStore
    from onellm.instances import MemoryInstanceStore as MemoryInstanceStore
    from onellm.messages import Annotation as Annotation
    from onellm.messages import AssetPart as AssetPart
    from onellm.messages import CallWarning as CallWarning
    from onellm.messages import Cost as Cost
    from onellm.messages import CostLine as CostLine
    from onellm.messages import FileRefPart as FileRefPart
    from onellm.messages import HostedToolCallPart as HostedToolCallPart
    from onellm.messages import JsonPart as JsonPart
    from onellm.messages import Message as Message
    from onellm.messages import MessageSource as MessageSource
    from onellm.messages import ProviderPart as ProviderPart
    from onellm.messages import ReasoningPart as ReasoningPart
    from onellm.messages import RefusalPart as RefusalPart
    from onellm.messages import TextPart as TextPart
    from onellm.messages import Timestamp as Timestamp
    from onellm.messages import ToolCall as ToolCall
    from onellm.messages import Usage as Usage
    from onellm.providers import RetryPolicy as RetryPolicy
    from onellm.records import EventRecordSink as EventRecordSink
    from onellm.records import JsonlRecordSink as JsonlRecordSink
    from onellm.records import RecordSinks as RecordSinks
    from onellm.tools import Tool as Tool
    from onellm.tools import ToolContext as ToolContext
    from onellm.tools import ToolReferenceResolver as ToolReferenceResolver
    from onellm.tools import ToolResult as ToolResult
    from onellm.tools import tool as tool
    from onellm.tools.builtin import BuiltinOptions as BuiltinOptions
    from onellm.tools.builtin import builtin_tools as builtin_tools

# Public name -> module that defines it. Loaded on first attribute access.
_LAZY: dict[str, str] = {
    "Capabilities": "onellm.capabilities",
    "EgressClient": "onellm.capabilities",
    "Catalog": "onellm.catalog",
    "CatalogLayer": "onellm.catalog",
    "CostEstimator": "onellm.catalog",
    "LocalTokenizer": "onellm.catalog",
    "RequestAdjuster": "onellm.catalog",
    "RequestSettings": "onellm.catalog",
    "ResolvedModel": "onellm.catalog",
    "SpendCap": "onellm.catalog",
    "SpendGuard": "onellm.catalog",
    "TokenCount": "onellm.catalog",
    "Clock": "onellm.clock",
    "FakeClock": "onellm.clock",
    "SystemClock": "onellm.clock",
    "Decider": "onellm.definitions",
    "Definition": "onellm.definitions",
    "FileInstanceStore": "onellm.instances",
    "Instance": "onellm.instances",
    "InstanceStore": "onellm.instances",
    "MemoryInstanceStore": "onellm.instances",
    "RetryPolicy": "onellm.providers",
    "EventRecordSink": "onellm.records",
    "JsonlRecordSink": "onellm.records",
    "RecordSinks": "onellm.records",
    "CallWarning": "onellm.messages",
    "Cost": "onellm.messages",
    "CostLine": "onellm.messages",
    "Usage": "onellm.messages",
    "Annotation": "onellm.messages",
    "AssetPart": "onellm.messages",
    "FileRefPart": "onellm.messages",
    "HostedToolCallPart": "onellm.messages",
    "JsonPart": "onellm.messages",
    "Message": "onellm.messages",
    "MessageSource": "onellm.messages",
    "ProviderPart": "onellm.messages",
    "ReasoningPart": "onellm.messages",
    "RefusalPart": "onellm.messages",
    "TextPart": "onellm.messages",
    "Timestamp": "onellm.messages",
    "ToolCall": "onellm.messages",
    "Tool": "onellm.tools",
    "ToolContext": "onellm.tools",
    "ToolReferenceResolver": "onellm.tools",
    "ToolResult": "onellm.tools",
    "tool": "onellm.tools",
    "BuiltinOptions": "onellm.tools.builtin",
    "builtin_tools": "onellm.tools.builtin",
}

__all__ = [
    "AuthError",
    "BadDefinitionError",
    "BadRequestError",
    "BudgetExceededError",
    "BudgetKind",
    "CapabilityDeniedError",
    "CapabilityMissingError",
    "ContentFilterError",
    "ContextOverflowError",
    "InstanceLockedError",
    "MalformedResponseError",
    "ModelNotFoundError",
    "OnellmError",
    "OverloadedError",
    "ProviderError",
    "RateLimitError",
    "RefusedError",
    "RunCancelledError",
    "Secret",
    "SpendLimitReachedError",
    "TemplateError",
    "TransportError",
    "UnsupportedParameterError",
    "__version__",
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'onellm' has no attribute {name!r}")
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


del TYPE_CHECKING, Any
