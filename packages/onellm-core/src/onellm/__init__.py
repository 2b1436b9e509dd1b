"""onellm: one message model over Anthropic, OpenAI, Gemini and OpenAI-compatible servers, exact-decimal cost on every
call, agents and scripts as files, and tools that touch only what the host granted.

The public names are imported lazily: `import onellm` stays cheap, and each subsystem (providers, YAML, templating,
telemetry) loads on first use of one of its names. Machinery beneath the verbs (the request adjuster, the spend guard,
the cost estimator, the token counters, catalog layers, the tool reference resolver, the built-in tools' options) is
imported from its folder: `onellm.catalog`, `onellm.tools`, `onellm.tools.builtin`.
"""

import importlib as _importlib
import warnings as _warnings
from typing import TYPE_CHECKING, Any

from onellm._version import __version__
from onellm.errors import (
    AgentStateError,
    ArgumentError,
    AuthError,
    BadDefinitionError,
    BadRequestError,
    BudgetExceededError,
    BudgetKind,
    CapabilityDeniedError,
    CapabilityMissingError,
    ConfigurationError,
    ContentFilterError,
    ContextOverflowError,
    DeciderInputError,
    DeciderOutputError,
    HookBlockedError,
    InstanceLockedError,
    InstanceNotFoundError,
    InvalidInstanceIdError,
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
    UnwritableValueError,
)

