"""onellm: one message model over Anthropic, OpenAI, Gemini and OpenAI-compatible servers, exact-decimal cost on every
call, agents and scripts as files, and tools that touch only what the host granted.

The public names are imported lazily: `import onellm` stays cheap, and each subsystem (providers, YAML, templating,
telemetry) loads on first use of one of its names.
"""

import importlib as _importlib
from typing import TYPE_CHECKING, Any

from onellm._version import __version__
from onellm.errors import (
    AgentStateError,
    AuthError,
    BadDefinitionError,
    BadRequestError,
    BudgetExceededError,
    BudgetKind,
    CapabilityDeniedError,
    CapabilityMissingError,
    ContentFilterError,
    ContextOverflowError,
    HookBlockedError,
    InstanceLockedError,
    InstanceNotFoundError,
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
    StorageError,
    TemplateError,
    TransportError,
    UnsupportedParameterError,
)

if TYPE_CHECKING:
    # One line per lazily exported name, in the same order as _LAZY below.
    from onellm.agents import AgentResult as AgentResult
    from onellm.agents import AgentRun as AgentRun
    from onellm.agents import StopReason as StopReason
    from onellm.agents import run_agent as run_agent
    from onellm.agents import run_agent_sync as run_agent_sync
    from onellm.agents import start_agent as start_agent
    from onellm.agents import start_agent_sync as start_agent_sync
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
    from onellm.providers.anthropic import AnthropicProvider as AnthropicProvider
    from onellm.providers.gemini import GeminiProvider as GeminiProvider
    from onellm.providers.openai import OpenAICompatibleProvider as OpenAICompatibleProvider
    from onellm.providers.openai import OpenAIProvider as OpenAIProvider
    from onellm.records import EventRecordSink as EventRecordSink
    from onellm.records import JsonlRecordSink as JsonlRecordSink
    from onellm.records import RecordSinks as RecordSinks
    from onellm.runtime import AskResult as AskResult
    from onellm.runtime import Asset as Asset
    from onellm.runtime import ChatSession as ChatSession
    from onellm.runtime import ProviderRegistry as ProviderRegistry
    from onellm.runtime import ResultCache as ResultCache
    from onellm.runtime import Runtime as Runtime
    from onellm.runtime import ScriptResult as ScriptResult
    from onellm.runtime import StreamingAnswer as StreamingAnswer
    from onellm.runtime import ask as ask
    from onellm.runtime import ask_sync as ask_sync
    from onellm.runtime import chat as chat
    from onellm.runtime import current_runtime as current_runtime
    from onellm.runtime import embed as embed
    from onellm.runtime import embed_sync as embed_sync
    from onellm.runtime import generate as generate
    from onellm.runtime import generate_sync as generate_sync
    from onellm.runtime import run_script as run_script
    from onellm.runtime import run_script_sync as run_script_sync
    from onellm.runtime import set_default_runtime as set_default_runtime
    from onellm.runtime import stream as stream
    from onellm.runtime import stream_text as stream_text
    from onellm.runtime import stream_text_sync as stream_text_sync
    from onellm.runtime import use_runtime as use_runtime
    from onellm.tools import Tool as Tool
    from onellm.tools import ToolContext as ToolContext
    from onellm.tools import ToolReferenceResolver as ToolReferenceResolver
    from onellm.tools import ToolResult as ToolResult
    from onellm.tools import tool as tool
    from onellm.tools.builtin import BuiltinOptions as BuiltinOptions
    from onellm.tools.builtin import builtin_tools as builtin_tools

# Public name -> module that defines it. Loaded on first attribute access.
_LAZY: dict[str, str] = {
    "AgentResult": "onellm.agents",
    "AgentRun": "onellm.agents",
    "StopReason": "onellm.agents",
    "run_agent": "onellm.agents",
    "run_agent_sync": "onellm.agents",
    "start_agent": "onellm.agents",
    "start_agent_sync": "onellm.agents",
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
    "AnthropicProvider": "onellm.providers.anthropic",
    "GeminiProvider": "onellm.providers.gemini",
    "OpenAICompatibleProvider": "onellm.providers.openai",
    "OpenAIProvider": "onellm.providers.openai",
    "EventRecordSink": "onellm.records",
    "JsonlRecordSink": "onellm.records",
    "RecordSinks": "onellm.records",
    "AskResult": "onellm.runtime",
    "Asset": "onellm.runtime",
    "ChatSession": "onellm.runtime",
    "ProviderRegistry": "onellm.runtime",
    "ResultCache": "onellm.runtime",
    "Runtime": "onellm.runtime",
    "ScriptResult": "onellm.runtime",
    "StreamingAnswer": "onellm.runtime",
    "ask": "onellm.runtime",
    "ask_sync": "onellm.runtime",
    "chat": "onellm.runtime",
    "current_runtime": "onellm.runtime",
    "embed": "onellm.runtime",
    "embed_sync": "onellm.runtime",
    "generate": "onellm.runtime",
    "generate_sync": "onellm.runtime",
    "run_script": "onellm.runtime",
    "run_script_sync": "onellm.runtime",
    "set_default_runtime": "onellm.runtime",
    "stream": "onellm.runtime",
    "stream_text": "onellm.runtime",
    "stream_text_sync": "onellm.runtime",
    "use_runtime": "onellm.runtime",
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
    "AgentStateError",
    "AuthError",
    "BadDefinitionError",
    "BadRequestError",
    "BudgetExceededError",
    "BudgetKind",
    "CapabilityDeniedError",
    "CapabilityMissingError",
    "ContentFilterError",
    "ContextOverflowError",
    "HookBlockedError",
    "InstanceLockedError",
    "InstanceNotFoundError",
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
    "StorageError",
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