if TYPE_CHECKING:
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
    from onellm.catalog import RequestSettings as RequestSettings
    from onellm.catalog import ResolvedModel as ResolvedModel
    from onellm.catalog import SpendCap as SpendCap
    from onellm.clock import Clock as Clock
    from onellm.clock import FakeClock as FakeClock
    from onellm.clock import SystemClock as SystemClock
    from onellm.deciders import ChoiceAnswer as ChoiceAnswer
    from onellm.deciders import DeciderLogic as DeciderLogic
    from onellm.deciders import DecisionResult as DecisionResult
    from onellm.deciders import NoulAnswer as NoulAnswer
    from onellm.deciders import ScoreAnswer as ScoreAnswer
    from onellm.deciders import decide as decide
    from onellm.deciders import decide_sync as decide_sync
    from onellm.deciders import decider_logic as decider_logic
    from onellm.definitions import Decider as Decider
    from onellm.definitions import Definition as Definition
    from onellm.instances import FileInstanceStore as FileInstanceStore
    from onellm.instances import Instance as Instance
    from onellm.instances import InstanceStore as InstanceStore
    from onellm.instances import MemoryInstanceStore as MemoryInstanceStore
    from onellm.media import ImageInput as ImageInput
    from onellm.media import MediaToolOptions as MediaToolOptions
    from onellm.media import media_tools as media_tools
    from onellm.messages import Annotation as Annotation
    from onellm.messages import AnnotationEvent as AnnotationEvent
    from onellm.messages import AssetPart as AssetPart
    from onellm.messages import CallWarning as CallWarning
    from onellm.messages import Cost as Cost
    from onellm.messages import CostLine as CostLine
    from onellm.messages import Done as Done
    from onellm.messages import FileRefPart as FileRefPart
    from onellm.messages import HostedToolCallArgumentsDelta as HostedToolCallArgumentsDelta
    from onellm.messages import HostedToolCallEnd as HostedToolCallEnd
    from onellm.messages import HostedToolCallPart as HostedToolCallPart
    from onellm.messages import HostedToolCallStart as HostedToolCallStart
    from onellm.messages import JsonPart as JsonPart
    from onellm.messages import Message as Message
    from onellm.messages import MessageSource as MessageSource
    from onellm.messages import MessageStart as MessageStart
    from onellm.messages import PartAdded as PartAdded
    from onellm.messages import ProviderPart as ProviderPart
    from onellm.messages import ReasoningDelta as ReasoningDelta
    from onellm.messages import ReasoningEnd as ReasoningEnd
    from onellm.messages import ReasoningPart as ReasoningPart
    from onellm.messages import RefusalDelta as RefusalDelta
    from onellm.messages import RefusalPart as RefusalPart
    from onellm.messages import StreamEvent as StreamEvent
    from onellm.messages import TextDelta as TextDelta
    from onellm.messages import TextPart as TextPart
    from onellm.messages import Timestamp as Timestamp
    from onellm.messages import ToolCall as ToolCall
    from onellm.messages import ToolCallArgumentsDelta as ToolCallArgumentsDelta
    from onellm.messages import ToolCallEnd as ToolCallEnd
    from onellm.messages import ToolCallStart as ToolCallStart
    from onellm.messages import Usage as Usage
    from onellm.messages import UsageEvent as UsageEvent
    from onellm.providers import CacheOptions as CacheOptions
    from onellm.providers import ReasoningOptions as ReasoningOptions
    from onellm.providers import RetryPolicy as RetryPolicy
    from onellm.providers import ToolChoice as ToolChoice
    from onellm.providers.anthropic import AnthropicProvider as AnthropicProvider
    from onellm.providers.deployments import AccessToken as AccessToken
    from onellm.providers.deployments import AwsCredentials as AwsCredentials
    from onellm.providers.deployments import AzureOpenAIEndpoint as AzureOpenAIEndpoint
    from onellm.providers.deployments import BedrockDeployment as BedrockDeployment
    from onellm.providers.deployments import GoogleBearerAuth as GoogleBearerAuth
    from onellm.providers.deployments import GoogleServiceAccount as GoogleServiceAccount
    from onellm.providers.deployments import VertexAnthropicDeployment as VertexAnthropicDeployment
    from onellm.providers.deployments import VertexGeminiEndpoint as VertexGeminiEndpoint
    from onellm.providers.gemini import GeminiProvider as GeminiProvider
    from onellm.providers.openai import OpenAICompatibleProvider as OpenAICompatibleProvider
    from onellm.providers.openai import OpenAIProvider as OpenAIProvider
    from onellm.records import EventRecordSink as EventRecordSink
    from onellm.records import JsonlRecordSink as JsonlRecordSink
    from onellm.records import RecordSinks as RecordSinks
    from onellm.runtime import AskResult as AskResult
    from onellm.runtime import Asset as Asset
    from onellm.runtime import ChatSession as ChatSession
    from onellm.runtime import Content as Content
    from onellm.runtime import ImageResult as ImageResult
    from onellm.runtime import MediaStream as MediaStream
    from onellm.runtime import ModerationResult as ModerationResult
    from onellm.runtime import ProviderRegistry as ProviderRegistry
    from onellm.runtime import RequestOptions as RequestOptions
    from onellm.runtime import ResultCache as ResultCache
    from onellm.runtime import Runtime as Runtime
    from onellm.runtime import ScriptResult as ScriptResult
    from onellm.runtime import SpeechResult as SpeechResult
    from onellm.runtime import StreamingAnswer as StreamingAnswer
    from onellm.runtime import TranscriptionResult as TranscriptionResult
    from onellm.runtime import ask as ask
    from onellm.runtime import ask_sync as ask_sync
    from onellm.runtime import chat as chat
    from onellm.runtime import current_runtime as current_runtime
    from onellm.runtime import embed as embed
    from onellm.runtime import embed_sync as embed_sync
    from onellm.runtime import generate as generate
    from onellm.runtime import generate_image as generate_image
    from onellm.runtime import generate_image_sync as generate_image_sync
    from onellm.runtime import generate_sync as generate_sync
    from onellm.runtime import moderate as moderate
    from onellm.runtime import moderate_sync as moderate_sync
    from onellm.runtime import run_script as run_script
    from onellm.runtime import run_script_sync as run_script_sync
    from onellm.runtime import set_default_runtime as set_default_runtime
    from onellm.runtime import speak as speak
    from onellm.runtime import speak_sync as speak_sync
    from onellm.runtime import stream as stream
    from onellm.runtime import stream_image as stream_image
    from onellm.runtime import stream_speech as stream_speech
    from onellm.runtime import stream_text as stream_text
    from onellm.runtime import stream_text_sync as stream_text_sync
    from onellm.runtime import stream_transcription as stream_transcription
    from onellm.runtime import transcribe as transcribe
    from onellm.runtime import transcribe_sync as transcribe_sync
    from onellm.runtime import use_runtime as use_runtime
    from onellm.tools import Tool as Tool
    from onellm.tools import ToolContext as ToolContext
    from onellm.tools import ToolResult as ToolResult
    from onellm.tools import tool as tool
    from onellm.tools.builtin import builtin_tools as builtin_tools

# Public name -> module that defines it. Loaded on first attribute access.
_LAZY: dict[str, str] = {
    "AccessToken": "onellm.providers.deployments",
    "AgentResult": "onellm.agents",
    "AgentRun": "onellm.agents",
    "Annotation": "onellm.messages",
    "AnnotationEvent": "onellm.messages",
    "AnthropicProvider": "onellm.providers.anthropic",
    "AskResult": "onellm.runtime",
    "Asset": "onellm.runtime",
    "AssetPart": "onellm.messages",
    "AwsCredentials": "onellm.providers.deployments",
    "AzureOpenAIEndpoint": "onellm.providers.deployments",
    "BedrockDeployment": "onellm.providers.deployments",
    "CacheOptions": "onellm.providers",
    "CallWarning": "onellm.messages",
    "Capabilities": "onellm.capabilities",
    "Catalog": "onellm.catalog",
    "ChatSession": "onellm.runtime",
    "ChoiceAnswer": "onellm.deciders",
    "Clock": "onellm.clock",
    "Content": "onellm.runtime",
    "Cost": "onellm.messages",
    "CostLine": "onellm.messages",
    "Decider": "onellm.definitions",
    "DeciderLogic": "onellm.deciders",
    "DecisionResult": "onellm.deciders",
    "Definition": "onellm.definitions",
    "Done": "onellm.messages",
    "EgressClient": "onellm.capabilities",
    "EventRecordSink": "onellm.records",
    "FakeClock": "onellm.clock",
    "FileInstanceStore": "onellm.instances",
    "FileRefPart": "onellm.messages",
    "GeminiProvider": "onellm.providers.gemini",
    "GoogleBearerAuth": "onellm.providers.deployments",
    "GoogleServiceAccount": "onellm.providers.deployments",
    "HostedToolCallArgumentsDelta": "onellm.messages",
    "HostedToolCallEnd": "onellm.messages",
    "HostedToolCallPart": "onellm.messages",
    "HostedToolCallStart": "onellm.messages",
    "ImageInput": "onellm.media",
    "ImageResult": "onellm.runtime",
    "Instance": "onellm.instances",
    "InstanceStore": "onellm.instances",
    "JsonPart": "onellm.messages",
    "JsonlRecordSink": "onellm.records",
    "MediaStream": "onellm.runtime",
    "MediaToolOptions": "onellm.media",
    "MemoryInstanceStore": "onellm.instances",
    "Message": "onellm.messages",
    "MessageSource": "onellm.messages",
    "MessageStart": "onellm.messages",
    "ModerationResult": "onellm.runtime",
    "NoulAnswer": "onellm.deciders",
    "OpenAICompatibleProvider": "onellm.providers.openai",
    "OpenAIProvider": "onellm.providers.openai",
    "PartAdded": "onellm.messages",
    "ProviderPart": "onellm.messages",
    "ProviderRegistry": "onellm.runtime",
    "ReasoningDelta": "onellm.messages",
    "ReasoningEnd": "onellm.messages",
    "ReasoningOptions": "onellm.providers",
    "ReasoningPart": "onellm.messages",
    "RecordSinks": "onellm.records",
    "RefusalDelta": "onellm.messages",
    "RefusalPart": "onellm.messages",
    "RequestOptions": "onellm.runtime",
    "RequestSettings": "onellm.catalog",
    "ResolvedModel": "onellm.catalog",
    "ResultCache": "onellm.runtime",
    "RetryPolicy": "onellm.providers",
    "Runtime": "onellm.runtime",
    "ScoreAnswer": "onellm.deciders",
    "ScriptResult": "onellm.runtime",
    "SpeechResult": "onellm.runtime",
    "SpendCap": "onellm.catalog",
    "StopReason": "onellm.agents",
    "StreamEvent": "onellm.messages",
    "StreamingAnswer": "onellm.runtime",
    "SystemClock": "onellm.clock",
    "TextDelta": "onellm.messages",
    "TextPart": "onellm.messages",
    "Timestamp": "onellm.messages",
    "Tool": "onellm.tools",
    "ToolCall": "onellm.messages",
    "ToolCallArgumentsDelta": "onellm.messages",
    "ToolCallEnd": "onellm.messages",
    "ToolCallStart": "onellm.messages",
    "ToolChoice": "onellm.providers",
    "ToolContext": "onellm.tools",
    "ToolResult": "onellm.tools",
    "TranscriptionResult": "onellm.runtime",
    "Usage": "onellm.messages",
    "UsageEvent": "onellm.messages",
    "VertexAnthropicDeployment": "onellm.providers.deployments",
    "VertexGeminiEndpoint": "onellm.providers.deployments",
    "ask": "onellm.runtime",
    "ask_sync": "onellm.runtime",
    "builtin_tools": "onellm.tools.builtin",
    "chat": "onellm.runtime",
    "current_runtime": "onellm.runtime",
    "decide": "onellm.deciders",
    "decide_sync": "onellm.deciders",
    "decider_logic": "onellm.deciders",
    "embed": "onellm.runtime",
    "embed_sync": "onellm.runtime",
    "generate": "onellm.runtime",
    "generate_image": "onellm.runtime",
    "generate_image_sync": "onellm.runtime",
    "generate_sync": "onellm.runtime",
    "media_tools": "onellm.media",
    "moderate": "onellm.runtime",
    "moderate_sync": "onellm.runtime",
    "run_agent": "onellm.agents",
    "run_agent_sync": "onellm.agents",
    "run_script": "onellm.runtime",
    "run_script_sync": "onellm.runtime",
    "set_default_runtime": "onellm.runtime",
    "speak": "onellm.runtime",
    "speak_sync": "onellm.runtime",
    "start_agent": "onellm.agents",
    "start_agent_sync": "onellm.agents",
    "stream": "onellm.runtime",
    "stream_image": "onellm.runtime",
    "stream_speech": "onellm.runtime",
    "stream_text": "onellm.runtime",
    "stream_text_sync": "onellm.runtime",
    "stream_transcription": "onellm.runtime",
    "tool": "onellm.tools",
    "transcribe": "onellm.runtime",
    "transcribe_sync": "onellm.runtime",
    "use_runtime": "onellm.runtime",
}

# Names that left the top level in 0.1.x -> where they live now. They still resolve, with a DeprecationWarning,
# until 0.2; they are neither in `__all__` nor in `dir(onellm)`.
_MOVED: dict[str, str] = {
    "BuiltinOptions": "onellm.tools.builtin",
    "CatalogLayer": "onellm.catalog",
    "CostEstimator": "onellm.catalog",
    "LocalTokenizer": "onellm.catalog",
    "RequestAdjuster": "onellm.catalog",
    "SpendGuard": "onellm.catalog",
    "TokenCount": "onellm.catalog",
    "ToolReferenceResolver": "onellm.tools",
}

__all__ = [
    "AccessToken",
    "AgentResult",
    "AgentRun",
    "AgentStateError",
    "Annotation",
    "AnnotationEvent",
    "AnthropicProvider",
    "ArgumentError",
    "AskResult",
    "Asset",
    "AssetPart",
    "AuthError",
    "AwsCredentials",
    "AzureOpenAIEndpoint",
    "BadDefinitionError",
    "BadRequestError",
    "BedrockDeployment",
    "BudgetExceededError",
    "BudgetKind",
    "CacheOptions",
    "CallWarning",
    "Capabilities",
    "CapabilityDeniedError",
    "CapabilityMissingError",
    "Catalog",
    "ChatSession",
    "ChoiceAnswer",
    "Clock",
    "ConfigurationError",
    "Content",
    "ContentFilterError",
    "ContextOverflowError",
    "Cost",
    "CostLine",
    "Decider",
    "DeciderInputError",
    "DeciderLogic",
    "DeciderOutputError",
    "DecisionResult",
    "Definition",
    "Done",
    "EgressClient",
    "EventRecordSink",
    "FakeClock",
    "FileInstanceStore",
    "FileRefPart",
    "GeminiProvider",
    "GoogleBearerAuth",
    "GoogleServiceAccount",
    "HookBlockedError",
    "HostedToolCallArgumentsDelta",
    "HostedToolCallEnd",
    "HostedToolCallPart",
    "HostedToolCallStart",
    "ImageInput",
    "ImageResult",
    "Instance",
    "InstanceLockedError",
    "InstanceNotFoundError",
    "InstanceStore",
    "InvalidInstanceIdError",
    "JsonPart",
    "JsonlRecordSink",
    "MalformedResponseError",
    "MediaStream",
    "MediaToolOptions",
    "MemoryInstanceStore",
    "Message",
    "MessageSource",
    "MessageStart",
    "ModelNotFoundError",
    "ModerationResult",
    "NoulAnswer",
    "OnellmError",
    "OpenAICompatibleProvider",
    "OpenAIProvider",
    "OverloadedError",
    "PartAdded",
    "ProviderError",
    "ProviderPart",
    "ProviderRegistry",
    "RateLimitError",
    "ReasoningDelta",
    "ReasoningEnd",
    "ReasoningOptions",
    "ReasoningPart",
    "RecordSinks",
    "RefusalDelta",
    "RefusalPart",
    "RefusedError",
    "RequestOptions",
    "RequestSettings",
    "ResolvedModel",
    "ResultCache",
    "RetryPolicy",
    "RunCancelledError",
    "Runtime",
    "ScoreAnswer",
    "ScriptResult",
    "Secret",
    "SpeechResult",
    "SpendCap",
    "SpendLimitReachedError",
    "StopReason",
    "StorageError",
    "StreamEvent",
    "StreamingAnswer",
    "SystemClock",
    "TemplateError",
    "TextDelta",
    "TextPart",
    "Timestamp",
    "Tool",
    "ToolCall",
    "ToolCallArgumentsDelta",
    "ToolCallEnd",
    "ToolCallStart",
    "ToolChoice",
    "ToolContext",
    "ToolResult",
    "TranscriptionResult",
    "TransportError",
    "UnsupportedParameterError",
    "UnwritableValueError",
    "Usage",
    "UsageEvent",
    "VertexAnthropicDeployment",
    "VertexGeminiEndpoint",
    "__version__",
    "ask",
    "ask_sync",
    "builtin_tools",
    "chat",
    "current_runtime",
    "decide",
    "decide_sync",
    "decider_logic",
    "embed",
    "embed_sync",
    "generate",
    "generate_image",
    "generate_image_sync",
    "generate_sync",
    "media_tools",
    "moderate",
    "moderate_sync",
    "run_agent",
    "run_agent_sync",
    "run_script",
    "run_script_sync",
    "set_default_runtime",
    "speak",
    "speak_sync",
    "start_agent",
    "start_agent_sync",
    "stream",
    "stream_image",
    "stream_speech",
    "stream_text",
    "stream_text_sync",
    "stream_transcription",
    "tool",
    "transcribe",
    "transcribe_sync",
    "use_runtime",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        moved = _MOVED.get(name)
        if moved is None:
            raise AttributeError(f"module 'onellm' has no attribute {name!r}")
        _warnings.warn(f"onellm.{name} moved to {moved}.{name}; import it from there", DeprecationWarning, stacklevel=2)
        return getattr(_importlib.import_module(moved), name)
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


del TYPE_CHECKING, Any
